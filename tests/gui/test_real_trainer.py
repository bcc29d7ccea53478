"""The real trainer through the app's detached QProcess, on the tiny model from
tests/conftest.py: a run reaches done and the page shows the result; Cancel
ends it cancelled; a killed trainer shows interrupted and Resume finishes it."""
from __future__ import annotations

import os
import signal

import pytest

from trainer.run import status as st
from trainer.run.reader import Run

pytestmark = pytest.mark.slow
WAIT = 240_000  # loading torch and training on a shared 2-core machine


@pytest.fixture
def real_window(qtbot, monkeypatch, tmp_path):
    from dragonfarm_gui.widgets.main_window import MainWindow

    monkeypatch.setenv("DRAGONFARM_RUNS_DIR", str(tmp_path))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("MKL_NUM_THREADS", "1")
    windows = []

    def make():
        win = MainWindow()
        win.ask_on_close = lambda live: "keep"
        qtbot.addWidget(win)
        win.show()
        win.start()
        windows.append(win)
        return win

    yield make
    for win in windows:
        win.shutdown()


def _follow(win, qtbot, run_dir):
    assert win.run_list.select_path(str(run_dir))
    qtbot.waitUntil(lambda: win.run_page is not None and win.run_page.run is not None
                    and win.run_page.run.path == run_dir, timeout=5000)
    return win.run_page


def _wait_state(qtbot, page, *states, timeout=WAIT):
    qtbot.waitUntil(lambda: page.view_state in states, timeout=timeout)


def _stop_if_running(run_dir):
    status = Run(run_dir).status()
    if status.get("live") and status.get("pid"):
        os.kill(status["pid"], signal.SIGKILL)


def test_real_run_reaches_done_and_page_shows_result(real_window, qtbot, tiny_run_dir):
    win = real_window()
    page = _follow(win, qtbot, tiny_run_dir)
    assert win.start_run(tiny_run_dir) is not None
    try:
        _wait_state(qtbot, page, st.DONE, st.FAILED)
    finally:
        _stop_if_running(tiny_run_dir)
    assert page.view_state == st.DONE, page.error_text.text()
    status = Run(tiny_run_dir).status()
    qtbot.waitUntil(lambda: len(page.plot.steps) == status["total_steps"], timeout=10_000)
    assert page.values["step"].text() == f"{status['total_steps']} / {status['total_steps']} (100%)"
    qtbot.waitUntil(lambda: page.results.verdict is not None, timeout=10_000)
    assert page.results.verdict_box.isVisible()
    samples = Run(tiny_run_dir).samples()
    assert samples and samples[0]["prompt"] in page.results.samples.toPlainText()
    assert page.plot.eval_steps, "held-out loss points are drawn"


def test_real_cancel_ends_cancelled(real_window, qtbot, make_run):
    run_dir = make_run("long-run", epochs=60)
    win = real_window()
    page = _follow(win, qtbot, run_dir)
    win.start_run(run_dir)
    try:
        qtbot.waitUntil(lambda: (Run(run_dir).status().get("step") or 0) >= 2, timeout=WAIT)
        page.buttons["cancel"].click()
        _wait_state(qtbot, page, st.CANCELLED, st.FAILED, st.DONE)
    finally:
        _stop_if_running(run_dir)
    assert page.view_state == st.CANCELLED
    assert Run(run_dir).has_adapter()
    assert page.buttons["resume"].isEnabled()


def test_real_killed_trainer_is_interrupted_and_resume_finishes(real_window, qtbot, make_run):
    run_dir = make_run("killed-run", epochs=20)
    win = real_window()
    page = _follow(win, qtbot, run_dir)
    win.start_run(run_dir)
    try:
        qtbot.waitUntil(lambda: bool(Run(run_dir).checkpoints()), timeout=WAIT)
        os.kill(Run(run_dir).status()["pid"], signal.SIGKILL)
        _wait_state(qtbot, page, st.INTERRUPTED, timeout=15_000)
        assert page.buttons["resume"].isEnabled()
        page.buttons["resume"].click()
        _wait_state(qtbot, page, st.DONE, st.FAILED)
    finally:
        _stop_if_running(run_dir)
    assert page.view_state == st.DONE, page.error_text.text()
    status = Run(run_dir).status()
    assert status.get("resumed_from", 0) > 0
    assert status["step"] == status["total_steps"]
