"""The Try page and the result actions (pytest-qt, offscreen)."""
from __future__ import annotations

import stat
import sys
import zipfile
from pathlib import Path

import pytest

from .conftest import fake_run

WAIT = 15_000


def _page(qtbot, run_dir):
    from dragonfarm_gui.widgets.try_page import TryPage

    widget = TryPage(run_dir)
    qtbot.addWidget(widget)
    return widget


@pytest.fixture
def page(qt_clean, tmp_path):
    """The Try page on a run folder that was never trained (for the fake model)."""
    widget = _page(qt_clean, fake_run(tmp_path))
    yield widget
    widget.shutdown()


@pytest.fixture
def tiny_page(qt_clean, trained_tiny_run):
    widget = _page(qt_clean, trained_tiny_run)
    yield widget
    widget.shutdown()


def _send(qtbot, page, text: str, ended: int = 1, timeout: int = WAIT) -> list:
    events = []
    page.process.reply_ended.connect(lambda *a: events.append(a))
    page.input.setPlainText(text)
    qtbot.mouseClick(page.send_button, __import__("PySide6.QtCore", fromlist=["Qt"]).Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(events) >= ended, timeout=timeout)
    return events


def test_streams_a_reply_from_a_fake_model(page, qt_clean, fake_chat_python):
    tokens = []
    page.process.token.connect(lambda rid, t: tokens.append(t))
    assert "Did it learn?" in page.header.text()
    events = _send(qt_clean, page, "hello there")
    assert tokens == ["finetuned says:", " hello", " there"]
    assert events[0][1:] == ("done", "finetuned says: hello there")
    pane = page.panes["finetuned"]
    assert pane.view.toPlainText() == "You: hello there\nFine-tuned: finetuned says: hello there"
    assert pane.history[-1] == {"role": "assistant", "content": "finetuned says: hello there"}
    assert page.send_button.isEnabled() and not page.stop_button.isEnabled()
    assert page.state.text() == "Ready."


def test_the_sample_questions_are_one_click_away(qt_clean, tmp_path, fake_chat_python):
    import json

    run = fake_run(tmp_path)
    empty = _page(qt_clean, run)
    assert empty.questions_button.isHidden()  # no samples: no button
    empty.shutdown()
    (run / "samples.json").write_text(json.dumps({"samples": [
        {"messages": [], "prompt": "Can I pay by invoice?", "reference": None, "yours": True},
        {"messages": [], "prompt": "Where is my order?", "reference": "It ships tomorrow."},
        {"messages": [], "prompt": "Where is my order?", "reference": "Tomorrow."},
        {"messages": [], "prompt": "Fish & chips?", "reference": "Yes."}]}))
    page = _page(qt_clean, run)
    assert not page.questions_button.isHidden()
    page._fill_questions()
    actions = page.questions_button.menu().actions()
    assert [a.text() for a in actions] == ["Can I pay by invoice?", "Where is my order?", "Fish && chips?"]
    actions[0].trigger()
    assert page.input.toPlainText() == "Can I pay by invoice?"
    events = _send(qt_clean, page, page.input.toPlainText())
    assert events and "Can I pay by invoice?" in page.panes["finetuned"].view.toPlainText()
    page.shutdown()


def test_side_by_side_sends_the_same_prompt_to_both(page, qt_clean, fake_chat_python):
    page.compare.setChecked(True)
    page.temperature.setValue(0.7)
    events = _send(qt_clean, page, "hi", ended=2)
    assert sorted(e[2] for e in events) == ["base says: hi", "finetuned says: hi"]
    assert page.panes["base"].isVisibleTo(page)
    assert page.panes["base"].view.toPlainText().endswith("Base: base says: hi")
    assert page.panes["finetuned"].view.toPlainText().endswith("Fine-tuned: finetuned says: hi")


def test_stop_ends_a_long_reply_and_errors_are_shown(page, qt_clean, fake_chat_python):
    tokens = []
    page.process.token.connect(lambda rid, t: tokens.append(t))
    events = []
    page.process.reply_ended.connect(lambda *a: events.append(a))
    page.send("long")
    qt_clean.waitUntil(lambda: len(tokens) >= 3, timeout=WAIT)
    assert page.stop_button.isEnabled() and not page.send_button.isEnabled()
    page.stop()
    qt_clean.waitUntil(lambda: bool(events), timeout=WAIT)
    assert events[0][1] == "stopped" and len(tokens) < 500
    assert page.panes["finetuned"].view.toPlainText().endswith("(stopped)")
    assert page.state.text() == "Stopped." and page.send_button.isEnabled()
    events.clear()
    page.send("fail")
    qt_clean.waitUntil(lambda: bool(events), timeout=WAIT)
    assert "(no reply: The fake model cannot answer that.)" in page.panes["finetuned"].view.toPlainText()


