"""Merge, Export for Ollama, Export GGUF, Share and Upload to the Hugging Face
Hub: each runs the matching `dragonfarm` command in a QProcess, shows its
progress lines as they come, and ends with the result in words (and the
`ollama create` command to copy). `use_last` (the window's adapter choice)
adds --last. Upload passes the saved token in the child's environment only."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QApplication, QCheckBox, QComboBox, QFileDialog, QHBoxLayout, QLabel, QLineEdit,
                               QPlainTextEdit, QProgressBar, QPushButton, QVBoxLayout, QWidget)

from trainer.run.reader import Run

from ..style import set_style_property
from ..logic import tokens
from ..process.command_process import CommandProcess

ACTIONS = {"merge": "Merging", "ollama": "Exporting for Ollama", "gguf": "Exporting a GGUF file", "pack": "Packing",
           "push": "Uploading to the Hugging Face Hub"}
KEY_LINES = ("Check passed", "Check FAILED", "Template check", "The Modelfile's template", "GGUF file:",
             "Merged model:", "Modelfile:", "Packed into", "It includes your", "merged/ is already up to date",
             "Uploaded to")
UPLOADS = (("adapter", "the adapter (small)"), ("merged", "the merged model"), ("gguf", "the GGUF export"))


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
        self.use_last = False
        self.choose_pack_path: Callable[[], str | None] = self._ask_pack_path
        self.get_token: Callable[[], str | None] = tokens.get_token
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

        hub = QHBoxLayout()
        hub.addWidget(QLabel("Hugging Face Hub:"))
        self.repo = QLineEdit()
        self.repo.setPlaceholderText("name for the model, e.g. my-helper")
        self.repo.setAccessibleName("Name on the Hub")
        self.repo.setToolTip("NAME puts it in your account; OWNER/NAME in an organisation you can write to")
        self.upload_what = QComboBox()
        for key, words in UPLOADS:
            self.upload_what.addItem(words, key)
        self.private = QCheckBox("private")
        self.private.setChecked(True)
        self.private.setToolTip("Only you (and your organisation) can see a private model")
        self.with_samples = QCheckBox("sample replies in the model card")
        self.with_samples.setToolTip("The model card shows a few held-out prompts (from your data) and the replies")
        upload = QPushButton("Upload…")
        upload.setToolTip("Upload to the Hugging Face Hub with a model card; uses the token saved in Settings "
                          "(it needs write access)")
        upload.clicked.connect(lambda: self.start("push"))
        self.buttons["push"] = upload
        for w in (self.repo, self.upload_what, self.private, self.with_samples, upload):
            hub.addWidget(w, 1 if w is self.repo else 0)

        self.progress = QProgressBar()
        self.progress.setRange(0, 0)
        self.progress.setTextVisible(False)
        self.progress.hide()
        self.result = QLabel()
        self.result.setObjectName("actionResult")
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
        layout.addLayout(hub)
        layout.addWidget(self.progress)
        layout.addWidget(self.result)
        layout.addWidget(self.command_box)
        layout.addWidget(self.log, 1)
        self._update_buttons()

    def args_for(self, action: str, pack_path: str | None = None) -> list[str]:
        return self._args_for(action, pack_path) + (["--last"] if self.use_last else [])

    def _args_for(self, action: str, pack_path: str | None) -> list[str]:
        run = str(self.run.path)
        if action == "merge":
            return ["merge", run]
        if action == "ollama":
            return ["export", run, "--format", "ollama"]
        if action == "gguf":
            return ["export", run, "--format", "gguf", "--quant", self.quant.currentData()]
        if action == "push":
            what = self.upload_what.currentData()
            return (["push", run, "--repo", self.repo.text().strip()] + (["--private"] if self.private.isChecked() else [])
                    + ([f"--{what}"] if what != "adapter" else [])
                    + ([] if self.with_samples.isChecked() else ["--no-samples"]))
        args = ["pack", run] + (["-o", pack_path] if pack_path else [])
        return args + (["--with-data"] if self.with_data.isChecked() else [])

    def _push_problem(self) -> tuple[str | None, str | None]:
        """(what is missing in words, the token)."""
        if not self.repo.text().strip():
            return "Type a name for the model on the Hub first (for example my-helper).", None
        token = self.get_token()
        if not token:
            return ("Uploading needs your Hugging Face token with write access: add it in Settings "
                    "(make one at huggingface.co/settings/tokens)."), None
        return None, token

    def start(self, action: str) -> bool:
        if self.process.is_running():
            return False
        pack_path = token = None
        if action == "pack":
            pack_path = self.choose_pack_path()
            if not pack_path:
                return False
        if action == "push":
            problem, token = self._push_problem()
            if problem:
                self._show_result(problem, good=False)
                return False
        self.current = action
        self.log.clear()
        self.command_box.hide()
        self._show_result(f"{ACTIONS[action]}… (this can take a few minutes for big models)")
        self.progress.show()
        started = self.process.start(*self.args_for(action, pack_path), hf_token=token)
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

    def _show_result(self, text: str, good: bool = True) -> None:
        self.result.setText(text)
        set_style_property(self.result, "tone", "" if good else "bad")

    def _on_line(self, text: str) -> None:
        self.log.appendPlainText(text)

    def _on_ended(self, ok: bool, code: int, words: str) -> None:
        action = self.current or "merge"
        self.current = None
        self.progress.hide()
        text, command, good = summarise(action, ok, self.process.lines, words)
        self._show_result(text, good)
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
