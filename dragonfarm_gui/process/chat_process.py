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

from PySide6.QtCore import QObject, Signal

from trainer.run.decoding import Decoding
from trainer.run.launch import NoTrainerPython, trainer_command
from trainer.run.settings import load_settings

from .child import ChildProcess

_ids = count(1)


class ChatProcess(ChildProcess):
    WHAT = "the model process"

    ready = Signal(dict)               # the ready event
    token = Signal(str, str)           # request id, next piece of text
    reply_ended = Signal(str, str, str)  # request id, "done" | "stopped" | "error", text
    failed = Signal(str)               # the process could not start or ended; in words

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._fatal = ""
        self.is_ready = False
        self.pending: set[str] = set()

    # ----- life cycle ----------------------------------------------------------
    def start(self, run_dir: str | Path, compare: bool = True, last: bool = False) -> bool:
        """last: the adapter from the last step instead of the best held-out point's."""
        self.shutdown()
        try:
            program, args = trainer_command("serve", str(Path(run_dir)), *(["--compare"] if compare else []),
                                            *(["--last"] if last else []), settings=load_settings())
        except NoTrainerPython as exc:
            self.failed.emit(str(exc))
            return False
        self._fatal, self.is_ready = "", False
        self._launch(program, args)
        return True

    def shutdown(self, wait_ms: int = 1500) -> None:
        """Ask the process to quit, kill it if it does not, and forget it (no signals)."""
        self.is_ready = False
        self.pending.clear()
        self._forget(goodbye=b'{"op": "quit"}\n', wait_ms=wait_ms)

    # ----- requests ------------------------------------------------------------
    def generate(self, messages: list[dict[str, str]], which: str = "finetuned",
                 decoding: Decoding | None = None) -> str:
        d = decoding or Decoding()
        rid = f"{which}-{next(_ids)}"
        self._send({"id": rid, "op": "generate", "messages": messages, "which": which,
                    "temperature": d.temperature, "repetition_penalty": d.repetition_penalty,
                    "max_new_tokens": d.max_new_tokens})
        self.pending.add(rid)
        return rid

    def stop(self) -> None:
        self._send({"op": "stop"})

    def _send(self, request: dict) -> None:
        if self._proc is not None and self.is_running():
            self._proc.write((json.dumps(request) + "\n").encode("utf-8"))

    # ----- output --------------------------------------------------------------
    def _stdout_arrived(self) -> None:
        for line in self._take_lines():
            self._handle_line(line.strip())

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

    def _process_ended(self, ok: bool, code: int, words: str) -> None:
        self.is_ready = False
        self.pending.clear()
        if not words.startswith("Could not start"):
            lines = [x for x in self.stderr_tail().strip().splitlines() if x.strip()]
            words = self._fatal or ("The model process stopped unexpectedly." +
                                    (f" Its last words: {lines[-1][:300]}" if lines else ""))
        self.failed.emit(words)
