"""The results part of the run page: the coach's words ("Did it learn?", while
training too) and the sample replies. The words come from trainer.run.coach."""
from __future__ import annotations

from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QSizePolicy, QTextBrowser, QVBoxLayout, QWidget

from trainer.run.reader import Run

from ..logic.runview import samples_html
from ..style import set_style_property

VERDICT_TONES = {"learned": "good", "improving": "good", "little change": "warn", "worse": "bad", "nan": "bad",
                 "overfitting": "alert", "unchecked": ""}


class RunResults(QWidget):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.verdict_title = QLabel()
        self.verdict_title.setObjectName("verdictTitle")
        self.verdict_word = QLabel()
        self.verdict_word.setObjectName("verdictWord")
        self.verdict_text = QLabel()
        self.verdict_text.setWordWrap(True)
        self.verdict_next = QLabel()
        self.verdict_next.setObjectName("verdictNext")
        self.verdict_next.setWordWrap(True)
        self.verdict_next.setProperty("tone", "muted")
        box = QFrame()
        box.setObjectName("verdictBox")
        box.setFrameShape(QFrame.Shape.StyledPanel)
        inner = QVBoxLayout(box)
        head = QHBoxLayout()
        head.addWidget(self.verdict_title)
        head.addWidget(self.verdict_word)
        head.addStretch(1)
        inner.addLayout(head)
        for w in (self.verdict_text, self.verdict_next):
            inner.addWidget(w)
        # the coach's words wrap over two or three lines: the box keeps the height they need
        # (the sample replies below give way instead)
        box.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
        self.verdict_box = box
        self.samples = QTextBrowser()
        self.samples.setOpenLinks(False)
        self.samples.setMinimumHeight(90)
        self.samples.setToolTip("Replies from the model before and after training: to your own test questions, "
                                "then to held-out prompts.")
        self.samples.setAccessibleName("Sample replies")
        samples_title = QLabel("<b>Sample replies</b>")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(box)
        layout.addWidget(samples_title)
        layout.addWidget(self.samples, 1)
        self.verdict: dict | None = None
        self.show_run(None)

    def show_run(self, run: Run | None) -> None:
        if run is None:
            self.verdict = None
            self.verdict_box.hide()
            self.samples.setHtml(samples_html([]))
            return
        self.verdict = run.verdict()
        if self.verdict:
            live = self.verdict.get("live")
            self.verdict_title.setText("<b>How is it going?</b>" if live else "<b>Did it learn?</b>")
            self.verdict_word.setText(self.verdict.get("title") or self.verdict["verdict"].capitalize())
            set_style_property(self.verdict_word, "tone", VERDICT_TONES.get(self.verdict["verdict"], ""))
            self.verdict_text.setText(self.verdict["text"])
            self.verdict_next.setText("Next: " + self.verdict["next"])
            self.verdict_box.show()
        else:
            self.verdict_box.hide()
        self.samples.setHtml(samples_html(run.samples()))
