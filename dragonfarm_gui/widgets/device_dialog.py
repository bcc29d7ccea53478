"""The device check: runs `check --json` in the trainer environment (never
freezing the window) and shows the device, memory, driver, torch build and,
when training would fall back to the CPU, the reason and the one fix."""
from __future__ import annotations

import json

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QFormLayout, QFrame, QLabel, QProgressBar, QPushButton,
                               QVBoxLayout, QWidget)

from trainer.run.launch import NoTrainerPython, trainer_command, trainer_env
from trainer.run.settings import load_settings, save_settings

from ..logic import theme
from ..logic import device as dev
from ..process.trainer_process import ProcessRunner

LEVEL_TONES = {"good": "good", "warn": "alert", "bad": "bad"}


def parse_check_output(stdout: str) -> dict | None:
    """The JSON object `check --json` printed (the last line that is one)."""
    try:
        data = json.loads(stdout)
        return data if isinstance(data, dict) else None
    except ValueError:
        pass
    for line in reversed(stdout.strip().splitlines()):
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    return None


class DeviceDialog(QDialog):
    checked = Signal(dict)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Check this computer")
        self.setMinimumWidth(560)
        self.result: dict | None = None
        self.runner = ProcessRunner(self)
        self.runner.ended.connect(self._on_ended)

        self.headline = QLabel("Checking this computer…")
        self.headline.setObjectName("deviceHeadline")
        self.headline.setWordWrap(True)
        self.busy = QProgressBar()
        self.busy.setRange(0, 0)
        self.busy.setMaximumHeight(8)
        self.busy.setTextVisible(False)
        self.form = QFormLayout()
        self.form.setLabelAlignment(Qt.AlignmentFlag.AlignRight)
        self.values: dict[str, QLabel] = {}
        for label, _value in dev.rows({}):  # made once, so the dialog is sized for them from the start
            value = QLabel("…")
            value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.values[label] = value
            self.form.addRow(label + ":", value)
        self.fallback = QFrame()
        self.fallback.setObjectName("fallbackBox")
        fb = QVBoxLayout(self.fallback)
        self.reason_label = QLabel()
        self.reason_label.setWordWrap(True)
        self.reason_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.fix_label = QLabel()
        self.fix_label.setWordWrap(True)
        self.fix_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        fb.addWidget(self.reason_label)
        fb.addWidget(self.fix_label)
        self.fallback.hide()
        self.details = QLabel()
        self.details.setWordWrap(True)
        self.details.setProperty("tone", "muted")
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.copy_button = QPushButton("Copy")
        self.copy_button.setToolTip("Copy everything shown here, to paste into a help request")
        self.copy_button.clicked.connect(self.copy)
        self.copy_button.setEnabled(False)
        self.again_button = QPushButton("Check again")
        self.again_button.setToolTip("Run the check again, e.g. after installing a driver")
        self.again_button.clicked.connect(self.run_check)
        buttons.addButton(self.copy_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.addButton(self.again_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.headline)
        layout.addWidget(self.busy)
        layout.addLayout(self.form)
        layout.addWidget(self.fallback)
        layout.addWidget(self.details)
        layout.addStretch(1)
        layout.addWidget(buttons)

    def run_check(self) -> None:
        self.busy.show()
        self.again_button.setEnabled(False)
        self.headline.setText("Checking this computer… (this can take a few seconds the first time)")
        try:
            program, args = trainer_command("check", "--json", settings=load_settings())
        except NoTrainerPython as exc:
            self.show_failure(str(exc), "")
            return
        self.runner.start(program, args, trainer_env())

    def _on_ended(self, ok: bool, code: int, stdout: str, stderr: str, words: str) -> None:
        data = parse_check_output(stdout)
        if data is None:
            self.show_failure(words or "The check did not answer as expected.", stderr)
            return
        self.show_result(data)

    def show_failure(self, words: str, stderr: str) -> None:
        self.busy.hide()
        self.again_button.setEnabled(True)
        self.headline.setText(f"<span style='color:{theme.color('bad')}'><b>The check could not run.</b></span> {words}")
        tail = stderr.strip().splitlines()[-6:]
        self.details.setText("\n".join(tail))
        self.copy_button.setEnabled(True)
        self.result = None

    def show_result(self, check: dict) -> None:
        self.result = check
        self.busy.hide()
        self.again_button.setEnabled(True)
        self.copy_button.setEnabled(True)
        level, sentence = dev.headline(check)
        self.headline.setText(f"<span style='font-size:12pt; color:{theme.color(LEVEL_TONES[level])}'><b>{sentence}</b></span>")
        for label, value in dev.rows(check):
            self.values[label].setText(value)
        reason = check.get("cpu_fallback_reason")
        if reason:
            title = dev.capitalise(dev.FALLBACK_TITLES.get(reason, "the GPU cannot be used"))
            self.reason_label.setText(f"<b>Why the CPU:</b> {title}. {check.get('reason') or ''}")
            self.fix_label.setText(f"<b>The fix:</b> {check.get('fix') or 'No fix is known for this case.'}")
            self.fallback.show()
        else:
            self.fallback.hide()
        self.details.setText(check.get("summary") or "")
        self.layout().activate()
        self.adjustSize()  # the fallback box may have appeared
        settings = load_settings()
        settings["device_check"] = check
        settings["device_checked"] = True
        save_settings(settings)
        self.checked.emit(check)

    def text(self) -> str:
        if self.result is not None:
            return dev.as_text(self.result)
        return self.headline.text() + "\n" + self.details.text()

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.text())

    def done(self, result: int) -> None:
        self.runner.stop()
        super().done(result)
