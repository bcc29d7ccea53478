"""Slow work off the GUI thread: one job at a time per JobRunner, with
progress, an early partial result, and Cancel.

    runner = JobRunner(self)
    runner.partial.connect(...); runner.progress.connect(...)
    runner.done.connect(...); runner.failed.connect(...); runner.cancelled.connect(...)
    runner.start(lambda job: slow(progress=job.check), discard=cleanup)

The function runs in QThreadPool's global pool and gets its Job: it calls
`job.check(phase, count)` often (which raises Cancelled once Cancel was asked,
and passes the count on as `progress`, at most every 50 ms) and may call
`job.partial(value)` for an early look. Starting a new job cancels the one
before it, and nothing from a cancelled job reaches the runner's signals.

A result that is finished the moment Cancel comes in is handed to `discard`
in the worker thread (for run creation: remove the folder it made), so a
cancelled job leaves nothing behind and the GUI thread never waits.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

log = logging.getLogger(__name__)

PROGRESS_EVERY_S = 0.05


class Cancelled(Exception):
    """Raised inside a job's function by Job.check once Cancel was asked."""


class _Relay(QObject):
    """Made on the GUI thread, emitted from the worker: queued to the GUI thread."""
    progress = Signal(object, str, int)
    partial = Signal(object, object)
    ended = Signal(object, str, object)  # job, "done" | "failed" | "cancelled", value


class Job:
    def __init__(self, fn: Callable[[Job], Any], discard: Callable[[Any], None] | None, relay: _Relay):
        self.fn, self.discard, self.relay = fn, discard, relay
        self._lock = threading.Lock()
        self._cancelled = False
        self._delivered = False
        self._last_progress = 0.0
        self.discard_on_arrival = False  # cancelled just after it finished: discard when its result arrives

    # ----- from the worker --------------------------------------------------------
    def check(self, phase: str = "", count: int = 0) -> None:
        if self._cancelled:
            raise Cancelled()
        now = time.monotonic()
        if now - self._last_progress >= PROGRESS_EVERY_S:
            self._last_progress = now
            self._emit(self.relay.progress, self, phase, int(count))

    def partial(self, value: Any) -> None:
        self.check()
        self._emit(self.relay.partial, self, value)

    def _emit(self, signal, *args) -> None:
        try:
            signal.emit(*args)
        except RuntimeError:  # the page that asked is gone: stop
            self._cancelled = True
            raise Cancelled() from None

    def run(self) -> None:
        try:
            self._run()
        except Cancelled:
            pass  # the relay is gone: nobody is listening

    def _run(self) -> None:
        try:
            value = self.fn(self)
        except Cancelled:
            self._emit(self.relay.ended, self, "cancelled", None)
            return
        except BaseException as exc:
            if self._cancelled:
                self._emit(self.relay.ended, self, "cancelled", None)
            else:
                self._emit(self.relay.ended, self, "failed", exc)  # logged on the GUI thread
            return
        with self._lock:
            late = self._cancelled
            self._delivered = not late
        if late:
            if self.discard is not None:
                try:
                    self.discard(value)
                except Exception:
                    log.warning("could not discard a cancelled job's result", exc_info=True)
            self._emit(self.relay.ended, self, "cancelled", None)
        else:
            self._emit(self.relay.ended, self, "done", value)

    # ----- from the GUI thread ----------------------------------------------------
    def cancel(self) -> bool:
        """Ask the job to stop; False when its result was already on its way."""
        with self._lock:
            if self._delivered:
                return False
            self._cancelled = True
            return True

    @property
    def cancelled(self) -> bool:
        return self._cancelled


class _Runnable(QRunnable):
    def __init__(self, job: Job):
        super().__init__()
        self.job = job
        self.setAutoDelete(True)

    def run(self) -> None:
        self.job.run()


class JobRunner(QObject):
    """Runs one job at a time for its owner (a page); signals arrive on the GUI thread."""
    started = Signal()
    progress = Signal(str, int)   # phase, count
    partial = Signal(object)
    done = Signal(object)
    failed = Signal(object)       # the exception
    cancelled = Signal()
    busy_changed = Signal(bool)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.job: Job | None = None
        self._relay = _Relay(self)
        self._relay.progress.connect(self._on_progress)
        self._relay.partial.connect(self._on_partial)
        self._relay.ended.connect(self._on_ended)
        self._keep: set[Job] = set()  # jobs whose end has not arrived yet (cancelled ones too)

    def start(self, fn: Callable[[Job], Any], discard: Callable[[Any], None] | None = None) -> Job:
        self._drop()
        job = Job(fn, discard, self._relay)
        self.job = job
        self._keep.add(job)
        QThreadPool.globalInstance().start(_Runnable(job))
        self.started.emit()
        self.busy_changed.emit(True)
        return job

    def busy(self) -> bool:
        return self.job is not None

    def cancel(self, quiet: bool = False) -> bool:
        """Cancel the current job (its end is then ignored); True if one was running.
        quiet: no `cancelled` signal (the page is closing); busy_changed(False) comes either way."""
        if not self._drop():
            return False
        self.busy_changed.emit(False)
        if not quiet:
            self.cancelled.emit()
        return True

    def _drop(self) -> bool:
        job, self.job = self.job, None
        if job is None:
            return False
        if not job.cancel():  # finished a moment ago: its result is on its way; discard it there
            job.discard_on_arrival = True
        return True

    def pending(self) -> int:
        """Jobs started here whose end has not arrived (cancelled ones included)."""
        return len(self._keep)

    # ----- from the relay (GUI thread) --------------------------------------------
    def _on_progress(self, job: Job, phase: str, count: int) -> None:
        if job is self.job:
            self.progress.emit(phase, count)

    def _on_partial(self, job: Job, value: Any) -> None:
        if job is self.job:
            self.partial.emit(value)

    def _on_ended(self, job: Job, how: str, value: Any) -> None:
        self._keep.discard(job)
        if job is not self.job:
            if how == "done" and job.discard_on_arrival and job.discard is not None:
                try:
                    job.discard(value)
                except Exception:
                    log.warning("could not discard a cancelled job's result", exc_info=True)
            return
        self.job = None
        self.busy_changed.emit(False)
        if how == "failed":
            log.info("job failed", exc_info=value)
        if how == "done":
            self.done.emit(value)
        elif how == "failed":
            self.failed.emit(value)
        else:
            self.cancelled.emit()
