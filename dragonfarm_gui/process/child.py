"""The one QProcess life cycle that every attached child of the app shares.

A subclass starts a program with `_launch`, reads stdout as it arrives in
`_stdout_arrived` (with `_take_lines` for line protocols), and hears about the
end exactly once in `_process_ended`, whether it came from `finished` or
`errorOccurred`. stderr is kept only as a tail, for the message. `_forget`
drops a process without any signal: it may say goodbye on stdin, and a timer
kills it if it has not ended by then. Nothing here waits on the GUI thread: a
forgotten process is kept (parentless, in FORGOTTEN) until Qt sees it end,
which also reaps it; `reap_forgotten` waits for the rest once the event loop
has stopped (the app's last step).
"""
from __future__ import annotations

from PySide6.QtCore import QObject, QProcess, QProcessEnvironment, QTimer

from trainer.run.launch import trainer_env

STDERR_TAIL = 8000
FORGOTTEN: set[QProcess] = set()  # asked to end, not yet ended


def _let_go(proc: QProcess, goodbye: bytes | None, wait_ms: int) -> None:
    """End a process without waiting: goodbye on stdin and a kill after wait_ms, or a kill now."""
    proc.setParent(None)  # outlives its owner; FORGOTTEN holds it until it has ended
    FORGOTTEN.add(proc)

    def ended(*_args) -> None:
        if proc in FORGOTTEN:
            FORGOTTEN.discard(proc)
            try:
                proc.deleteLater()
            except RuntimeError:  # Qt already deleted it: the interpreter is exiting with it still running
                pass

    proc.finished.connect(ended)
    proc.errorOccurred.connect(lambda error: error == QProcess.ProcessError.FailedToStart and ended())
    if goodbye is not None:
        proc.write(goodbye)
        proc.closeWriteChannel()
        QTimer.singleShot(max(0, wait_ms), proc, proc.kill)  # cancelled with proc once it has ended
    else:
        proc.kill()


def reap_forgotten(timeout_ms: int = 3000) -> int:
    """After the event loop: kill and wait for forgotten processes; returns how many were still running."""
    left = 0
    for proc in list(FORGOTTEN):
        if proc.state() != QProcess.ProcessState.NotRunning:
            left += 1
            proc.kill()
            proc.waitForFinished(timeout_ms)
        FORGOTTEN.discard(proc)
    return left


def qt_environment(env: dict[str, str]) -> QProcessEnvironment:
    qenv = QProcessEnvironment()
    for key, value in env.items():
        qenv.insert(key, value)
    return qenv


class ChildProcess(QObject):
    WHAT = ""  # how messages name the process, e.g. "the model process"; else its program

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._proc: QProcess | None = None
        self._out = bytearray()
        self._err = bytearray()
        self._done = True

    # ----- for subclasses ---------------------------------------------------
    def _launch(self, program: str, args: list[str], env: dict[str, str] | None = None) -> None:
        self._forget()
        self._out.clear()
        self._err.clear()
        self._done = False
        proc = QProcess(self)
        proc.setProgram(program)
        proc.setArguments(args)
        proc.setProcessEnvironment(qt_environment(env if env is not None else trainer_env()))
        proc.readyReadStandardOutput.connect(self._read_out)
        proc.readyReadStandardError.connect(self._read_err)
        proc.finished.connect(self._on_finished)
        proc.errorOccurred.connect(self._on_error)
        self._proc = proc
        proc.start()

    def _stdout_arrived(self) -> None:
        """New bytes are in self._out; the default keeps them all."""

    def _process_ended(self, ok: bool, code: int, words: str) -> None:
        """Called once per launch; `words` is set when the end needs explaining."""

    def _take_lines(self, flush: bool = False) -> list[str]:
        """Complete lines from stdout (and, with flush, the unfinished last one)."""
        data = bytes(self._out)
        parts = data.split(b"\n")
        rest = b"" if flush else parts.pop()
        self._out = bytearray(rest)
        return [p.decode("utf-8", "replace").rstrip("\r") for p in parts if p or flush]

    def _forget(self, goodbye: bytes | None = None, wait_ms: int = 0) -> None:
        proc, self._proc = self._proc, None
        self._done = True
        if proc is None:
            return
        for sig in (proc.finished, proc.errorOccurred, proc.readyReadStandardOutput, proc.readyReadStandardError):
            try:
                sig.disconnect()
            except (RuntimeError, TypeError):
                pass
        if proc.state() == QProcess.ProcessState.NotRunning:
            proc.deleteLater()
        else:
            _let_go(proc, goodbye, wait_ms)

    # ----- shared -----------------------------------------------------------
    def is_running(self) -> bool:
        return self._proc is not None and self._proc.state() != QProcess.ProcessState.NotRunning

    def stderr_tail(self) -> str:
        return self._err.decode("utf-8", "replace")

    def _read_out(self) -> None:
        if self._proc is not None:
            self._out += bytes(self._proc.readAllStandardOutput())
            self._stdout_arrived()

    def _read_err(self) -> None:
        if self._proc is not None:
            self._err += bytes(self._proc.readAllStandardError())
            del self._err[:-STDERR_TAIL]

    def _on_finished(self, code: int, status: QProcess.ExitStatus) -> None:
        crashed = status == QProcess.ExitStatus.CrashExit
        self._end(code == 0 and not crashed, code, "The command stopped unexpectedly." if crashed else "")

    def _on_error(self, error: QProcess.ProcessError) -> None:
        if error == QProcess.ProcessError.FailedToStart:
            program = self._proc.program() if self._proc else "?"
            named = f"{self.WHAT} ({program})" if self.WHAT else program
            self._end(False, -1, f"Could not start {named}. Check the trainer Python in Settings.")
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
        if proc is not None:
            proc.deleteLater()
        self._process_ended(ok, code, words)
