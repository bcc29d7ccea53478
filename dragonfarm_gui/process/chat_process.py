"""The Try page's model process: `python -m trainer serve RUN_DIR --compare` as a
QProcess, spoken to in JSON lines (docs/chat-protocol.md).

Output is read as it arrives (readyRead), split into lines and turned into
signals; nothing here waits on the GUI thread except shutdown(), which gives
the process a moment to quit before killing it. The end of the process is
handled once, from `finished` or `errorOccurred`.
"""
from __future__ import annotations

import json
from itertools import count
from pathlib import Path

from PySide6.QtCore import QObject, QProcess, QProcessEnvironment, Signal

from trainer.launch import NoTrainerPython, trainer_command, trainer_env
from trainer.settings import load_settings

STDERR_TAIL = 8000
_ids = count(1)


def _environment(env: dict[str, str]) -> QProcessEnvironment:
    qenv = QProcessEnvironment()
    for key, value in env.items():
        qenv.insert(key, value)
    return qenv


class ChatProcess(QObject):
    ready = Signal(dict)               # the ready event
    token = Signal(str, str)           # request id, next piece of text
    reply_ended = Signal(str, str, str)  # request id, "done" | "stopped" | "error", text
    failed = Signal(str)               # the process could not start or ended; in words

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._proc: QProcess | None = None
        self._buffer = bytearray()
        self._err = bytearray()
        self._ended = True
        self._quitting = False
        self._fatal = ""
        self.is_ready = False
        self.pending: set[str] = set()

    # ----- life cycle ----------------------------------------------------------
    def start(self, run_dir: str | Path, compare: bool = True) -> bool:
        self.shutdown()
        try:
            program, args = trainer_command("serve", str(Path(run_dir)), *(["--compare"] if compare else []),
                                            settings=load_settings())
        except NoTrainerPython as exc:
            self.failed.emit(str(exc))
            return False
        self._buffer.clear()
        self._err.clear()
        self._ended, self._quitting, self._fatal, self.is_ready = False, False, "", False
        proc = QProcess(self)
        proc.setProgram(program)
        proc.setArguments(args)
        proc.setProcessEnvironment(_environment(trainer_env()))
        proc.readyReadStandardOutput.connect(self._read_out)
        proc.readyReadStandardError.connect(self._read_err)
        proc.finished.connect(self._on_finished)
        proc.errorOccurred.connect(self._on_error)
        self._proc = proc
        proc.start()
        return True

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.state() != QProcess.ProcessState.NotRunning

    def shutdown(self, wait_ms: int = 1500) -> None:
        """Ask the process to quit, kill it if it does not, and forget it (no signals)."""
        proc, self._proc = self._proc, None
        self._ended = True
        self.is_ready = False
        self.pending.clear()
        if proc is None:
            return
        for sig in (proc.finished, proc.errorOccurred, proc.readyReadStandardOutput, proc.readyReadStandardError):
            try:
                sig.disconnect()
            except (RuntimeError, TypeError):
                pass
        if proc.state() != QProcess.ProcessState.NotRunning:
            proc.write(b'{"op": "quit"}\n')
            proc.closeWriteChannel()
            if not proc.waitForFinished(wait_ms):
                proc.kill()
                proc.waitForFinished(2000)
        proc.deleteLater()

    # ----- requests ------------------------------------------------------------
    def generate(self, messages: list[dict[str, str]], which: str = "finetuned", temperature: float = 0.0,
                 max_new_tokens: int = 256) -> str:
        rid = f"{which}-{next(_ids)}"
        self._send({"id": rid, "op": "generate", "messages": messages, "which": which,
                    "temperature": temperature, "max_new_tokens": max_new_tokens})
        self.pending.add(rid)
        return rid

    def stop(self) -> None:
        self._send({"op": "stop"})

    def _send(self, request: dict) -> None:
        if self._proc is not None and self.is_running():
            self._proc.write((json.dumps(request) + "\n").encode("utf-8"))

    # ----- output --------------------------------------------------------------
    def _read_out(self) -> None:
        if self._proc is None:
            return
        self._buffer += bytes(self._proc.readAllStandardOutput())
        while b"\n" in self._buffer:
            line, _, rest = bytes(self._buffer).partition(b"\n")
            self._buffer = bytearray(rest)
            self._handle_line(line.decode("utf-8", "replace").strip())

    def _handle_line(self, line: str) -> None:
        if not line:
            return
        try:
            event = json.loads(line)
        except ValueError:
            return  # not a protocol line
        if not isinstance(event, dict):
            return
        kind, rid, text = event.get("event"), event.get("id"), str(event.get("text") or "")
        if kind == "ready":
            self.is_ready = True
            self.ready.emit(event)
        elif kind == "token" and rid:
            self.token.emit(str(rid), text)
        elif kind in ("done", "stopped", "error") and rid:
            self.pending.discard(str(rid))
            self.reply_ended.emit(str(rid), kind, text)
        elif kind == "error" and event.get("fatal"):
            self._fatal = text

    def _read_err(self) -> None:
        if self._proc is not None:
            self._err += bytes(self._proc.readAllStandardError())
            del self._err[:-STDERR_TAIL]

    def stderr_tail(self) -> str:
        return self._err.decode("utf-8", "replace")

    def _on_finished(self, code: int, status: QProcess.ExitStatus) -> None:
        self._end()

    def _on_error(self, error: QProcess.ProcessError) -> None:
        if error == QProcess.ProcessError.FailedToStart:
            program = self._proc.program() if self._proc else "?"
            self._end(f"Could not start the model process ({program}). Check the trainer Python in Settings.")
        elif error == QProcess.ProcessError.Crashed:
            self._end()

    def _end(self, words: str = "") -> None:
        if self._ended:
            return
        self._ended = True
        self._read_out()
        self._read_err()
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.deleteLater()
        self.is_ready = False
        self.pending.clear()
        if not words:
            lines = [x for x in self.stderr_tail().strip().splitlines() if x.strip()]
            words = self._fatal or ("The model process stopped unexpectedly." +
                                    (f" Its last words: {lines[-1][:300]}" if lines else ""))
        self.failed.emit(words)
