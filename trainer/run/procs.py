"""Processes and memory through psutil, the same on Windows, macOS and Linux.

psutil replaces hand-written probes (os.kill(pid, 0), /proc, ctypes on
Windows, os.sysconf, which Windows lacks): it tells a live process from a
zombie, gives a process's create time, so a pid the system has since handed
to another program is not mistaken for the trainer, and finds a process's
children, so "Stop now" ends the whole tree.
"""
from __future__ import annotations

import psutil

# Create times are floats from the OS clock; a reused pid's differs by far more.
CREATE_TIME_SLACK = 1.0
MAX_PID = 2**32  # Windows pids are DWORDs; anything larger is not a pid


def valid_pid(pid: object) -> bool:
    return isinstance(pid, int) and not isinstance(pid, bool) and 0 < pid < MAX_PID


def create_time(pid: int | None = None) -> float | None:
    """When the process (this one by default) started, as a Unix time."""
    try:
        return psutil.Process(pid).create_time()
    except (psutil.Error, OSError, ValueError, OverflowError):
        return None


def pid_alive(pid: object, created_at: object = None) -> bool:
    """True when `pid` is a running process (not a zombie) and, when
    `created_at` is given, the very process that started then."""
    if not valid_pid(pid):
        return False
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        if isinstance(created_at, (int, float)) and not isinstance(created_at, bool):
            return abs(proc.create_time() - created_at) <= CREATE_TIME_SLACK
        return True
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True  # it exists; another user's process
    except (psutil.Error, OSError, ValueError, OverflowError):
        return False


def stop_tree(pid: object, created_at: object = None) -> list[psutil.Process]:
    """Ask a process and all its children to end (SIGTERM; TerminateProcess on
    Windows). Returns the processes, for `kill_survivors` a little later; [] when
    the pid is not (or no longer) that process."""
    if not pid_alive(pid, created_at):
        return []
    try:
        root = psutil.Process(pid)
        procs = [root] + root.children(recursive=True)
    except psutil.Error:
        return []
    for proc in procs:
        try:
            proc.terminate()
        except psutil.Error:
            pass
    return procs


def kill_survivors(procs: list[psutil.Process]) -> int:
    """Kill whichever of `procs` is still running; returns how many were."""
    alive = [p for p in procs if _running(p)]
    for proc in alive:
        try:
            proc.kill()
        except psutil.Error:
            pass
    return len(alive)


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def system_memory_gb() -> float | None:
    """Total physical memory in GB (GiB), on every platform; None if unknown."""
    try:
        return round(psutil.virtual_memory().total / 2**30, 1)
    except (psutil.Error, OSError, AttributeError):
        return None
