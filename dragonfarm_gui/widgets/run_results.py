"""The end-of-run part of the run page: "Did it learn?" and the samples."""
from __future__ import annotations

from PySide6.QtWidgets import QFrame, QLabel, QTextBrowser, QVBoxLayout, QWidget

from trainer.run.reader import Run, verdict

from ..logic import theme
from ..logic.runview import samples_html

VERDICT_TONES = {"learned": "good", "little change": "warn", "worse": "bad", "overfitting": "alert"}


class RunResults(QWidget):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.verdict_title = QLabel()
        self.verdict_title.setObjectName("verdictTitle")
        self.verdict_text = QLabel()
        self.verdict_text.setWordWrap(True)
        self.verdict_next = QLabel()
        self.verdict_next.setWordWrap(True)
        self.verdict_next.setProperty("tone", "muted")
        box = QFrame()
        box.setObjectName("verdictBox")
        box.setFrameShape(QFrame.Shape.StyledPanel)
        inner = QVBoxLayout(box)
        for w in (self.verdict_title, self.verdict_text, self.verdict_next):
            inner.addWidget(w)
        self.verdict_box = box
        self.samples = QTextBrowser()
        self.samples.setOpenLinks(False)
        self.samples.setMinimumHeight(90)
        self.samples.setToolTip("Replies to held-out prompts from the model before and after training.")
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
        self.verdict = verdict(run.eval(), run.progress())
        if self.verdict:
            color = theme.color(VERDICT_TONES.get(self.verdict["verdict"], "text"))
            self.verdict_title.setText(f"<span style='font-size:13pt'><b>Did it learn?</b> "
                                       f"<span style='color:{color}'>{self.verdict['verdict'].capitalize()}</span></span>")
            self.verdict_text.setText(self.verdict["text"])
            self.verdict_next.setText("Next: " + self.verdict["next"])
            self.verdict_box.show()
        else:
            self.verdict_box.hide()
        self.samples.setHtml(samples_html(run.samples()))
