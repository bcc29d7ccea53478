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

from PySide6.QtCore import QObject, QProcess, QProcessEnvironment, Signal

from trainer.launch import trainer_command, trainer_env
from trainer.settings import load_settings

STDERR_TAIL = 8000
LAUNCH_LOG = "logs/launcher.log"


class LaunchError(RuntimeError):
    """The trainer could not be started; the message says why in words."""


def _environment(env: dict[str, str]) -> QProcessEnvironment:
    qenv = QProcessEnvironment()
    for key, value in env.items():
        qenv.insert(key, value)
    return qenv


class ProcessRunner(QObject):
    """One short command; emits `ended` once with what it printed."""

    ended = Signal(bool, int, str, str, str)  # ok, exit_code, stdout, stderr_tail, error words

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._proc: QProcess | None = None
        self._out = bytearray()
        self._err = bytearray()
        self._done = True

    def start(self, program: str, args: list[str], env: dict[str, str] | None = None) -> None:
        self.stop()
        self._out.clear()
        self._err.clear()
        self._done = False
        proc = QProcess(self)
        proc.setProgram(program)
        proc.setArguments(args)
        proc.setProcessEnvironment(_environment(env if env is not None else trainer_env()))
        proc.readyReadStandardOutput.connect(self._read_out)
        proc.readyReadStandardError.connect(self._read_err)
        proc.finished.connect(self._on_finished)
        proc.errorOccurred.connect(self._on_error)
        self._proc = proc
        proc.start()

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.state() != QProcess.ProcessState.NotRunning

    def stop(self) -> None:
        """Kill a command still running (e.g. the dialog closed), without emitting."""
        proc, self._proc = self._proc, None
        self._done = True
        if proc is None:
            return
        for sig in (proc.finished, proc.errorOccurred, proc.readyReadStandardOutput, proc.readyReadStandardError):
            try:
                sig.disconnect()
            except (RuntimeError, TypeError):
                pass
        if proc.state() != QProcess.ProcessState.NotRunning:
            proc.kill()
            proc.waitForFinished(2000)  # a killed child ends at once; avoids a zombie QProcess
        proc.deleteLater()

    def _read_out(self) -> None:
        if self._proc:
            self._out += bytes(self._proc.readAllStandardOutput())

    def _read_err(self) -> None:
        if self._proc:
            self._err += bytes(self._proc.readAllStandardError())
            del self._err[:-STDERR_TAIL]

    def _on_finished(self, code: int, status: QProcess.ExitStatus) -> None:
        crashed = status == QProcess.ExitStatus.CrashExit
        self._end(code == 0 and not crashed, code, "The command stopped unexpectedly." if crashed else "")

    def _on_error(self, error: QProcess.ProcessError) -> None:
        if error == QProcess.ProcessError.FailedToStart:
            program = self._proc.program() if self._proc else "?"
            self._end(False, -1, f"Could not start {program}. Check the trainer Python in Settings.")
        elif error == QProcess.ProcessError.Crashed:
            self._end(False, -1, "The command stopped unexpectedly.")
        # Timeouts and read/write errors are followed by `finished`, which ends it.

    def _end(self, ok: bool, code: int, words: str) -> None:
        if self._done:
            return
        self._done = True
        self._read_out()
        self._read_err()
        proc, self._proc = self._proc, None
        out = self._out.decode("utf-8", "replace")
        err = self._err.decode("utf-8", "replace")
        if proc is not None:
            proc.deleteLater()
        self.ended.emit(ok, code, out, err, words)


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
    with open(log_path, "ab") as log, _environment_for_call(trainer_env(hf_token=hf_token)), _streams_to(log):
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
