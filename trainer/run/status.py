"""status.json: what the trainer is doing now, written atomically.

The trainer writes the whole file each time through a temporary file and
os.replace, so a reader never sees half a file. Liveness comes first from the
run's trainer lock (trainer/run/lock.py), which nothing can forge; pid with
its create time and the heartbeat are hints for folders without a lock file.
A heartbeat in the future is ignored. Readers check every field
(trainer/run/checks.py) and report a damaged file instead of failing.
"""
from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

from trainer.run import procs
from trainer.run.checks import MISSING, clean_status, load_json
from trainer.run.files import CANCEL_FILE, STATUS_FILE
from trainer.run.lock import lock_held
from trainer.run.states import (ACTIVE_STATES, ALL_STATES, CANCELLED, DONE, FAILED, FINAL_STATES,  # noqa: F401
                                INTERRUPTED, LOADING, QUEUED, SAVING, TRAINING)


# The trainer refreshes the heartbeat every few seconds from a thread, so a
# heartbeat older than this means the process is gone or frozen.
HEARTBEAT_SECONDS = 5.0
STALE_AFTER_SECONDS = 60.0
# Clocks of two machines sharing a folder differ a little; a heartbeat further
# ahead than this is forged or broken, and ignored.
FUTURE_SLACK_SECONDS = 30.0
# Not a trainer state: what readers show for a run whose files are damaged.
DAMAGED = "damaged"

STATE_WORDS = {
    QUEUED: "Waiting to start",
    LOADING: "Loading the model",
    TRAINING: "Training",
    SAVING: "Saving",
    DONE: "Finished",
    FAILED: "Failed",
    CANCELLED: "Stopped (adapter saved)",
    INTERRUPTED: "Interrupted (can be resumed)",
    DAMAGED: "Damaged",
}


def now() -> float:
    return time.time()


def write_json_atomic(path: str | Path, data: Any) -> None:
    """Write JSON so that readers see either the old or the new file, never a mix."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2)
        fh.flush()
        try:
            os.fsync(fh.fileno())
        except OSError:
            pass
    for attempt in range(20):
        try:
            os.replace(tmp, path)
            return
        except PermissionError:
            # Windows refuses to replace a file another process has open; retry briefly.
            time.sleep(0.05 * (attempt + 1))
    os.replace(tmp, path)


def read_json(path: str | Path, default: Any = None) -> Any:
    """The file's JSON, or `default` when it is missing or not JSON."""
    data, _problem = load_json(Path(path))
    return default if data is MISSING else data


def read_status(run_dir: str | Path) -> dict[str, Any]:
    """The status as written, with bad fields dropped; {} when there is none
    (or it cannot be read at all)."""
    return check_status(run_dir)[0]


def check_status(run_dir: str | Path) -> tuple[dict[str, Any], list[str], bool]:
    """(status with bad fields dropped, problems in words, whether the file exists)."""
    data, problem = load_json(Path(run_dir) / STATUS_FILE)
    if data is MISSING:
        return {}, [problem] if problem else [], problem is not None
    clean, problems = clean_status(data)
    return clean, problems, True


def pid_alive(pid: Any, created_at: Any = None) -> bool:
    """A running process (not a zombie); with `created_at`, the same process."""
    return procs.pid_alive(pid, created_at)


def effective_state(status: dict[str, Any], at: float | None = None, run_dir: str | Path | None = None) -> str:
    """The state a reader should believe: an active state whose trainer is dead
    (lock free, pid gone on this host, or heartbeat stale) reads interrupted."""
    state = status.get("state")
    if state not in ALL_STATES:
        return QUEUED if not status else FAILED
    if state not in ACTIVE_STATES:
        return state
    return state if is_live(status, at, run_dir) else INTERRUPTED


def _past_time(value: Any, at: float) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return value if ok and value <= at + FUTURE_SLACK_SECONDS else None


def is_live(status: dict[str, Any], at: float | None = None, run_dir: str | Path | None = None) -> bool:
    """Is a trainer working on this run? With `run_dir`, the lock decides."""
    at = now() if at is None else at
    written_by_trainer = "heartbeat_at" in status or "pid" in status
    held = lock_held(run_dir) if run_dir is not None else None
    if held:
        return True
    if status.get("state") not in ACTIVE_STATES:
        return False
    if held is False and written_by_trainer:
        return False  # the trainer that wrote this is gone: the OS dropped its lock
    pid = status.get("pid")
    if (status.get("host") == socket.gethostname() and pid is not None
            and not pid_alive(pid, status.get("pid_created_at"))):
        return False
    beat = _past_time(status.get("heartbeat_at"), at)
    if beat is not None:
        return at - beat <= STALE_AFTER_SECONDS
    if written_by_trainer:
        return False  # a heartbeat that is missing or in the future proves nothing
    # queued by the app but no trainer has written yet: live for a short grace period
    created = _past_time(status.get("updated_at"), at)
    return created is not None and at - created <= STALE_AFTER_SECONDS


EXIT_WAIT_SECONDS = 10.0


def wait_for_exit(run_dir: str | Path, seconds: float = EXIT_WAIT_SECONDS) -> bool:
    """A trainer that has written its last state (failed, cancelled, done)
    holds the run's lock for the moment it takes to exit, longer on a busy
    machine. Wait out that moment. True when no trainer holds the lock now;
    False when one still does, or when the status says it is still at work."""
    deadline = time.monotonic() + seconds
    while lock_held(run_dir):
        status, _problems, _exists = check_status(run_dir)
        if status.get("state") in ACTIVE_STATES or time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


class StatusWriter:
    """Owned by the trainer process: keeps the current status and rewrites it."""

    def __init__(self, run_dir: str | Path, **initial: Any):
        self.path = Path(run_dir) / STATUS_FILE
        self.data: dict[str, Any] = {
            "state": QUEUED,
            "pid": os.getpid(),
            "pid_created_at": procs.create_time(),  # with the pid: a reused pid is not this trainer
            "host": socket.gethostname(),
            "started_at": now(),
        }
        self.data.update(initial)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.write()

    def update(self, **fields: Any) -> None:
        with self._lock:
            self.data.update(fields)
        self.write()

    def write(self) -> None:
        with self._lock:
            t = now()
            self.data["heartbeat_at"] = t
            self.data["updated_at"] = t
            write_json_atomic(self.path, self.data)

    def start_heartbeat(self, every: float = HEARTBEAT_SECONDS) -> None:
        """Refresh heartbeat_at from a thread, so long steps or downloads still look alive."""
        def beat() -> None:
            while not self._stop.wait(every):
                try:
                    self.write()
                except OSError:
                    pass

        self._thread = threading.Thread(target=beat, name="dragonfarm-heartbeat", daemon=True)
        self._thread.start()

    def stop_heartbeat(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=2)


def request_cancel(run_dir: str | Path) -> Path:
    path = Path(run_dir) / CANCEL_FILE
    path.write_text(str(now()), encoding="utf-8")
    return path


def cancel_requested(run_dir: str | Path) -> bool:
    return (Path(run_dir) / CANCEL_FILE).exists()


def clear_cancel(run_dir: str | Path) -> None:
    try:
        (Path(run_dir) / CANCEL_FILE).unlink()
    except FileNotFoundError:
        pass
