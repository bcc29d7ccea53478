"""Follow one run folder: new progress lines and status changes, live.

A QFileSystemWatcher reports changes at once; a slow timer re-checks anyway,
because watchers miss events on some file systems (network drives, some Macs).
Only new bytes of progress.jsonl are read (trainer.run.progress.ProgressReader),
and a half-written last line waits for its newline.
"""
from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QFileSystemWatcher, QObject, QTimer, Signal

from trainer.run.files import EVAL_FILE, SAMPLES_FILE
from trainer.run.reader import Run
from trainer.run.progress import PROGRESS_FILE, ProgressReader
from trainer.run.status import STATUS_FILE

FALLBACK_MS = 400
LIVENESS_EVERY = 5  # re-judge liveness (pid, heartbeat) every 5 fallback ticks


class RunFollower(QObject):
    progress_added = Signal(list)
    progress_reset = Signal()
    status_changed = Signal(dict)
    results_changed = Signal()  # eval.json or samples.json changed

    def __init__(self, run_dir: str | Path, parent: QObject | None = None, *, use_watcher: bool = True):
        super().__init__(parent)
        self.run = Run(run_dir)
        self.reader = ProgressReader(self.run.path / PROGRESS_FILE)
        self._stamps: dict[str, tuple[int, int] | None] = {}
        self._last_status: dict | None = None
        self._ticks = 0
        self._watcher: QFileSystemWatcher | None = None
        if use_watcher:
            self._watcher = QFileSystemWatcher(self)
            self._watcher.directoryChanged.connect(self._on_change)
            self._watcher.fileChanged.connect(self._on_change)
        self._timer = QTimer(self)
        self._timer.setInterval(FALLBACK_MS)
        self._timer.timeout.connect(self._on_tick)

    # ----- life cycle ----------------------------------------------------
    def start(self) -> None:
        self._watch()
        self.poll(force_status=True)
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()
        if self._watcher is not None:
            paths = self._watcher.files() + self._watcher.directories()
            if paths:
                self._watcher.removePaths(paths)

    def is_active(self) -> bool:
        return self._timer.isActive()

    # ----- reading ---------------------------------------------------------
    def _watch(self) -> None:
        if self._watcher is None:
            return
        wanted = [str(self.run.path)] + [str(self.run.path / f) for f in (PROGRESS_FILE, STATUS_FILE)]
        have = set(self._watcher.files() + self._watcher.directories())
        missing = [p for p in wanted if p not in have and os.path.exists(p)]
        if missing:
            self._watcher.addPaths(missing)

    def _on_change(self, _path: str = "") -> None:
        self._watch()  # an atomic replace drops the watch on status.json; add it again
        self.poll()

    def _on_tick(self) -> None:
        self._ticks += 1
        self._watch()
        self.poll(force_status=self._ticks % LIVENESS_EVERY == 0)

    def poll(self, force_status: bool = False) -> None:
        records = self.reader.read_new()
        if self.reader.reset:
            self.progress_reset.emit()
        if records:
            self.progress_added.emit(records)
        status_moved = self._moved(STATUS_FILE)
        if status_moved or force_status:
            status = self.run.status()
            if status != self._last_status or force_status:  # forced: liveness may have changed
                self._last_status = status
                self.status_changed.emit(status)
        if self._moved(EVAL_FILE) | self._moved(SAMPLES_FILE):
            self.results_changed.emit()

    def _moved(self, name: str) -> bool:
        try:
            info = os.stat(self.run.path / name)
            stamp = (info.st_mtime_ns, info.st_size)
        except OSError:
            stamp = None
        if self._stamps.get(name, "unset") == stamp:
            return False
        self._stamps[name] = stamp
        return True
