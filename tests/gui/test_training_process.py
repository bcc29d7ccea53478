"""Training through a detached QProcess, with the fake trainer (fast, exact):
done with results, Cancel, a killed trainer shown as interrupted then resumed,
a failure in words, a trainer that cannot start, and closing during a run."""
from __future__ import annotations

import os
import signal
import stat
import sys

from trainer.run import status as st
from trainer.run.reader import Run

from .helpers import write_status

WAIT = 20_000


def _page(window, qtbot, run):
    qtbot.waitUntil(lambda: window.run_page is not None and window.run_page.run is not None
                    and window.run_page.run.path == run, timeout=5000)
    return window.run_page


def _wait_state(qtbot, page, state, timeout=WAIT):
    qtbot.waitUntil(lambda: page.view_state == state, timeout=timeout)


def test_run_reaches_done_and_page_shows_result(window, qtbot, sample_run, fake_python):
    page = _page(window, qtbot, sample_run)
    assert page.buttons["start"].isVisible() and page.state_label.text() == "Not started"
    page.buttons["start"].click()
    launch = window.launches[str(sample_run.resolve())]
    assert launch.pid > 0
    _wait_state(qtbot, page, st.DONE)
    qtbot.waitUntil(lambda: page.results.verdict is not None, timeout=5000)
    assert page.results.verdict["verdict"] == "learned"
    assert page.results.verdict_box.isVisible()
    shown = page.results.samples.toPlainText()
    assert "It ships tomorrow!" in shown and "Your answer: It ships tomorrow." in shown
    assert "Can I pay by invoice?\nYour own test question" in shown and "Yes, within 30 days!" in shown
    qtbot.waitUntil(lambda: len(page.plot.steps) == 6, timeout=5000)
    assert page.plot.losses[-1] == 1.0
    assert page.plot.eval_steps == [2.0, 4.0, 6.0]
    assert page.state_label.text() == "Finished"
    assert page.values["step"].text() == "6 / 6 (100%)"
    model = window.run_list.model
    qtbot.waitUntil(lambda: model.data(model.index(0, 2)) == "Finished", timeout=5000)
    assert model.data(model.index(0, 5)) == "1.100"
    assert page.buttons["tools"].isEnabled()
    tools = window.open_tools(str(sample_run))
    assert [tools.tabs.tabText(i) for i in range(tools.tabs.count())] == ["Try it", "Merge, export and share"]
    tools.close()
    assert window.tool_windows == []


def test_cancel_ends_cancelled(window, qtbot, sample_run, fake_python, monkeypatch):
    monkeypatch.setenv("FAKE_STEPS", "200")
    monkeypatch.setenv("FAKE_DELAY", "0.1")
    page = _page(window, qtbot, sample_run)
    window.start_run(sample_run)
    _wait_state(qtbot, page, st.TRAINING)
    qtbot.waitUntil(lambda: page.buttons["cancel"].isEnabled(), timeout=5000)
    page.buttons["cancel"].click()
    assert (sample_run / st.CANCEL_FILE).exists()
    _wait_state(qtbot, page, st.CANCELLED)
    assert page.state_label.text() == "Stopped (adapter saved)"
    assert page.buttons["resume"].isEnabled()
    assert Run(sample_run).has_adapter()
    assert Run(sample_run).status()["step"] < 200


def test_killed_trainer_is_interrupted_and_resume_finishes(window, qtbot, sample_run, fake_python, monkeypatch):
    monkeypatch.setenv("FAKE_HANG_AT", "5")
    page = _page(window, qtbot, sample_run)
    window.start_run(sample_run)
    qtbot.waitUntil(lambda: Run(sample_run).status().get("step") == 4, timeout=WAIT)
    pid = Run(sample_run).status()["pid"]
    os.kill(pid, signal.SIGKILL)
    _wait_state(qtbot, page, st.INTERRUPTED)
    assert page.state_label.text() == "Interrupted (can be resumed)"
    assert "Resume" in page.message.text()
    assert page.buttons["resume"].isEnabled()
    monkeypatch.delenv("FAKE_HANG_AT")
    page.buttons["resume"].click()
    _wait_state(qtbot, page, st.DONE)
    status = Run(sample_run).status()
    assert status["resumed_from"] == 4 and status["step"] == 6
    assert [r["step"] for r in Run(sample_run).train_records()] == [1, 2, 3, 4, 5, 6]


def test_failure_reaches_the_page_in_words(window, qtbot, sample_run, fake_python, monkeypatch):
    words = "The model could not be downloaded: there is no internet connection. Connect and press Resume."
    monkeypatch.setenv("FAKE_FAIL", words)
    page = _page(window, qtbot, sample_run)
    window.start_run(sample_run)
    _wait_state(qtbot, page, st.FAILED)
    assert page.error_box.isVisible()
    assert page.error_text.text() == f"<b>What went wrong:</b> {words}"
    assert "Traceback" not in page.error_text.text()
    seen = []
    page.show_log_requested.connect(lambda *a: seen.append(a))
    page.show_log_button.click()
    assert seen and seen[0][2].endswith("launcher.log")


