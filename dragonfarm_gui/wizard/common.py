"""What every wizard page shares: the red line that says why Next is blocked."""
from __future__ import annotations

from PySide6.QtWidgets import QLabel, QWizardPage


class BlockingPage(QWizardPage):
    """A page whose Next stays disabled while `problem()` returns a reason,
    and that shows the reason in words under the page."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.reason = QLabel()
        self.reason.setObjectName("wizardReason")
        self.reason.setWordWrap(True)
        self.reason.setStyleSheet("color:#c62828; font-weight:600")
        self.reason.setAccessibleName("Why you cannot continue yet")

    @property
    def choices(self):
        return self.wizard().choices

    def problem(self) -> str | None:  # pragma: no cover - each page overrides
        return None

    def isComplete(self) -> bool:  # noqa: N802
        if self.wizard() is None:
            return False
        reason = self.problem()
        self.reason.setText(reason or "")
        self.reason.setVisible(bool(reason))
        return reason is None

    def changed(self, *_args) -> None:
        self.completeChanged.emit()
