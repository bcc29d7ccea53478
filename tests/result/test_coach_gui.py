"""The app's side of the coach and of sharing: the words on the run page, the best/last adapter
choice in the Try it and export window, and the Upload button (a fake CLI; nothing is uploaded)."""
from __future__ import annotations

import json
import shutil
import stat
import sys
from pathlib import Path

import pytest

from .conftest import fake_run


def overfit_files(run: Path, best_kept: bool = True) -> None:
    rows = [{"step": 0, "eval_loss": 2.0}] + [{"step": s, "loss": 1.0} for s in range(1, 11)]
    rows += [{"step": s, "eval_loss": v} for s, v in ((2, 1.5), (4, 1.2), (6, 1.3), (8, 1.5), (10, 1.6))]
    (run / "progress.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ev = {"before": {"loss": 2.0}, "after": {"loss": 1.6},
          "best": {"step": 4, "loss": 1.2, "adapter": "adapter-best" if best_kept else "adapter"}}
    (run / "eval.json").write_text(json.dumps(ev))
    (run / "status.json").write_text(json.dumps({"state": "done", "step": 10, "total_steps": 10}))
    if best_kept:
        shutil.copytree(run / "adapter", run / "adapter-best")


def test_run_page_says_it_started_to_memorise(qt_clean, tmp_path):
    from dragonfarm_gui.widgets.run_results import RunResults
    from trainer.run.reader import Run

    run = fake_run(tmp_path)
    overfit_files(run)
    results = RunResults()
    qt_clean.addWidget(results)
    results.show_run(Run(run))
    assert results.verdict["verdict"] == "overfitting"
    assert results.verdict_word.text() == "It started to memorise"
    assert results.verdict_word.property("tone") == "alert"  # the stylesheet colours an overfitting verdict
    assert "rose for the last 3 checks" in results.verdict_text.text()
    assert "best point was step 4, which Try it and export use" in results.verdict_text.text()
    assert results.verdict_title.text() == "<b>Did it learn?</b>"
    # while training: "How is it going?" and still improving
    (run / "eval.json").write_text(json.dumps({"before": {"loss": 2.0}, "after": None}))
    (run / "progress.jsonl").write_text('{"step": 0, "eval_loss": 2.0}\n{"step": 2, "eval_loss": 1.5}\n')
    results.show_run(Run(run))
    assert results.verdict_title.text() == "<b>How is it going?</b>" and results.verdict_word.text() == "Still improving"


def test_tools_window_choice_of_best_or_last_adapter(qt_clean, tmp_path, monkeypatch):
    from dragonfarm_gui.process.chat_process import ChatProcess
    from dragonfarm_gui.widgets.run_tools import RunToolsWindow

    launched = []
    monkeypatch.setattr(ChatProcess, "_launch", lambda self, program, args, env=None: launched.append(args))
    run = fake_run(tmp_path)
    overfit_files(run)
    window = RunToolsWindow(run)
    qt_clean.addWidget(window)
    assert window.adapter.count() == 2 and window.adapter.isEnabled()
    assert window.adapter.itemText(0) == "the best point (step 4, held-out loss 1.200)"
    assert window.adapter.itemText(1) == "the last step (10)"
    assert "--last" not in window.actions.args_for("merge")
    window.try_page.process.start(run)   # what the first message does
    window.try_page.send("hello")
    assert "--last" not in launched[-1]
    window.adapter.setCurrentIndex(1)
    assert window.actions.args_for("merge") == ["merge", str(run), "--last"]
    assert window.actions.args_for("gguf")[-1] == "--last" and window.try_page.use_last
    window.try_page.owner.clear()
    window.try_page.send("hello again")
    assert launched[-1][-1] == "--last"
    window.shutdown()


def test_tools_window_without_a_separate_best_adapter(qt_clean, tmp_path):
    from dragonfarm_gui.widgets.run_tools import RunToolsWindow

    run = fake_run(tmp_path)
    overfit_files(run, best_kept=False)
    window = RunToolsWindow(run)
    qt_clean.addWidget(window)
    assert window.adapter.count() == 1 and not window.adapter.isEnabled()
    assert "also the best point" in window.adapter.itemText(0)
    window.shutdown()


@pytest.fixture
def fake_push_cli(tmp_path, monkeypatch) -> Path:
    """A stand-in CLI: prints its arguments and whether HF_TOKEN reached it, like `push` would."""
    script = tmp_path / "fake-push.py"
    script.write_text(
        "import os, sys\n"
        "args = sys.argv[3:]\n"
        "print('ARGS ' + ' '.join(args[2:]), flush=True)\n"
        "print('TOKEN ' + ('yes' if os.environ.get('HF_TOKEN') == 'hf_abcdefghijklmnop' else 'no'), flush=True)\n"
        "print('Uploaded to https://huggingface.co/ada/' + args[args.index('--repo') + 1], flush=True)\n")
    wrapper = tmp_path / "fake-push"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{script}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("DRAGONFARM_PYTHON", str(wrapper))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    return wrapper


def test_upload_button_passes_the_token_only_in_the_childs_environment(qt_clean, tmp_path, fake_push_cli):
    import os

    from dragonfarm_gui.widgets.result_actions import ResultActions

    actions = ResultActions(fake_run(tmp_path))
    qt_clean.addWidget(actions)
    actions.get_token = lambda: None
    assert not actions.start("push")
    assert "Type a name" in actions.result.text() and actions.result.property("tone") == "bad"
    actions.repo.setText("my-helper")
    assert not actions.start("push")
    assert "token with write access" in actions.result.text() and "Settings" in actions.result.text()
    assert not actions.process.is_running()

    actions.get_token = lambda: "hf_abcdefghijklmnop"
    actions.upload_what.setCurrentIndex(1)   # the merged model
    with qt_clean.waitSignal(actions.process.ended, timeout=60_000):
        assert actions.start("push")
    lines = actions.process.lines
    assert "ARGS --repo my-helper --private --merged --no-samples" in lines
    assert "TOKEN yes" in lines and "HF_TOKEN" not in os.environ
    assert actions.result.text() == "Uploaded to https://huggingface.co/ada/my-helper"
    assert actions.result.property("tone") == ""
    actions.shutdown()
