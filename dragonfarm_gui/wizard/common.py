"""What every wizard page shares: the red line that says why Next is blocked,
Next held back while the page's worker runs, and the row that shows that work."""
from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QWidget, QWizardPage


class BlockingPage(QWizardPage):
    """A page whose Next stays disabled while `problem()` returns a reason or
    `busy()` is true, and that shows the reason in words under the page."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.reason = QLabel()
        self.reason.setObjectName("wizardReason")
        self.reason.setWordWrap(True)
        self.reason.setAccessibleName("Why you cannot continue yet")

    @property
    def choices(self):
        return self.wizard().choices

    def problem(self) -> str | None:  # pragma: no cover - each page overrides
        return None

    def busy(self) -> bool:
        """True while the page's worker runs (its progress row says what it does)."""
        return False

    def stop_work(self) -> None:
        """Cancel the page's worker (the wizard is closing)."""

    def isComplete(self) -> bool:  # noqa: N802
        if self.wizard() is None:
            return False
        reason = None if self.busy() else self.problem()
        self.reason.setText(reason or "")
        self.reason.setVisible(bool(reason))
        return reason is None and not self.busy()

    def changed(self, *_args) -> None:
        self.completeChanged.emit()


class ProgressRow(QWidget):
    """A progress bar, what is being done in words, and one button (stop, or
    the page's way to start again)."""
    button_clicked = Signal()

    def __init__(self, what: str, stop_text: str = "Stop", parent=None):
        super().__init__(parent)
        self.setObjectName("progressRow")
        self.stop_text = stop_text  # not "Cancel": that is the wizard's own button, which closes it
        self.bar = QProgressBar()
        self.bar.setFixedWidth(220)
        self.bar.setTextVisible(False)
        self.bar.setAccessibleName(what)
        self.label = QLabel()
        self.label.setProperty("tone", "muted")
        self.label.setWordWrap(True)
        self.button = QPushButton(stop_text)
        self.button.clicked.connect(self.button_clicked)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.bar)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.button)
        self.hide()

    def show_busy(self, words: str, per_mille: int | None = None, tip: str = "Stop") -> None:
        """Show the work: a bar (busy when per_mille is None), the words, and the stop button."""
        if per_mille is None:
            self.bar.setRange(0, 0)
        else:
            self.bar.setRange(0, 1000)
            self.bar.setValue(per_mille)
        self.bar.show()
        self.label.setText(words)
        self.button.setText(self.stop_text)
        self.button.setToolTip(tip)
        self.button.show()
        self.show()

    def show_idle(self, words: str = "", button: str | None = None, tip: str = "") -> None:
        """No work: hidden, or the words and a button to start again."""
        self.bar.hide()
        self.label.setText(words)
        self.button.setVisible(button is not None)
        if button is not None:
            self.button.setText(button)
            self.button.setToolTip(tip)
        self.setVisible(bool(words) or button is not None)
