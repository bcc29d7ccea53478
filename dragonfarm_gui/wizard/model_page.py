"""Wizard page 2, Model: a preset from the table, or any Hub id, a local model
folder or a .gguf file; a gated model asks for a Hugging Face token."""
from __future__ import annotations

import re
from pathlib import Path

from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (QAbstractItemView, QFileDialog, QHBoxLayout, QHeaderView, QLabel, QLineEdit,
                               QPushButton, QRadioButton, QTableWidget, QTableWidgetItem, QVBoxLayout)

from trainer.run.presets import find_preset, load_presets
from trainer.run.settings import load_settings

from ..logic import theme
from ..logic import tokens
from ..logic.estimates import fits_machine
from ..logic.model_size import model_params_b
from .common import BlockingPage

HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
HEADERS = ("Model", "Size", "License", "Needs a token", "Minimum memory", "Fits this computer")


def model_problem(text: str) -> str | None:
    """Why a typed model cannot be used, in words, or None."""
    text = text.strip()
    if not text:
        return "Type a Hugging Face model id (like Qwen/Qwen2.5-0.5B-Instruct), or choose a model folder or .gguf file."
    path = Path(text).expanduser()
    looks_local = path.is_absolute() or text.startswith((".", "~")) or text.lower().endswith(".gguf") or "\\" in text
    if looks_local:
        if not path.exists():
            return f"{text} does not exist on this computer; choose the model folder or .gguf file again."
        if path.is_dir() and not (path / "config.json").is_file():
            return f"The folder {path.name} has no config.json, so it is not a model folder."
        if path.is_file() and path.suffix.lower() != ".gguf":
            return "A single model file must be a .gguf file; for other models choose the folder."
        return None
    if find_preset(text):
        return None
    if not HUB_ID.match(text):
        return f"'{text}' is not a Hugging Face model id; ids look like owner/name, e.g. Qwen/Qwen2.5-0.5B-Instruct."
    return None


