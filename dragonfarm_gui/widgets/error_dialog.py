"""The one place errors reach the person: words first, "Show log" for the rest."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (QApplication, QDialog, QDialogButtonBox, QHBoxLayout, QLabel, QPlainTextEdit,
                               QPushButton, QStyle, QVBoxLayout, QWidget)

LOG_TAIL = 60000


def read_log_tail(path: str | Path | None, limit: int = LOG_TAIL) -> str:
    if not path:
        return ""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return f"(No log at {path} yet.)"
    return data[-limit:].decode("utf-8", "replace")


class ErrorDialog(QDialog):
    def __init__(self, title: str, message: str, detail: str = "", log_path: str | Path | None = None,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(title)
        self.setMinimumWidth(480)
        icon = QLabel()
        icon.setPixmap(self.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning).pixmap(40, 40))
        text = QLabel(message)
        text.setObjectName("errorMessage")
        text.setWordWrap(True)
        text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        top = QHBoxLayout()
        top.addWidget(icon, 0, Qt.AlignmentFlag.AlignTop)
        top.addWidget(text, 1)

        self.log_path = log_path
        self.detail = QPlainTextEdit()
        self.detail.setReadOnly(True)
        self.detail.setMinimumHeight(240)
        self.detail.setPlainText("\n\n".join(x for x in (detail, read_log_tail(log_path)) if x))
        self.detail.hide()

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.log_button = QPushButton("Show log")
        self.log_button.setToolTip("Show the full technical details, for a help request")
        self.log_button.setCheckable(True)
        self.log_button.toggled.connect(self._toggle_log)
        self.log_button.setVisible(bool(self.detail.toPlainText()))
        self.copy_button = QPushButton("Copy")
        self.copy_button.setToolTip("Copy the message and the details to the clipboard")
        self.copy_button.clicked.connect(self.copy)
        buttons.addButton(self.log_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.addButton(self.copy_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        buttons.accepted.connect(self.accept)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.detail, 1)
        layout.addWidget(buttons)
        self.message = message

    def _toggle_log(self, on: bool) -> None:
        self.detail.setVisible(on)
        self.log_button.setText("Hide log" if on else "Show log")
        self.adjustSize()

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.message + "\n\n" + self.detail.toPlainText())


_open: list[ErrorDialog] = []


def show_error(parent: QWidget | None, title: str, message: str, detail: str = "",
               log_path: str | Path | None = None, modal: bool = True) -> ErrorDialog:
    """Show the error dialog (modeless when called from the exception hook)."""
    dialog = ErrorDialog(title, message, detail, log_path, parent or QApplication.activeWindow())
    if modal:
        dialog.exec()
    else:
        _open.append(dialog)
        dialog.finished.connect(lambda _r, d=dialog: _open.remove(d) if d in _open else None)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
    return dialog
