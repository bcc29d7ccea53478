"""Wizard page 3, Run folder: a suggested name, the runs folder, free disk space."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QFormLayout, QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from trainer.dataimport import run_name_for

from ..logic.runview import free_space_gb, name_problem, suggest_run_name
from .common import BlockingPage

MIN_FREE_GB = 1.0


class FolderPage(BlockingPage):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setTitle("Where the run is kept")
        self.setSubTitle("Each run gets its own folder with your data, the progress and the trained adapter.")
        self.name_edit = QLineEdit()
        self.name_edit.setToolTip("The run's name; it is also the name of its folder")
        self.name_edit.textChanged.connect(self.changed)
        self.folder_edit = QLineEdit()
        self.folder_edit.setToolTip("The folder that holds all your runs")
        self.folder_edit.textChanged.connect(self._folder_changed)
        browse = QPushButton("Browse…")
        browse.setToolTip("Choose the folder that holds your runs")
        browse.clicked.connect(self._browse)
        self.space = QLabel()
        self.full_path = QLabel()
        self.full_path.setProperty("tone", "muted")
        self.full_path.setWordWrap(True)
        row = QWidget()
        rl = QHBoxLayout(row)
        rl.setContentsMargins(0, 0, 0, 0)
        rl.addWidget(self.folder_edit, 1)
        rl.addWidget(browse)
        form = QFormLayout()
        form.addRow("Run name:", self.name_edit)
        form.addRow("Runs folder:", row)
        form.addRow("Free space:", self.space)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.full_path)
        layout.addStretch(1)
        layout.addWidget(self.reason)
        self._suggested_for: tuple | None = None

    def initializePage(self) -> None:  # noqa: N802
        c = self.choices
        if not self.folder_edit.text():
            self.folder_edit.setText(str(c.runs_dir))
        key = (str(c.data_path), c.model)
        if self._suggested_for != key and (not self.name_edit.text() or self.name_edit.isModified() is False):
            self.name_edit.setText(c.name or suggest_run_name(c.data_path, c.model, Path(self.folder_edit.text())))
            self._suggested_for = key
        self._folder_changed()

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Runs folder", self.folder_edit.text())
        if folder:
            self.folder_edit.setText(folder)

    def _folder_changed(self) -> None:
        folder = Path(self.folder_edit.text().strip() or ".").expanduser()
        free = free_space_gb(folder)
        self.space.setText("unknown" if free is None else f"{free:,.1f} GB free")
        self.changed()

    def problem(self) -> str | None:
        c = self.choices
        folder_text = self.folder_edit.text().strip()
        name = self.name_edit.text()
        c.name = name.strip()
        c.runs_dir = Path(folder_text).expanduser() if folder_text else None
        if not folder_text:
            return "Choose the folder that holds your runs."
        folder = c.runs_dir
        if folder.exists() and not folder.is_dir():
            return f"{folder} is a file, not a folder; choose a folder for your runs."
        words = name_problem(name, folder)
        if words:
            return words
        if run_name_for(c.data_path or "run", name) != name:
            return "Use only letters, digits, '-', '_' and '.' in the name (no spaces), e.g. " \
                   f"{run_name_for(c.data_path or 'run', name)}"
        free = free_space_gb(folder)
        if free is not None and free < MIN_FREE_GB:
            return f"Only {free:.1f} GB is free there; a run needs at least {MIN_FREE_GB:g} GB. Free some space or choose another folder."
        self.full_path.setText(f"The run will be saved in {folder / name}")
        return None