class ModelPage(BlockingPage):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setTitle("The model to teach")
        self.setSubTitle("Smaller models train faster; bigger ones give better replies. Pick one that fits this computer.")
        self.presets = load_presets()
        self.preset_radio = QRadioButton("A suggested model:")
        self.preset_radio.setChecked(True)
        self.preset_radio.setToolTip("Choose one of the models DragonFarm suggests")
        self.table = QTableWidget(len(self.presets), len(HEADERS))
        self.table.setHorizontalHeaderLabels(HEADERS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.setAccessibleName("Suggested models")
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.itemSelectionChanged.connect(self._preset_picked)
        self.blurb = QLabel()
        self.blurb.setWordWrap(True)
        self.blurb.setProperty("tone", "muted")

        self.other_radio = QRadioButton("Another model:")
        self.other_radio.setToolTip("Any Hugging Face model id, a model folder on this computer, or a .gguf file")
        self.other_edit = QLineEdit()
        self.other_edit.setPlaceholderText("owner/model-name, a model folder, or a .gguf file")
        self.other_edit.setToolTip("Any Hugging Face model id, a model folder on this computer, or a .gguf file")
        self.other_edit.textChanged.connect(self._other_typed)
        folder = QPushButton("Folder…")
        folder.setToolTip("Choose a model folder (with config.json)")
        folder.clicked.connect(self._choose_folder)
        gguf = QPushButton(".gguf file…")
        gguf.setToolTip("Choose a .gguf model file")
        gguf.clicked.connect(self._choose_gguf)
        self.preset_radio.toggled.connect(self._mode_changed)

        self.token_label = QLabel()
        self.token_label.setWordWrap(True)
        self.token_edit = QLineEdit()
        self.token_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.token_edit.setPlaceholderText("hf_…  (huggingface.co/settings/tokens)")
        self.token_edit.setToolTip("Your Hugging Face access token (read access). It is stored in the system keyring "
                                   "or a private file, never in the run folder.")
        self.token_edit.textChanged.connect(self.changed)

        other_row = QHBoxLayout()
        other_row.addWidget(self.other_radio)
        other_row.addWidget(self.other_edit, 1)
        other_row.addWidget(folder)
        other_row.addWidget(gguf)
        layout = QVBoxLayout(self)
        layout.addWidget(self.preset_radio)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.blurb)
        layout.addLayout(other_row)
        layout.addWidget(self.token_label)
        layout.addWidget(self.token_edit)
        layout.addWidget(self.reason)
        self._fill_table()

    def _fill_table(self) -> None:
        check = load_settings().get("device_check")
        for row, p in enumerate(self.presets):
            fits, words = fits_machine(p.min_gpu_gb, p.cpu_ok, check)
            cells = (p.name, p.size, p.license, "yes" if p.gated else "no", p.min_memory_words, words)
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(p.blurb if col == 0 else text)
                if col == 5 and fits is not None:
                    item.setForeground(QBrush(QColor(theme.color("good" if fits else "bad"))))
                self.table.setItem(row, col, item)

    def initializePage(self) -> None:  # noqa: N802
        model = self.choices.model
        for row, p in enumerate(self.presets):
            if p.id == model:
                self.table.selectRow(row)
                break
        else:
            self.other_radio.setChecked(True)
            self.other_edit.setText(model)
        self._update_token_row()

    def select_preset(self, model_id: str) -> None:
        self.preset_radio.setChecked(True)
        for row, p in enumerate(self.presets):
            if p.id == model_id:
                self.table.selectRow(row)
                return
        raise KeyError(model_id)

    def set_other(self, text: str) -> None:
        self.other_radio.setChecked(True)
        self.other_edit.setText(text)
        self._other_typed(text)  # also when the text is unchanged (e.g. the folder was fixed meanwhile)

    def _choose_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Model folder")
        if path:
            self.set_other(path)

    def _choose_gguf(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "GGUF model", "", "GGUF models (*.gguf)")
        if path:
            self.set_other(path)

    def _mode_changed(self) -> None:
        self.table.setEnabled(self.preset_radio.isChecked())
        if self.preset_radio.isChecked():
            self._preset_picked()
        else:
            self._other_typed(self.other_edit.text())

    def _preset_picked(self) -> None:
        rows = self.table.selectionModel().selectedRows()
        if not rows or not self.preset_radio.isChecked():
            return
        p = self.presets[rows[0].row()]
        c = self.choices
        c.model, c.params_b, c.gated = p.id, p.params_b, p.gated
        self.blurb.setText(p.blurb)
        self._update_token_row()
        self.changed()

    def _other_typed(self, text: str) -> None:
        if self.preset_radio.isChecked():
            return
        c = self.choices
        preset = find_preset(text)
        c.model = text.strip()
        # A local .gguf file or model folder: its size from the file headers, for the estimate.
        c.params_b, c.gated = (preset.params_b, preset.gated) if preset else (model_params_b(c.model) if c.model else None,
                                                                           False)
        self.blurb.setText(preset.blurb if preset else "")
        self._update_token_row()
        self.changed()

    def _update_token_row(self) -> None:
        gated = self.choices.gated
        have = bool(tokens.get_token())
        if gated and not have:
            self.token_label.setText("<b>This model needs a Hugging Face token.</b> Accept the model's license on its "
                                     "Hugging Face page, make a token at huggingface.co/settings/tokens, and paste it here.")
        elif gated:
            self.token_label.setText("This model needs a Hugging Face token; your saved token will be used.")
        else:
            self.token_label.setText("")
        self.token_label.setVisible(gated)
        self.token_edit.setVisible(gated and not have)

    def problem(self) -> str | None:
        c = self.choices
        if self.preset_radio.isChecked():
            if not self.table.selectionModel().selectedRows():
                return "Choose a model from the table, or type another one below."
        else:
            words = model_problem(self.other_edit.text())
            if words:
                return words
        if c.gated and not tokens.get_token():
            typed = self.token_edit.text().strip()
            if not typed:
                return "This model needs a Hugging Face token: paste it above (or choose a model without a token)."
            if not tokens.looks_like_token(typed):
                return "That does not look like a Hugging Face token; tokens start with hf_ and have no spaces."
        return None

    def validatePage(self) -> bool:  # noqa: N802
        typed = self.token_edit.text().strip()
        if self.choices.gated and typed and not tokens.get_token():
            tokens.set_token(typed)
            self.token_edit.clear()
        return True