def test_new_conversation_mid_reply_forgets_it(page, qt_clean, fake_chat_python):
    tokens, events = [], []
    page.process.token.connect(lambda rid, t: tokens.append(t))
    page.process.reply_ended.connect(lambda *a: events.append(a))
    page.send("long")
    qt_clean.waitUntil(lambda: len(tokens) >= 2, timeout=WAIT)
    page.clear()
    qt_clean.waitUntil(lambda: bool(events), timeout=WAIT)
    pane = page.panes["finetuned"]
    assert pane.view.toPlainText() == "" and pane.history == [] and not page.busy()
    _send(qt_clean, page, "fresh start")
    assert pane.history == [{"role": "user", "content": "fresh start"},
                            {"role": "assistant", "content": "finetuned says: fresh start"}]


def test_a_model_process_that_dies_is_reported_and_restarted(page, qt_clean, fake_chat_python):
    failed = []
    page.process.failed.connect(failed.append)
    page.send("crash")
    qt_clean.waitUntil(lambda: bool(failed), timeout=WAIT)
    assert failed == ["The model process stopped unexpectedly. Its last words: Segmentation fault (pretend)"]
    assert page.state.text() == failed[0] and page.send_button.isEnabled()
    assert "(no reply: the model process ended)" in page.panes["finetuned"].view.toPlainText()
    events = _send(qt_clean, page, "again")  # the next message starts a new process
    assert events[-1][1:] == ("done", "finetuned says: again")


def test_a_process_that_cannot_start_is_reported(page, qt_clean, tmp_path, monkeypatch):
    monkeypatch.setenv("DRAGONFARM_PYTHON", str(tmp_path / "no-such-python"))
    page.send("hello")
    qt_clean.waitUntil(lambda: page.send_button.isEnabled(), timeout=WAIT)
    assert page.state.text().startswith("Could not start the model process")


@pytest.mark.timeout(300)
def test_streams_from_the_tiny_model_and_stop_works(tiny_page, qt_clean, trained_tiny_run, monkeypatch):
    from trainer.engine.evaluation import generate_reply
    from trainer.run.decoding import Decoding
    from trainer.results.generate import load_for_run

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    tokens = []
    tiny_page.process.token.connect(lambda rid, t: tokens.append(t))
    tiny_page.length.setValue(12)
    events = _send(qt_clean, tiny_page, "What is 3 plus 4?", timeout=120_000)
    model, tok, _ = load_for_run(trained_tiny_run, device="cpu")
    expected = generate_reply(model, tok, [{"role": "user", "content": "What is 3 plus 4?"}], "cpu", Decoding(max_new_tokens=12))
    assert events[0][1:] == ("done", expected) and tokens and "".join(tokens).strip() == expected
    # the base model (random weights) writes on and on: Stop ends it
    tiny_page.compare.setChecked(True)
    tiny_page.length.setValue(2000)
    tiny_page.temperature.setValue(1.0)
    events.clear()
    tokens.clear()
    tiny_page.send("Tell me a story")
    qt_clean.waitUntil(lambda: len(tokens) >= 2, timeout=60_000)
    tiny_page.stop()
    qt_clean.waitUntil(lambda: len(events) == 2, timeout=60_000)
    assert events[0][1] == "stopped" and events[1][1] == "stopped" and len(tokens) < 1500


# ----- Merge / Export / Share and File > Import run ------------------------------------

@pytest.fixture
def fake_cli(tmp_path, monkeypatch) -> Path:
    """DRAGONFARM_PYTHON for a stand-in CLI that prints what `export --format ollama` prints."""
    script = tmp_path / "fake-cli.py"
    script.write_text(
        "import sys\n"
        "args = sys.argv[3:]\n"
        "if args[0] == 'export':\n"
        "    print('Check passed: the merged model gave exactly the same replies.', flush=True)\n"
        "    print('To use it in Ollama, run:\\n    ollama create my-run -f /runs/my-run/Modelfile', flush=True)\n"
        "else:\n"
        "    print('dragonfarm: The run has no trained adapter to merge yet.', file=sys.stderr)\n"
        "    print('Train it first.', file=sys.stderr)\n"
        "    sys.exit(2)\n")
    wrapper = tmp_path / "fake-cli"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{script}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("DRAGONFARM_PYTHON", str(wrapper))
    return wrapper


