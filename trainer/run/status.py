"""status.json: what the trainer is doing now, written atomically.

Standard library only. The trainer writes the whole file each time through a
temporary file and os.replace, so a reader never sees half a file. Readers
judge liveness from the pid (same host) and the heartbeat time.
"""
from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

from trainer.run.files import CANCEL_FILE, STATUS_FILE

QUEUED, LOADING, TRAINING, SAVING = "queued", "loading", "training", "saving"
DONE, FAILED, CANCELLED, INTERRUPTED = "done", "failed", "cancelled", "interrupted"
ACTIVE_STATES = (QUEUED, LOADING, TRAINING, SAVING)
FINAL_STATES = (DONE, FAILED, CANCELLED, INTERRUPTED)
ALL_STATES = ACTIVE_STATES + FINAL_STATES

# The trainer refreshes the heartbeat every few seconds from a thread, so a
# heartbeat older than this means the process is gone or frozen.
HEARTBEAT_SECONDS = 5.0
STALE_AFTER_SECONDS = 60.0

STATE_WORDS = {
    QUEUED: "Waiting to start",
    LOADING: "Loading the model",
    TRAINING: "Training",
    SAVING: "Saving",
    DONE: "Finished",
    FAILED: "Failed",
    CANCELLED: "Stopped (adapter saved)",
    INTERRUPTED: "Interrupted (can be resumed)",
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
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return default


def read_status(run_dir: str | Path) -> dict[str, Any]:
    """The raw status as written, or {} when there is none yet."""
    data = read_json(Path(run_dir) / STATUS_FILE, {})
    return data if isinstance(data, dict) else {}


def pid_alive(pid: int) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    if os.name == "nt":  # pragma: no cover - exercised on Windows only
        import ctypes

        kernel32 = ctypes.windll.kernel32
        handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return False
        code = ctypes.c_ulong()
        ok = kernel32.GetExitCodeProcess(handle, ctypes.byref(code))
        kernel32.CloseHandle(handle)
        return bool(ok) and code.value == 259  # STILL_ACTIVE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    # A zombie (finished, not yet reaped by its parent) counts as dead.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def effective_state(status: dict[str, Any], at: float | None = None) -> str:
    """The state a reader should believe: an active state whose trainer is dead
    (pid gone on this host, or heartbeat stale) is reported as interrupted."""
    state = status.get("state")
    if state not in ALL_STATES:
        return QUEUED if not status else FAILED
    if state not in ACTIVE_STATES:
        return state
    return state if is_live(status, at) else INTERRUPTED


def is_live(status: dict[str, Any], at: float | None = None) -> bool:
    if status.get("state") not in ACTIVE_STATES:
        return False
    at = now() if at is None else at
    pid = status.get("pid")
    if status.get("host") == socket.gethostname() and pid and not pid_alive(pid):
        return False
    beat = status.get("heartbeat_at")
    if isinstance(beat, (int, float)):
        return at - beat <= STALE_AFTER_SECONDS
    # queued by the app but no trainer has written yet: live for a short grace period
    created = status.get("updated_at")
    return isinstance(created, (int, float)) and at - created <= STALE_AFTER_SECONDS


class StatusWriter:
    """Owned by the trainer process: keeps the current status and rewrites it."""

    def __init__(self, run_dir: str | Path, **initial: Any):
        self.path = Path(run_dir) / STATUS_FILE
        self.data: dict[str, Any] = {
            "state": QUEUED,
            "pid": os.getpid(),
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
