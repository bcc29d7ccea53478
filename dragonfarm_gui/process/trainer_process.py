"""Starting the trainer, and short helper commands as QProcesses.

Training is started detached (trainer.run.launch.start_detached: its own
session or process group, an explicit environment, output into the run's
logs/launcher.log) so it outlives the window; the app then follows the
run-folder files. The app's own environment and file descriptors are never
changed for it. Short commands such as
`check --json` run as an attached QProcess whose end is handled exactly once,
from `finished` or `errorOccurred`, keeping the tail of stderr for the message.
Nothing here ever waits on the GUI thread.
"""
from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QTimer, Signal

from trainer.run.files import LAUNCHER_LOG
from trainer.run.launch import start_detached, trainer_command, trainer_env
from trainer.run.procs import kill_survivors, pid_alive, stop_tree
from trainer.run.settings import load_settings

from .child import STDERR_TAIL, ChildProcess

LAUNCH_LOG = LAUNCHER_LOG


class LaunchError(RuntimeError):
    """The trainer could not be started; the message says why in words."""


class ProcessRunner(ChildProcess):
    """One short command; emits `ended` once with what it printed."""

    ended = Signal(bool, int, str, str, str)  # ok, exit_code, stdout, stderr_tail, error words

    def start(self, program: str, args: list[str], env: dict[str, str] | None = None) -> None:
        self._launch(program, args, env)

    def stop(self) -> None:
        """Kill a command still running (e.g. the dialog closed), without emitting."""
        self._forget()

    def _process_ended(self, ok: bool, code: int, words: str) -> None:
        self.ended.emit(ok, code, self._out.decode("utf-8", "replace"), self.stderr_tail(), words)


@dataclass
class Launch:
    run_dir: Path
    pid: int
    started_at: float
    log_path: Path
    process: subprocess.Popen | None = field(default=None, repr=False, compare=False)

    def is_running(self) -> bool:
        """Still running; polling also reaps the finished child (no zombie is left)."""
        if self.process is not None:
            return self.process.poll() is None
        return pid_alive(self.pid)


def start_training(run_dir: str | Path, *, resume: bool = False, hf_token: str | None = None,
                   settings: dict | None = None) -> Launch:
    """Start `python -m trainer train RUN_DIR [--resume]` detached; returns its pid.

    The token reaches the trainer only through the environment given to it.
    """
    run_dir = Path(run_dir).resolve()
    settings = load_settings() if settings is None else settings
    args = ["train", str(run_dir)] + (["--resume"] if resume else [])
    program, arguments = trainer_command(*args, settings=settings)
    started_at = time.time()
    try:
        env = trainer_env(hf_token=hf_token, keep_awake=settings.get("keep_awake", True) is not False)
        process = start_detached(program, arguments, run_dir, env, run_dir / LAUNCH_LOG)
    except (OSError, ValueError) as exc:
        raise LaunchError(
            f"The trainer could not be started with {program} ({getattr(exc, 'strerror', None) or exc}). "
            "Check the trainer Python in Settings, or run the device check from the Help menu."
        ) from None
    return Launch(run_dir, process.pid, started_at, run_dir / LAUNCH_LOG, process)


def launch_log_tail(run_dir: str | Path, limit: int = STDERR_TAIL) -> str:
    try:
        data = (Path(run_dir) / LAUNCH_LOG).read_bytes()
    except OSError:
        return ""
    return data[-limit:].decode("utf-8", "replace")


def stop_process_tree(pid: int, created_at: float | None = None, grace_ms: int = 3000) -> bool:
    """The last resort when the trainer ignores the cancel request: end it and
    its children (psutil), and kill whichever is still there `grace_ms` later.
    `created_at` (status.json's pid_created_at) keeps a reused pid safe.
    False when there was no such process."""
    procs = stop_tree(pid, created_at)
    if procs:
        QTimer.singleShot(grace_ms, lambda: kill_survivors(procs))
    return bool(procs)