def _finish(qtbot, actions, key: str) -> None:
    with qtbot.waitSignal(actions.process.ended, timeout=60_000):
        assert actions.start(key)


def test_result_actions_show_the_ollama_command_and_errors(qt_clean, tmp_path, fake_cli):
    from dragonfarm_gui.widgets.result_actions import ResultActions

    actions = ResultActions(fake_run(tmp_path))
    qt_clean.addWidget(actions)
    assert actions.args_for("gguf") == ["export", str(tmp_path / "shared-run"), "--format", "gguf", "--quant", "f16"]
    _finish(qt_clean, actions, "ollama")
    assert actions.command.text() == "ollama create my-run -f /runs/my-run/Modelfile"
    assert actions.command_box.isVisibleTo(actions)
    assert actions.result.text() == "Check passed: the merged model gave exactly the same replies."
    _finish(qt_clean, actions, "merge")
    assert actions.result.text() == "Merging did not work: The run has no trained adapter to merge yet. Train it first."
    assert all(b.isEnabled() for b in actions.buttons.values())
    actions.shutdown()


def test_share_button_packs_the_run(qt_clean, tmp_path):
    from dragonfarm_gui.widgets.result_actions import ResultActions

    actions = ResultActions(fake_run(tmp_path))
    qt_clean.addWidget(actions)
    target = tmp_path / "out" / "shared.zip"
    target.parent.mkdir()
    actions.choose_pack_path = lambda: str(target)
    actions.with_data.setChecked(True)
    _finish(qt_clean, actions, "pack")
    assert actions.result.text().startswith(f"Packed into {target}")
    assert "shared-run/data/train.jsonl" in zipfile.ZipFile(target).namelist()
    actions.shutdown()


def test_import_run_in_a_worker_with_cancel(qt_clean, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    from dragonfarm_gui.widgets.import_run import RunImport
    from trainer.run.share import pack

    qtbot = qt_clean
    archive = pack(fake_run(tmp_path), tmp_path / "shared.zip")
    runs = tmp_path / "runs"
    shown, got = [], []
    monkeypatch.setattr(QMessageBox, "information", lambda _p, _t, text: shown.append(("info", text)))
    monkeypatch.setattr(QMessageBox, "warning", lambda _p, _t, text: shown.append(("warning", text)))

    def run(path) -> RunImport:
        importer = RunImport(None, runs)
        importer.imported.connect(got.append)
        with qtbot.waitSignal(importer.ended, timeout=10000):
            importer.start(path)
        assert importer.dialog is None and not importer.busy()
        return importer

    run(archive)
    run(archive)
    assert got == [runs / "shared-run", runs / "shared-run-2"]
    assert shown[1] == ("info", f"Imported the run as shared-run-2.\n{runs / 'shared-run-2'}")
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("x/config.json", "{}")
        zf.writestr("x/../../evil.txt", "x")
    run(bad)
    assert shown[-1][0] == "warning" and "climbs out of its folder" in shown[-1][1] and len(got) == 2

    # Cancel while the files come out: nothing is kept, no half-made folder.
    import threading

    import trainer.run.share as share

    real, entered, go_on = share._copy_capped, threading.Event(), threading.Event()

    def slow(*args, **kwargs):
        entered.set()
        go_on.wait(10)
        return real(*args, **kwargs)
    monkeypatch.setattr(share, "_copy_capped", slow)
    importer = RunImport(None, runs)
    importer.imported.connect(got.append)
    importer.start(archive)
    qtbot.waitUntil(entered.is_set, timeout=5000)
    with qtbot.waitSignal(importer.ended, timeout=5000):
        importer.dialog.canceled.emit()  # the person presses Cancel during the first file
    go_on.set()
    qtbot.waitUntil(lambda: importer.runner.pending() == 0, timeout=10000)
    assert len(got) == 2 and len(shown) == 3
    assert sorted(p.name for p in runs.iterdir()) == ["shared-run", "shared-run-2"]


def test_gui_modules_import_without_torch():
    import subprocess

    code = ("import sys\n"
            "class Block:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] in ('torch', 'transformers', 'peft', 'accelerate'):\n"
            "            raise ImportError('blocked: ' + name)\n"
            "sys.meta_path.insert(0, Block())\n"
            "import dragonfarm_gui.widgets.try_page, dragonfarm_gui.widgets.result_actions\n"
            "import dragonfarm_gui.widgets.import_run, trainer.run.share, trainer.results.export.modelfile\n"
            "print('ok')\n")
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr

