"""One trainer per run folder: an OS-level lock on `trainer.lock`, held for the
trainer's whole life.

The operating system drops the lock when the process ends, however it ends
(crash, kill, power cut), so a held lock means a trainer is alive and nothing
can forge that; pid, create time and heartbeat in status.json are only hints
for folders without a lock file (older runs, read-only folders).

POSIX uses `fcntl.flock`, Windows `msvcrt.locking` on the file's first byte;
both locks belong to one open file, so a test from the same process sees a
held lock too. The file itself is never deleted (deleting lock files races)
and never packed into a shared run.

Hand-written rather than the `filelock` package: the app must *test* the lock
of every active run without creating a lock file in folders that have none,
which filelock's acquire-only API cannot do, and its Windows flavour deletes
the file on release.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing_extensions import Self

from trainer.run.files import LOCK_FILE

WINDOWS = os.name == "nt"
# os.open's descriptors are not inherited by child processes (PEP 446), so a
# program the trainer starts never keeps the lock after the trainer is gone.
_FLAGS = os.O_RDWR | getattr(os, "O_BINARY", 0)


class LockHeld(RuntimeError):
    """Another process holds the run's trainer lock."""


def _try_lock(fd: int) -> bool:
    """Take the lock on an open file without waiting; False when someone else has it."""
    if WINDOWS:
        import msvcrt

        os.lseek(fd, 0, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except (BlockingIOError, PermissionError):
        return False
    return True


def _unlock(fd: int) -> None:
    if WINDOWS:
        import msvcrt

        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        return
    import fcntl

    fcntl.flock(fd, fcntl.LOCK_UN)


class TrainerLock:
    """`with TrainerLock(run_dir):` holds the run's lock, or raises LockHeld.

    `wait` seconds of retrying cover another process's momentary test of the
    lock (`lock_held`), never a trainer: a trainer holds it for its life.
    """

    def __init__(self, run_dir: str | Path, wait: float = 2.0, create: bool = True):
        self.path = Path(run_dir) / LOCK_FILE
        self.wait = wait
        self.create = create  # False: a folder without a lock file raises FileNotFoundError (a reader's lock)
        self._fd: int | None = None

    def acquire(self) -> TrainerLock:
        fd = os.open(self.path, _FLAGS | (os.O_CREAT if self.create else 0), 0o644)
        deadline = time.monotonic() + self.wait
        while not _try_lock(fd):
            if time.monotonic() >= deadline:
                os.close(fd)
                raise LockHeld(str(self.path))
            time.sleep(0.05)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            _unlock(self._fd)
        except OSError:
            pass  # closing the file drops the lock anyway
        os.close(self._fd)
        self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> Self:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def lock_held(run_dir: str | Path) -> bool | None:
    """True when a trainer holds the run's lock, False when the lock is free,
    None when it cannot be told (no lock file yet, or a folder we cannot write).

    Never creates a file. The test takes the lock for an instant when it is
    free, which a starting trainer rides out by retrying (TrainerLock.wait).
    """
    try:
        fd = os.open(Path(run_dir) / LOCK_FILE, _FLAGS)
    except OSError:
        return None
    try:
        if not _try_lock(fd):
            return True
        try:
            _unlock(fd)
        except OSError:
            pass
        return False
    finally:
        os.close(fd)
