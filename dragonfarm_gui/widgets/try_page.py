"""Try it: chat with the fine-tuned model, or with it and the base model side by side.

The model runs in one `serve` process (ChatProcess) that is started on the
first message and kept between messages, so it loads once; replies arrive
token by token and the window never waits for them. Each side keeps its own
conversation, so each model sees its own earlier replies.
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QKeySequence, QShortcut, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (QCheckBox, QDoubleSpinBox, QHBoxLayout, QLabel, QMenu, QPlainTextEdit, QPushButton,
                               QSpinBox, QSplitter, QTextBrowser, QToolButton, QVBoxLayout, QWidget)

from trainer.run.decoding import DEFAULT_REPETITION_PENALTY, Decoding
from trainer.run.decoding import HELP as DECODING_HELP
from trainer.run.decoding import LIMITS as DECODING_LIMITS
from trainer.run.reader import Run

from ..logic import theme
from ..process.chat_process import ChatProcess

SIDES = {"base": "Base model (before training)", "finetuned": "Your fine-tuned model"}


class ChatPane(QWidget):
    """One model's side of the conversation."""

    def __init__(self, side: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.side = side
        self.history: list[dict[str, str]] = []
        self.partial = ""
        self.title = QLabel(f"<b>{SIDES[side]}</b>")
        self.view = QTextBrowser()
        self.view.setObjectName(f"chat_{side}")
        self.view.setAccessibleName(SIDES[side])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(self.view, 1)

    def append(self, text: str, bold: bool = False, color: str | None = None) -> None:
        cursor = self.view.textCursor()
        cursor.movePosition(QTextCursor.MoveOperation.End)
        fmt = QTextCharFormat()
        fmt.setFontWeight(QFont.Weight.Bold if bold else QFont.Weight.Normal)
        if color:
            fmt.setForeground(QColor(color))
        cursor.insertText(text, fmt)
        self.view.setTextCursor(cursor)
        self.view.ensureCursorVisible()

    def add_user(self, text: str) -> None:
        self.history.append({"role": "user", "content": text})
        self.partial = ""
        self.append(("\n\n" if self.view.toPlainText() else "") + "You: ", bold=True, color=theme.color("accent"))
        self.append(text)
        self.append("\n" + ("Base: " if self.side == "base" else "Fine-tuned: "), bold=True, color=theme.color("good"))

    def add_piece(self, text: str) -> None:
        self.partial += text
        self.append(text)

    def end_reply(self, kind: str, text: str) -> None:
        if kind == "error":
            self.append(f"(no reply: {text})", color=theme.color("bad"))
            self.history.pop() if self.history and self.history[-1]["role"] == "user" else None
            return
        reply = (text or self.partial).strip()
        if kind == "stopped":
            self.append("  (stopped)", color=theme.color("muted"))
        self.history.append({"role": "assistant", "content": reply})
        self.partial = ""

    def clear(self) -> None:
        self.history.clear()
        self.partial = ""
        self.view.clear()


class TryPage(QWidget):
    def __init__(self, run_dir: str | Path, parent: QWidget | None = None):
        super().__init__(parent)
        self.run = Run(run_dir)
        self.use_last = False  # the run tools window's choice: the last adapter instead of the best one
        self.process = ChatProcess(self)
        self.process.ready.connect(self._on_ready)
        self.process.token.connect(self._on_token)
        self.process.reply_ended.connect(self._on_reply_ended)
        self.process.failed.connect(self._on_failed)
        self.owner: dict[str, ChatPane | None] = {}  # request id -> its pane (None: cleared away)

        self.header = QLabel()
        self.header.setWordWrap(True)
        self.header.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.compare = QCheckBox("Side by side with the base model")
        self.compare.setToolTip("Send each message to the model before training too, to see what changed")
        self.compare.toggled.connect(self._on_compare)
        self.temperature = QDoubleSpinBox()
        self.temperature.setRange(0.0, 2.0)
        self.temperature.setSingleStep(0.1)
        self.temperature.setValue(0.0)
        self.temperature.setToolTip(DECODING_HELP["temperature"])
        self.temperature.setAccessibleName("Temperature")
        low, high = DECODING_LIMITS["repetition_penalty"]
        self.repetition = QDoubleSpinBox()
        self.repetition.setRange(low, high)
        self.repetition.setSingleStep(0.05)
        self.repetition.setValue(DEFAULT_REPETITION_PENALTY)
        self.repetition.setToolTip(DECODING_HELP["repetition_penalty"])
        self.repetition.setAccessibleName("Repetition penalty")
        self.length = QSpinBox()
        self.length.setRange(8, 2048)
        self.length.setValue(256)
        self.length.setSingleStep(32)
        self.length.setToolTip("The longest reply, in tokens (about ¾ of a word each)")
        self.state = QLabel("The model loads when you send the first message.")
        self.state.setProperty("tone", "muted")
        controls = QHBoxLayout()
        controls.addWidget(self.compare)
        controls.addSpacing(12)
        controls.addWidget(QLabel("Temperature"))
        controls.addWidget(self.temperature)
        controls.addWidget(QLabel("Repetition penalty"))
        controls.addWidget(self.repetition)
        controls.addWidget(QLabel("Longest reply"))
        controls.addWidget(self.length)
        controls.addStretch(1)
        self.questions_button = QToolButton()
        self.questions_button.setText("Ask a sample question")
        self.questions_button.setToolTip("Put one of the run's sample questions (your own test questions first) "
                                         "in the message box")
        self.questions_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.questions_button.setMenu(QMenu(self.questions_button))
        self.questions_button.menu().aboutToShow.connect(self._fill_questions)
        self.questions_button.setVisible(bool(self.sample_questions()))
        controls.addWidget(self.questions_button)

        self.panes = {side: ChatPane(side) for side in SIDES}
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.panes["base"])
        split.addWidget(self.panes["finetuned"])
        split.setChildrenCollapsible(False)
        self.panes["base"].hide()

        self.input = QPlainTextEdit()
        self.input.setPlaceholderText("Write a message (Ctrl+Enter sends)")
        self.input.setMaximumHeight(90)
        self.input.setAccessibleName("Your message")
        self.send_button = QPushButton("Send")
        self.send_button.setDefault(True)
        self.send_button.clicked.connect(self.send)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop the reply being written")
        self.stop_button.clicked.connect(self.stop)
        self.clear_button = QPushButton("New conversation")
        self.clear_button.clicked.connect(self.clear)
        for keys in ("Ctrl+Return", "Ctrl+Enter"):
            QShortcut(QKeySequence(keys), self.input, activated=self.send)
        buttons = QVBoxLayout()
        for b in (self.send_button, self.stop_button, self.clear_button):
            buttons.addWidget(b)
        bottom = QHBoxLayout()
        bottom.addWidget(self.input, 1)
        bottom.addLayout(buttons)

        layout = QVBoxLayout(self)
        layout.addWidget(self.header)
        layout.addLayout(controls)
        layout.addWidget(split, 1)
        layout.addWidget(self.state)
        layout.addLayout(bottom)
        self.refresh_header()
        self._update_buttons()

    # ----- public ----------------------------------------------------------------
    def refresh_header(self) -> None:
        v = self.run.verdict()
        text = f"<b>Try {self.run.name}</b>"
        if v:
            text += f" &nbsp; <b>Did it learn?</b> {v.get('title') or v['verdict'].capitalize()}. {v['text']}"
        self.header.setText(text)

    def busy(self) -> bool:
        return bool(self.owner)

    def sample_questions(self) -> list[str]:
        """The run's sample questions, your own test questions first, each once."""
        seen: list[str] = []
        for sample in self.run.samples():
            prompt = sample.get("prompt")
            if isinstance(prompt, str) and prompt.strip() and prompt not in seen:
                seen.append(prompt)
        return seen

    def _fill_questions(self) -> None:
        menu = self.questions_button.menu()
        menu.clear()
        for question in self.sample_questions():
            shown = question if len(question) <= 90 else question[:89] + "…"
            action = menu.addAction(shown.replace("&", "&&").replace("\n", " "))
            action.setToolTip(question)
            action.triggered.connect(lambda _on=False, q=question: self.ask(q))

    def ask(self, question: str) -> None:
        """Put a question in the message box (to send as it is, or change first)."""
        self.input.setPlainText(question)
        self.input.setFocus()
        self.input.moveCursor(QTextCursor.MoveOperation.End)

    def send(self, text: str | None = None) -> None:
        text = (text if isinstance(text, str) else self.input.toPlainText()).strip()
        if not text or self.busy():
            return
        if not self.process.is_running():
            if not self.process.start(self.run.path, compare=True, last=self.use_last):
                return
            self.state.setText("Loading the model… (once; the reply follows)")
        self.input.clear()
        sides = ["base", "finetuned"] if self.compare.isChecked() else ["finetuned"]
        for side in sides:
            pane = self.panes[side]
            pane.add_user(text)
            rid = self.process.generate(pane.history, side, self.decoding())
            self.owner[rid] = pane
        self._update_buttons()

    def decoding(self) -> Decoding:
        """The controls' values, the same decoding the samples and the command line use by default."""
        return Decoding(temperature=self.temperature.value(), repetition_penalty=self.repetition.value(),
                        max_new_tokens=self.length.value()).clamped()

    def stop(self) -> None:
        if self.busy():
            self.process.stop()
            self.state.setText("Stopping…")

    def clear(self) -> None:
        if self.busy():
            self.process.stop()
            self.owner = dict.fromkeys(self.owner)  # their last words go nowhere
        for pane in self.panes.values():
            pane.clear()

    def set_use_last(self, last: bool) -> None:
        """Answer with the last (or best) adapter from the next message on: the model process restarts."""
        if last != self.use_last:
            self.use_last = last
            if self.process.is_running():
                self.shutdown()
                self.state.setText("The next message loads the " + ("last" if last else "best") + " adapter.")

    def shutdown(self) -> None:
        self.process.shutdown()
        self.owner.clear()
        self._update_buttons()

    # ----- events ------------------------------------------------------------------
    def _on_compare(self, on: bool) -> None:
        self.panes["base"].setVisible(on)

    def _on_ready(self, event: dict) -> None:
        self.state.setText(f"Ready (on {event.get('device', '?')})." if event.get("finetuned", True) else
                           "Ready. This run has no trained adapter yet: only the base model can answer.")

    def _on_token(self, rid: str, text: str) -> None:
        pane = self.owner.get(rid)
        if pane is not None:
            pane.add_piece(text)
            if self.state.text().startswith("Loading"):
                self.state.setText("Writing…")

    def _on_reply_ended(self, rid: str, kind: str, text: str) -> None:
        pane = self.owner.pop(rid, None)
        if pane is not None:
            pane.end_reply(kind, text)
        if not self.owner:
            self.state.setText({"done": "Ready.", "stopped": "Stopped.", "error": "Ready."}.get(kind, "Ready."))
        self._update_buttons()

    def _on_failed(self, words: str) -> None:
        for pane in self.owner.values():
            if pane is not None:
                pane.end_reply("error", "the model process ended")
        self.owner.clear()
        self.state.setText(words)
        self._update_buttons()

    def _update_buttons(self) -> None:
        busy = self.busy()
        self.send_button.setEnabled(not busy)
        self.stop_button.setEnabled(busy)
