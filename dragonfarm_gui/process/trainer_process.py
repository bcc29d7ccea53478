"""Starting the trainer and short helper commands as QProcesses.

Training is started detached (QProcess.startDetached) so it outlives the
window; the app then follows the run-folder files. Short commands such as
`check --json` run as an attached QProcess whose end is handled exactly once,
from `finished` or `errorOccurred`, keeping the tail of stderr for the message.
Nothing here ever waits on the GUI thread.
"""
from __future__ import annotations

import os
import signal
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QProcess, Signal

from trainer.run.files import LAUNCHER_LOG
from trainer.run.launch import trainer_command, trainer_env
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


def start_training(run_dir: str | Path, *, resume: bool = False, hf_token: str | None = None,
                   settings: dict | None = None) -> Launch:
    """Start `python -m trainer train RUN_DIR [--resume]` detached; returns its pid.

    QProcess.startDetached (the static form, the one PySide6 gives the pid
    from) starts it in its own session, so it outlives the window. It takes
    the app's environment and standard streams at that moment, so both are
    set just for the call: the trainer's environment (the token only there),
    and on POSIX stdout/stderr into the run's logs/launcher.log, which keeps
    what a trainer says if it dies before its own log starts.
    """
    run_dir = Path(run_dir).resolve()
    settings = load_settings() if settings is None else settings
    args = ["train", str(run_dir)] + (["--resume"] if resume else [])
    program, arguments = trainer_command(*args, settings=settings)
    log_path = run_dir / LAUNCH_LOG
    log_path.parent.mkdir(parents=True, exist_ok=True)
    started_at = time.time()
    with open(log_path, "ab") as log, _environment_for_call(
            trainer_env(hf_token=hf_token, keep_awake=settings.get("keep_awake", True) is not False)), _streams_to(log):
        ok, pid = QProcess.startDetached(program, arguments, str(run_dir))
    if not ok or not pid:
        raise LaunchError(
            f"The trainer could not be started with {program}. "
            "Check the trainer Python in Settings, or run the device check from the Help menu."
        )
    return Launch(run_dir, int(pid), started_at, log_path)


@contextmanager
def _environment_for_call(env: dict[str, str]):
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextmanager
def _streams_to(log):
    if os.name != "posix":  # a windowed app has no console streams to hand on
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)


def launch_log_tail(run_dir: str | Path, limit: int = STDERR_TAIL) -> str:
    try:
        data = (Path(run_dir) / LAUNCH_LOG).read_bytes()
    except OSError:
        return ""
    return data[-limit:].decode("utf-8", "replace")


def kill_pid(pid: int) -> bool:
    """Last resort when the trainer ignores the cancel request."""
    try:
        if os.name == "nt":  # pragma: no cover
            import subprocess

            subprocess.run(["taskkill", "/PID", str(pid), "/T", "/F"], capture_output=True, check=False)
        else:
            os.kill(pid, signal.SIGTERM)
        return True
    except OSError:
        return False
