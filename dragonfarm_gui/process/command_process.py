"""One `python -m trainer …` command (merge, export, pack) as a QProcess whose
stdout lines arrive as they are printed, for a live progress view.

stdout carries the command's messages in words; stderr (warnings, progress
bars) is only kept as a tail for the message when the command fails. The end
is handled once, from `finished` or `errorOccurred`; nothing waits on the GUI
thread except stop(), which kills and reaps.
"""
from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from trainer.run.launch import NoTrainerPython, trainer_command, trainer_env
from trainer.run.settings import load_settings

from .child import ChildProcess

class CommandProcess(ChildProcess):
    line = Signal(str)                 # one line the command printed
    ended = Signal(bool, int, str)     # ok, exit code, words when it failed

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.lines: list[str] = []

    def start(self, *args: str, hf_token: str | None = None) -> bool:
        """hf_token goes only into the child's environment (HF_TOKEN), for `push`."""
        self.stop()
        try:
            program, arguments = trainer_command(*args, settings=load_settings())
        except NoTrainerPython as exc:
            self.ended.emit(False, -1, str(exc))
            return False
        self.lines = []
        self._launch(program, arguments, trainer_env(hf_token=hf_token) if hf_token else None)
        return True

    def stop(self) -> None:
        self._forget()

    def _stdout_arrived(self, flush: bool = False) -> None:
        for text in self._take_lines(flush):
            if text.strip():
                self.lines.append(text.rstrip())
                self.line.emit(text.rstrip())

    def _process_ended(self, ok: bool, code: int, words: str) -> None:
        self._stdout_arrived(flush=True)
        if not ok and not words:
            words = failure_words(self.stderr_tail(), code)
        self.ended.emit(ok, code, words)


def failure_words(stderr: str, code: int) -> str:
    """The CLI's own message ("dragonfarm: what went wrong" and the fix on the next line), else its last line."""
    lines = [x.strip() for x in stderr.splitlines() if x.strip()]
    for i, text in enumerate(lines):
        if text.startswith("dragonfarm: "):
            return " ".join([text[len("dragonfarm: "):]] + lines[i + 1:i + 2])
    return lines[-1][:300] if lines else f"The command ended with code {code}."
