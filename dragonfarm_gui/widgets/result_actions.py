"""Merge, Export for Ollama, Export GGUF and Share: each runs the matching
`dragonfarm` command in a QProcess, shows its progress lines as they come, and
ends with the result in words (and the `ollama create` command to copy)."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QApplication, QCheckBox, QComboBox, QFileDialog, QHBoxLayout, QLabel, QLineEdit,
                               QPlainTextEdit, QProgressBar, QPushButton, QVBoxLayout, QWidget)

from trainer.run.reader import Run

from ..style import set_style_property
from ..process.command_process import CommandProcess

ACTIONS = {"merge": "Merging", "ollama": "Exporting for Ollama", "gguf": "Exporting a GGUF file", "pack": "Packing"}
KEY_LINES = ("Check passed", "Check FAILED", "Template check", "The Modelfile's template", "GGUF file:",
             "Merged model:", "Modelfile:", "Packed into", "merged/ is already up to date")


def summarise(action: str, ok: bool, lines: list[str], words: str) -> tuple[str, str | None, bool]:
    """(what to tell the person, the ollama command if any, whether it is good news)."""
    command = next((x.strip() for x in lines if x.strip().startswith("ollama create ")), None)
    key = [x.strip() for x in lines if x.strip().startswith(KEY_LINES)]
    failed_check = any(x.startswith(("Check FAILED", "The Modelfile's template")) for x in key)
    if not ok and not failed_check:
        return f"{ACTIONS[action]} did not work: {words}", None, False
    text = "\n".join(key) or "Done."
    if failed_check:
        text = "It finished, but its self-check found a problem: " + text
    return text, command, not failed_check


class ResultActions(QWidget):
    def __init__(self, run_dir: str | Path, parent: QWidget | None = None):
        super().__init__(parent)
        self.run = Run(run_dir)
        self.current: str | None = None
        self.choose_pack_path: Callable[[], str | None] = self._ask_pack_path
        self.process = CommandProcess(self)
        self.process.line.connect(self._on_line)
        self.process.ended.connect(self._on_ended)

        self.buttons: dict[str, QPushButton] = {}
        row = QHBoxLayout()
        for key, text, tip in (
            ("merge", "Merge", "Fold the adapter into the model: a standalone model in the run's merged folder"),
            ("ollama", "Export for Ollama", "Write a Modelfile next to the merged model, for `ollama create`"),
            ("gguf", "Export GGUF", "One .gguf file for llama.cpp and LM Studio, made with llama.cpp's converter"),
            ("pack", "Share…", "Pack the run (settings, adapter, results, logs) into one .zip to send"),
        ):
            button = QPushButton(text)
            button.setToolTip(tip)
            button.clicked.connect(lambda _=False, k=key: self.start(k))
            self.buttons[key] = button
            row.addWidget(button)
            if key == "gguf":
                self.quant = QComboBox()
                self.quant.addItem("f16 (full quality)", "f16")
                self.quant.addItem("q8_0 (half the size)", "q8_0")
                self.quant.setToolTip("How the GGUF file stores the weights")
                row.addWidget(self.quant)
        self.with_data = QCheckBox("include the training data")
        self.with_data.setToolTip("Only when the people you share with may see your examples")
        row.addWidget(self.with_data)
        row.addStretch(1)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        row.addWidget(self.cancel_button)

        self.progress = QProgressBar()
        self.progress.setRange(0, 0)
        self.progress.setTextVisible(False)
        self.progress.hide()
        self.result = QLabel()
        self.result.setWordWrap(True)
        self.result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.command = QLineEdit()
        self.command.setReadOnly(True)
        self.command.setAccessibleName("ollama command")
        self.copy_button = QPushButton("Copy")
        self.copy_button.clicked.connect(lambda: QApplication.clipboard().setText(self.command.text()))
        command_row = QHBoxLayout()
        command_row.addWidget(self.command, 1)
        command_row.addWidget(self.copy_button)
        self.command_box = QWidget()
        self.command_box.setLayout(command_row)
        self.command_box.hide()
        self.log = QPlainTextEdit()
        self.log.setReadOnly(True)
        self.log.setMaximumBlockCount(2000)
        self.log.setPlaceholderText("What each step does appears here.")

        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.progress)
        layout.addWidget(self.result)
        layout.addWidget(self.command_box)
        layout.addWidget(self.log, 1)
        self._update_buttons()

    def args_for(self, action: str, pack_path: str | None = None) -> list[str]:
        run = str(self.run.path)
        if action == "merge":
            return ["merge", run]
        if action == "ollama":
            return ["export", run, "--format", "ollama"]
        if action == "gguf":
            return ["export", run, "--format", "gguf", "--quant", self.quant.currentData()]
        args = ["pack", run] + (["-o", pack_path] if pack_path else [])
        return args + (["--with-data"] if self.with_data.isChecked() else [])

    def start(self, action: str) -> bool:
        if self.process.is_running():
            return False
        pack_path = None
        if action == "pack":
            pack_path = self.choose_pack_path()
            if not pack_path:
                return False
        self.current = action
        self.log.clear()
        self.command_box.hide()
        set_style_property(self.result, "tone", "")
        self.result.setText(f"{ACTIONS[action]}… (this can take a few minutes for big models)")
        self.progress.show()
        started = self.process.start(*self.args_for(action, pack_path))
        self._update_buttons()
        return started

    def cancel(self) -> None:
        if self.process.is_running():
            self.process.stop()
            self.result.setText(f"{ACTIONS.get(self.current or '', 'It')} was cancelled.")
            self.current = None
            self.progress.hide()
            self._update_buttons()

    def shutdown(self) -> None:
        self.process.stop()

    def refresh(self) -> None:
        """The run may have finished since: enable what is possible now."""
        self._update_buttons()

    def _ask_pack_path(self) -> str | None:
        suggested = str(Path.home() / f"{self.run.name}.zip")
        path, _ = QFileDialog.getSaveFileName(self, "Share this run", suggested, "DragonFarm run (*.zip)")
        return path or None

    def _on_line(self, text: str) -> None:
        self.log.appendPlainText(text)

    def _on_ended(self, ok: bool, code: int, words: str) -> None:
        action = self.current or "merge"
        self.current = None
        self.progress.hide()
        text, command, good = summarise(action, ok, self.process.lines, words)
        self.result.setText(text)
        set_style_property(self.result, "tone", "" if good else "bad")
        if command:
            self.command.setText(command)
            self.command_box.show()
        self._update_buttons()

    def _update_buttons(self) -> None:
        running = self.process.is_running()
        has_adapter = self.run.has_adapter()
        for button in self.buttons.values():
            button.setEnabled(not running and has_adapter)
        self.cancel_button.setEnabled(running)
