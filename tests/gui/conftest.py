"""GUI test fixtures: offscreen Qt, settings and runs in temp folders, a fake
trainer, and a check that no test leaves a process, thread (worker-pool threads
too) or timer running."""
from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from dfhelpers import fake_python as wrap_fake_python

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
FAKE_TRAINER = HERE / "fake_trainer.py"


@pytest.fixture(autouse=True)
def gui_env(tmp_path, monkeypatch):
    monkeypatch.setenv("DRAGONFARM_NO_KEYRING", "1")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("DRAGONFARM_PYTHON", raising=False)
    runs = tmp_path / "runs"
    runs.mkdir()
    monkeypatch.setenv("DRAGONFARM_RUNS_DIR", str(runs))
    return runs


@pytest.fixture
def runs_dir(gui_env) -> Path:
    return gui_env


@pytest.fixture
def fake_python(tmp_path, monkeypatch) -> Path:
    """DRAGONFARM_PYTHON pointing at a script that runs tests/gui/fake_trainer.py."""
    return wrap_fake_python(tmp_path, monkeypatch, FAKE_TRAINER)


@pytest.fixture
def sample_run(runs_dir) -> Path:
    """A run folder made by the import library from the fixture CSV (no training yet)."""
    from trainer.dataimport import create_run

    return create_run(FIXTURES / "support.csv", runs_dir=runs_dir, name="support",
                      config_overrides={"epochs": 1})


def _leftovers(app) -> list[str]:
    from PySide6.QtCore import QProcess, QTimer

    found = []
    for top in app.topLevelWidgets():
        for timer in top.findChildren(QTimer):
            if timer.isActive() and timer.objectName() != "qt_internal":
                found.append(f"active QTimer under {type(top).__name__} (parent {type(timer.parent()).__name__})")
        for proc in top.findChildren(QProcess):
            if proc.state() != QProcess.ProcessState.NotRunning:
                found.append(f"running QProcess {proc.program()}")
    return found


MODAL_LIMIT_S = 30.0


def _dialog_words(widget) -> str:
    text = widget.text() if hasattr(widget, "text") and callable(widget.text) else ""
    return f"{type(widget).__name__} '{widget.windowTitle()}'" + (f": {text[:200]}" if text else "")


@pytest.fixture(autouse=True)
def no_stuck_dialog(request):
    """A modal dialog that a test did not expect waits for a click that never
    comes, and pytest-timeout cannot end a test blocked in Qt's nested event
    loop. So: a dialog still open after MODAL_LIMIT_S is named, rejected, and
    the test fails, instead of the whole run hanging."""
    if "qtbot" not in request.fixturenames:
        yield
        return
    import time

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    request.getfixturevalue("qapp")
    stuck: list[str] = []
    seen: dict[int, float] = {}

    def look() -> None:
        widget = QApplication.activeModalWidget()
        if widget is None:
            seen.clear()
            return
        first = seen.setdefault(id(widget), time.monotonic())
        if time.monotonic() - first > MODAL_LIMIT_S:
            stuck.append(_dialog_words(widget))
            seen.pop(id(widget), None)
            widget.reject() if hasattr(widget, "reject") else widget.close()

    timer = QTimer()
    timer.timeout.connect(look)
    timer.start(500)
    yield
    timer.stop()
    if stuck:
        pytest.fail("a dialog stayed open with nobody to answer it: " + "; ".join(stuck))


@pytest.fixture(autouse=True)
def no_leftovers(request):
    """After each GUI test: no running QProcess or active timer in any window, no new thread."""
    threads_before = {t.ident for t in threading.enumerate()}
    yield
    if "qtbot" not in request.fixturenames:
        return
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    left = _leftovers(app) if app else []
    for top in list(app.topLevelWidgets()) if app else []:
        top.close()
        top.deleteLater()
    from PySide6.QtCore import QThreadPool

    # A worker (dragonfarm_gui/process/worker.py) ends soon after its window closes or Cancel.
    assert QThreadPool.globalInstance().waitForDone(5000), "a worker thread is still running"
    # Qt's pool threads (checked just above) stay parked for reuse; Python lists one as a
    # _DummyThread once code in it asked for the current thread (logging does). Python's own
    # threads are still checked here.
    new_threads = [t.name for t in threading.enumerate() if t.ident not in threads_before and t.is_alive()
                   and not isinstance(t, threading._DummyThread)]
    assert not left, left
    assert not new_threads, new_threads


@pytest.fixture
def window(qtbot, runs_dir):
    """The main window, shown and started, shut down cleanly afterwards."""
    from dragonfarm_gui.widgets.main_window import MainWindow

    win = MainWindow()
    win.ask_on_close = lambda live: "keep"  # tests that close with a live run set their own answer
    qtbot.addWidget(win)
    win.show()
    win.start()
    yield win
    win.shutdown()
    from PySide6.QtWidgets import QApplication

    left = _leftovers(QApplication.instance())
    assert not left, left
