"""One `python -m trainer …` command (merge, export, pack) as a QProcess whose
stdout lines arrive as they are printed, for a live progress view.

stdout carries the command's messages in words; stderr (warnings, progress
bars) is only kept as a tail for the message when the command fails. The end
is handled once, from `finished` or `errorOccurred`; nothing waits on the GUI
thread except stop(), which kills and reaps.
"""
from __future__ import annotations

from PySide6.QtCore import QObject, QProcess, QProcessEnvironment, Signal

from trainer.launch import NoTrainerPython, trainer_command, trainer_env
from trainer.settings import load_settings

STDERR_TAIL = 8000


class CommandProcess(QObject):
    line = Signal(str)                 # one line the command printed
    ended = Signal(bool, int, str)     # ok, exit code, words when it failed

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._proc: QProcess | None = None
        self._buffer = bytearray()
        self._err = bytearray()
        self._done = True
        self.lines: list[str] = []

    def start(self, *args: str) -> bool:
        self.stop()
        try:
            program, arguments = trainer_command(*args, settings=load_settings())
        except NoTrainerPython as exc:
            self.ended.emit(False, -1, str(exc))
            return False
        self._buffer.clear()
        self._err.clear()
        self.lines = []
        self._done = False
        proc = QProcess(self)
        proc.setProgram(program)
        proc.setArguments(arguments)
        env = QProcessEnvironment()
        for key, value in trainer_env().items():
            env.insert(key, value)
        proc.setProcessEnvironment(env)
        proc.readyReadStandardOutput.connect(self._read_out)
        proc.readyReadStandardError.connect(self._read_err)
        proc.finished.connect(self._on_finished)
        proc.errorOccurred.connect(self._on_error)
        self._proc = proc
        proc.start()
        return True

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.state() != QProcess.ProcessState.NotRunning

    def stop(self) -> None:
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
            proc.waitForFinished(2000)
        proc.deleteLater()

    def _read_out(self, flush: bool = False) -> None:
        if self._proc is not None:
            self._buffer += bytes(self._proc.readAllStandardOutput())
        while b"\n" in self._buffer or (flush and self._buffer):
            raw, _, rest = bytes(self._buffer).partition(b"\n")
            self._buffer = bytearray(rest)
            text = raw.decode("utf-8", "replace").rstrip()
            if text.strip():
                self.lines.append(text)
                self.line.emit(text)

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
            self._end(False, -1, f"Could not start {program}. Check the trainer Python in Settings.")
        elif error == QProcess.ProcessError.Crashed:
            self._end(False, -1, "The command stopped unexpectedly.")

    def _end(self, ok: bool, code: int, words: str) -> None:
        if self._done:
            return
        self._done = True
        self._read_out(flush=True)
        self._read_err()
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.deleteLater()
        if not ok and not words:
            words = failure_words(self._err.decode("utf-8", "replace"), code)
        self.ended.emit(ok, code, words)


def failure_words(stderr: str, code: int) -> str:
    """The CLI's own message ("dragonfarm: what went wrong" and the fix on the next line), else its last line."""
    lines = [x.strip() for x in stderr.splitlines() if x.strip()]
    for i, text in enumerate(lines):
        if text.startswith("dragonfarm: "):
            return " ".join([text[len("dragonfarm: "):]] + lines[i + 1:i + 2])
    return lines[-1][:300] if lines else f"The command ended with code {code}."