def test_trainer_that_cannot_start_is_explained(window, qtbot, sample_run, tmp_path, monkeypatch):
    broken = tmp_path / "broken-python"
    broken.write_text("#!/bin/sh\necho 'No module named trainer' >&2\nexit 1\n")
    broken.chmod(broken.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("DRAGONFARM_PYTHON", str(broken))
    page = _page(window, qtbot, sample_run)
    window.start_run(sample_run)
    _wait_state(qtbot, page, st.FAILED, timeout=8000)
    assert "The trainer stopped before it could start" in page.error_text.text()
    assert "No module named trainer" in page.error_text.text()


def test_missing_trainer_python_shows_error_dialog(window, qtbot, sample_run, monkeypatch):
    shown = []
    monkeypatch.setattr("dragonfarm_gui.widgets.main_window.show_error", lambda *a, **k: shown.append(a))
    monkeypatch.setenv("DRAGONFARM_PYTHON", str(sample_run / "no-such-python"))
    assert window.start_run(sample_run) is None
    assert shown and shown[0][1] == "Training could not start"
    assert "Check the trainer Python in Settings" in shown[0][2]


def test_closing_during_a_run_asks_keep_or_stop(window, qtbot, sample_run):
    write_status(sample_run, st.TRAINING, step=1, total_steps=10)
    asked = []
    window.ask_on_close = lambda live: asked.append([r.name for r in live]) or "cancel"
    window.close()
    assert asked == [["support"]] and window.isVisible()
    window.ask_on_close = lambda live: "keep"
    window.close()
    assert not (sample_run / st.CANCEL_FILE).exists()
    window.show()
    window.ask_on_close = lambda live: "stop"
    window.close()
    assert (sample_run / st.CANCEL_FILE).exists()


def test_on_start_follows_a_running_run(qtbot, runs_dir, sample_run):
    from trainer.dataimport import create_run

    from dragonfarm_gui.widgets.main_window import MainWindow

    from .conftest import FIXTURES

    other = create_run(FIXTURES / "support.csv", runs_dir=runs_dir, name="zzz-newer")
    write_status(sample_run, st.TRAINING, step=3, total_steps=10)
    write_status(other, st.DONE, live=False)
    win = MainWindow()
    win.ask_on_close = lambda live: "keep"
    qtbot.addWidget(win)
    win.show()
    win.start()
    try:
        assert win.run_list.current_path() == str(sample_run)
        qtbot.waitUntil(lambda: win.run_page is not None and win.run_page.view_state == st.TRAINING, timeout=5000)
    finally:
        win.shutdown()


def test_detached_trainer_outlives_the_window(qtbot, runs_dir, sample_run, fake_python, monkeypatch):
    from dragonfarm_gui.widgets.main_window import MainWindow

    monkeypatch.setenv("FAKE_STEPS", "30")
    monkeypatch.setenv("FAKE_DELAY", "0.05")
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    win.start()
    launch = win.start_run(sample_run)
    qtbot.waitUntil(lambda: Run(sample_run).status().get("live") is True, timeout=WAIT)
    win.ask_on_close = lambda live: "keep"
    win.close()
    assert not win.isVisible() and not win.run_list.model._timer.isActive()
    qtbot.wait(50)
    assert st.pid_alive(launch.pid)
    qtbot.waitUntil(lambda: Run(sample_run).state == st.DONE, timeout=WAIT)
    assert sys.platform != "win32"  # the fake trainer is a POSIX script


def test_wizard_start_trains_the_new_run(window, qtbot, runs_dir, fake_python, monkeypatch):
    from PySide6.QtWidgets import QWizard

    from dragonfarm_gui.wizard.new_run_wizard import NewRunWizard

    from .conftest import FIXTURES
    from .helpers import wizard_idle

    def drive(wiz):
        wiz.show()
        wiz.data_page.set_file(FIXTURES / "support.csv")
        wizard_idle(qtbot, wiz)
        for _ in range(4):
            wiz.next()
        wiz.button(QWizard.WizardButton.FinishButton).click()
        qtbot.waitUntil(lambda: wiz.isHidden(), timeout=15000)
        return wiz.result()

    monkeypatch.setattr(NewRunWizard, "exec", drive)
    wiz = window.new_run()
    assert wiz.created_run is not None and wiz.created_run.parent == runs_dir and wiz.start_now
    page = _page(window, qtbot, wiz.created_run)
    _wait_state(qtbot, page, st.DONE)
    assert Run(wiz.created_run).status()["step"] == 6


def test_cancel_twice_offers_stop_now(window, qtbot, sample_run, fake_python, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    monkeypatch.setenv("FAKE_HANG_AT", "2")  # hangs (with heartbeats) before it would see the request
    page = _page(window, qtbot, sample_run)
    window.start_run(sample_run)
    qtbot.waitUntil(lambda: Run(sample_run).status().get("step") == 1, timeout=WAIT)
    page.buttons["cancel"].click()
    qtbot.waitUntil(lambda: page.buttons["cancel"].text() == "Stop now…", timeout=5000)
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    page.buttons["cancel"].click()
    _wait_state(qtbot, page, st.INTERRUPTED, timeout=10_000)
    assert page.buttons["resume"].isEnabled()
