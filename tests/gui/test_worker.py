"""The worker that keeps slow work off the GUI thread, and _forget that no longer waits."""
from __future__ import annotations

import sys
import threading
import time

import pytest
from PySide6.QtCore import QProcess, QThreadPool

from dragonfarm_gui.process.worker import JobRunner

WAIT = 5000


def _record(runner: JobRunner) -> dict:
    seen: dict = {"progress": [], "partial": [], "done": [], "failed": [], "cancelled": 0}
    runner.progress.connect(lambda phase, n: seen["progress"].append((phase, n)))
    runner.partial.connect(seen["partial"].append)
    runner.done.connect(seen["done"].append)
    runner.failed.connect(seen["failed"].append)
    runner.cancelled.connect(lambda: seen.__setitem__("cancelled", seen["cancelled"] + 1))
    return seen


def _pool_idle(qtbot) -> None:
    qtbot.waitUntil(lambda: QThreadPool.globalInstance().activeThreadCount() == 0, timeout=WAIT)


def test_job_runs_off_the_gui_thread_and_reports_back(qtbot):
    runner = JobRunner()
    seen = _record(runner)
    gui = threading.get_ident()

    def work(job):
        job.partial("first look")
        job.check("rows", 10)
        return threading.get_ident()

    runner.start(work)
    assert runner.busy()
    qtbot.waitUntil(lambda: bool(seen["done"]), timeout=WAIT)
    assert seen["done"][0] != gui and seen["partial"] == ["first look"] and not runner.busy()
    _pool_idle(qtbot)


def test_a_failure_arrives_as_a_value(qtbot):
    runner = JobRunner()
    seen = _record(runner)
    runner.start(lambda job: 1 / 0)
    qtbot.waitUntil(lambda: bool(seen["failed"]), timeout=WAIT)
    assert isinstance(seen["failed"][0], ZeroDivisionError) and not seen["done"]
    _pool_idle(qtbot)


def test_cancel_stops_the_job_and_a_new_start_replaces_the_old_one(qtbot):
    runner = JobRunner()
    seen = _record(runner)
    stopped = threading.Event()

    def endless(job):
        try:
            while True:
                job.check("rows", 1)
                time.sleep(0.001)
        finally:
            stopped.set()

    runner.start(endless)
    runner.start(lambda job: "second")  # cancels the endless one, quietly
    qtbot.waitUntil(lambda: seen["done"] == ["second"], timeout=WAIT)
    assert stopped.wait(2) and seen["cancelled"] == 0
    runner.start(endless)
    assert runner.cancel() and not runner.busy()
    assert seen["cancelled"] == 1
    qtbot.waitUntil(lambda: runner.pending() == 0, timeout=WAIT)
    assert seen["done"] == ["second"]
    _pool_idle(qtbot)


def test_a_result_finished_as_cancel_comes_is_discarded(qtbot):
    runner = JobRunner()
    seen = _record(runner)
    finishing = threading.Event()
    go_on = threading.Event()
    discarded = []

    def work(job):
        finishing.set()
        go_on.wait(2)
        return "made"  # no check after this: Cancel comes while it returns

    runner.start(work, discard=discarded.append)
    assert finishing.wait(2)
    runner.cancel()
    go_on.set()
    qtbot.waitUntil(lambda: discarded == ["made"], timeout=WAIT)
    assert not seen["done"]
    _pool_idle(qtbot)


@pytest.mark.skipif(sys.platform == "win32", reason="uses a POSIX sleep")
def test_forget_does_not_wait_on_the_gui_thread(qtbot):
    from dragonfarm_gui.process import child

    class Sleeper(child.ChildProcess):
        pass

    owner = Sleeper()
    owner._launch(sys.executable, ["-c", "import sys, time; sys.stdin.read(); time.sleep(30)"], env={})
    qtbot.waitUntil(lambda: owner._proc.state() == QProcess.ProcessState.Running, timeout=WAIT)
    proc = owner._proc
    began = time.monotonic()
    owner._forget(goodbye=b"bye\n", wait_ms=300)  # it ignores the goodbye: killed after 300 ms
    assert time.monotonic() - began < 0.1
    assert proc in child.FORGOTTEN and not owner.is_running()
    qtbot.waitUntil(lambda: proc not in child.FORGOTTEN, timeout=WAIT)
