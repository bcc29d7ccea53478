"""Settings: where runs live, which Python trains, keeping the computer awake, and the Hugging Face token."""
from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QCheckBox, QDialog, QDialogButtonBox, QFileDialog, QFormLayout, QHBoxLayout, QLabel,
                               QLineEdit, QPushButton, QVBoxLayout, QWidget)

from trainer.run.launch import NoTrainerPython, trainer_python
from trainer.run.settings import load_settings, runs_dir, save_settings

from ..logic import tokens


class SettingsDialog(QDialog):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.setMinimumWidth(620)
        settings = load_settings()

        self.runs_edit = QLineEdit(str(settings.get("runs_dir") or ""))
        self.runs_edit.setPlaceholderText(str(runs_dir()))
        self.runs_edit.setToolTip("The folder where each run gets its own folder. Leave empty for the default.")
        runs_browse = QPushButton("Browse…")
        runs_browse.setToolTip("Choose the runs folder")
        runs_browse.clicked.connect(self._browse_runs)

        self.python_edit = QLineEdit(str(settings.get("trainer_python") or ""))
        try:
            default_python = trainer_python({})
        except NoTrainerPython:
            default_python = "the training environment DragonFarm sets up"
        self.python_edit.setPlaceholderText(f"Default: {default_python}")
        self.python_edit.setToolTip("The Python that runs training (it needs PyTorch). Leave empty for the default.")
        python_browse = QPushButton("Browse…")
        python_browse.setToolTip("Choose a Python program")
        python_browse.clicked.connect(self._browse_python)

        self.keep_awake = QCheckBox("Keep the computer awake while training")
        self.keep_awake.setChecked(settings.get("keep_awake", True) is not False)
        self.keep_awake.setToolTip("While a run trains, the computer does not go to sleep (the screen still may). "
                                   "Applies to runs started from now on.")

        self.token_edit = QLineEdit()
        self.token_edit.setEchoMode(QLineEdit.EchoMode.Password)
        has_token = bool(tokens.get_token())
        self.token_edit.setPlaceholderText("A token is saved (type to replace it)" if has_token else "hf_…")
        self.token_edit.setToolTip("Needed only for gated models such as Llama and Gemma. Make one at "
                                   "huggingface.co/settings/tokens (read access is enough).")
        self.remove_token = QPushButton("Remove")
        self.remove_token.setToolTip("Forget the saved token")
        self.remove_token.setEnabled(has_token)
        self.remove_token.clicked.connect(self._remove_token)
        token_note = QLabel(tokens.storage_note())
        token_note.setObjectName("tokenNote")
        token_note.setWordWrap(True)
        token_note.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.token_note = token_note
        token_note.setProperty("tone", "muted")
        self.problem = QLabel()
        self.problem.setProperty("tone", "bad")
        self.problem.setWordWrap(True)

        form = QFormLayout()
        form.addRow("Runs folder:", _row(self.runs_edit, runs_browse))
        form.addRow("Trainer Python:", _row(self.python_edit, python_browse))
        form.addRow("Sleep:", self.keep_awake)
        form.addRow("Hugging Face token:", _row(self.token_edit, self.remove_token))
        form.addRow("", token_note)
        from trainer.run.launch import is_frozen

        if is_frozen():
            repair = QPushButton("Repair training environment…")
            repair.setToolTip("Set up the training environment again (PyTorch and the libraries DragonFarm trains with)")
            repair.clicked.connect(self._repair)
            form.addRow("Training environment:", repair)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.problem)
        layout.addWidget(buttons)

    def _browse_runs(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Runs folder", self.runs_edit.text() or str(runs_dir()))
        if folder:
            self.runs_edit.setText(folder)

    def _browse_python(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Trainer Python", str(Path(sys.executable).parent))
        if path:
            self.python_edit.setText(path)

    def _repair(self) -> None:
        from ..envsetup import open_setup_dialog

        open_setup_dialog(self, repair=True)

    def _remove_token(self) -> None:
        tokens.clear_token()
        self.token_edit.clear()
        self.token_edit.setPlaceholderText("hf_…")
        self.remove_token.setEnabled(False)

    def validation_problem(self) -> str | None:
        python = self.python_edit.text().strip()
        if python and not Path(python).is_file():
            return f"The trainer Python {python} does not exist; choose the python program or leave it empty."
        token = self.token_edit.text().strip()
        if token and not tokens.looks_like_token(token):
            return "That does not look like a Hugging Face token; tokens start with hf_ and have no spaces."
        return None

    def accept(self) -> None:
        problem = self.validation_problem()
        if problem:
            self.problem.setText(problem)
            return
        settings = load_settings()
        for key, edit in (("runs_dir", self.runs_edit), ("trainer_python", self.python_edit)):
            value = edit.text().strip()
            if value:
                settings[key] = value
            else:
                settings.pop(key, None)
        settings["keep_awake"] = self.keep_awake.isChecked()
        save_settings(settings)
        if self.token_edit.text().strip():
            tokens.set_token(self.token_edit.text())
        super().accept()


def _row(*widgets: QWidget) -> QWidget:
    box = QWidget()
    layout = QHBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    for i, w in enumerate(widgets):
        layout.addWidget(w, 1 if i == 0 else 0)
    return box
