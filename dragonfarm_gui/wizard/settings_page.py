"""Wizard page 4, Settings: beginner presets in one sentence each, an Advanced
section with every field, and an estimate of time and memory."""
from __future__ import annotations

import dataclasses

from PySide6.QtWidgets import (QButtonGroup, QCheckBox, QComboBox, QDoubleSpinBox, QFormLayout, QGroupBox, QLabel,
                               QLineEdit, QRadioButton, QScrollArea, QSpinBox, QToolButton, QVBoxLayout, QWidget)

from trainer.run.config import DEVICES, PRECISIONS, SCHEDULERS, ConfigError, TrainConfig
from trainer.run.settings import load_settings

from ..logic.estimates import BEGINNER_PRESETS, estimate, matching_preset, measured_speed
from ..logic.new_run import ADVANCED_FIELDS, HELP, LABELS
from .common import BlockingPage

CHOICES = {"lr_scheduler": SCHEDULERS, "device": DEVICES, "precision": PRECISIONS}
RANGES = {"max_length": (16, 131072), "max_steps": (0, 10_000_000), "batch_size": (1, 1024),
          "gradient_accumulation": (1, 1024), "lora_r": (1, 1024), "lora_alpha": (1, 4096), "log_every": (1, 100000),
          "eval_every": (0, 10_000_000), "save_every": (0, 10_000_000), "num_samples": (0, 50),
          "early_stop_checks": (0, 100),
          "sample_max_new_tokens": (1, 4096), "seed": (0, 2**31 - 1)}


class SettingsPage(BlockingPage):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setTitle("How to train")
        self.setSubTitle("Pick a preset; the Advanced section has every setting if you want to change one.")
        self.group = QButtonGroup(self)
        presets_box = QVBoxLayout()
        self.radios: dict[str, QRadioButton] = {}
        for p in BEGINNER_PRESETS:
            radio = QRadioButton(f"{p.title}: {p.sentence}")
            radio.setToolTip(", ".join(f"{LABELS[k].lower()} {v:g}" for k, v in p.values.items()))
            radio.toggled.connect(lambda on, key=p.key: on and self.apply_preset(key))
            self.group.addButton(radio)
            self.radios[p.key] = radio
            presets_box.addWidget(radio)
        self.custom_label = QLabel("Custom settings (changed in Advanced).")
        self.custom_label.setStyleSheet("color:#555")
        presets_box.addWidget(self.custom_label)

        self.toggle = QToolButton()
        self.toggle.setText("Advanced settings")
        self.toggle.setCheckable(True)
        self.toggle.setToolTip("Show every training setting")
        self.toggle.setStyleSheet("QToolButton { border: none; font-weight: 600; }")
        self.advanced = QGroupBox()
        form = QFormLayout(self.advanced)
        self.fields: dict[str, QWidget] = {}
        types = {f.name: f.type for f in dataclasses.fields(TrainConfig)}
        for key in ADVANCED_FIELDS + ["seed"]:
            widget = self._make_field(key, str(types[key]))
            widget.setToolTip(HELP.get(key, ""))
            self.fields[key] = widget
            label = QLabel(LABELS.get(key, key) + ":")
            label.setToolTip(HELP.get(key, ""))
            form.addRow(label, widget)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.advanced)
        scroll.setVisible(False)
        self.toggle.toggled.connect(scroll.setVisible)
        self.toggle.toggled.connect(lambda on: self.toggle.setArrowType(
            self.toggle.arrowType().DownArrow if on else self.toggle.arrowType().RightArrow))
        self.toggle.setToolButtonStyle(self.toggle.toolButtonStyle().ToolButtonTextBesideIcon)
        self.toggle.setArrowType(self.toggle.arrowType().RightArrow)
        self.scroll = scroll
        self.estimate_label = QLabel()
        self.estimate_label.setWordWrap(True)
        self.estimate_label.setObjectName("estimate")
        self.estimate_label.setStyleSheet("background:#f3f7fb; border:1px solid #d6e2ee; border-radius:6px; padding:8px")
        layout = QVBoxLayout(self)
        layout.addLayout(presets_box)
        layout.addWidget(self.toggle)
        layout.addWidget(scroll, 1)
        layout.addWidget(self.estimate_label)
        layout.addWidget(self.reason)
        # With Advanced closed, the spare height goes below the estimate, not into it.
        layout.addStretch(1)
        spacer = layout.count() - 1
        self.toggle.toggled.connect(lambda on: layout.setStretch(spacer, 0 if on else 1))
        self._loading = False

    def _make_field(self, key: str, typ: str) -> QWidget:
        if key in CHOICES:
            w = QComboBox()
            w.addItems(CHOICES[key])
            w.currentTextChanged.connect(self._field_changed)
        elif typ == "bool":
            w = QCheckBox()
            w.toggled.connect(self._field_changed)
        elif typ == "int":
            w = QSpinBox()
            w.setRange(*RANGES.get(key, (0, 1_000_000)))
            w.valueChanged.connect(self._field_changed)
        elif typ == "float":
            w = QDoubleSpinBox()
            if key == "learning_rate":
                w.setDecimals(6)
                w.setRange(0.000001, 0.5)
                w.setSingleStep(0.00001)
            elif key == "epochs":
                w.setDecimals(2)
                w.setRange(0.0, 1000.0)
            else:
                w.setDecimals(3)
                w.setRange(0.0, 0.99)
                w.setSingleStep(0.01)
            w.valueChanged.connect(self._field_changed)
        else:
            w = QLineEdit()
            w.textChanged.connect(self._field_changed)
        return w

    # ----- values ---------------------------------------------------------------------
    def initializePage(self) -> None:  # noqa: N802
        self.load_values({**self.choices.settings, "seed": self.choices.seed})

    def load_values(self, values: dict) -> None:
        self._loading = True
        for key, w in self.fields.items():
            if key not in values:
                continue
            v = values[key]
            if isinstance(w, QComboBox):
                w.setCurrentText(str(v))
            elif isinstance(w, QCheckBox):
                w.setChecked(bool(v))
            elif isinstance(w, (QSpinBox, QDoubleSpinBox)):
                w.setValue(v)
            else:
                w.setText(v if isinstance(v, str) else ",".join(v))
        self._loading = False
        self._field_changed()

    def read_values(self) -> dict:
        out = {}
        for key, w in self.fields.items():
            if isinstance(w, QComboBox):
                out[key] = w.currentText()
            elif isinstance(w, QCheckBox):
                out[key] = w.isChecked()
            elif isinstance(w, QSpinBox):
                out[key] = w.value()
            elif isinstance(w, QDoubleSpinBox):
                out[key] = float(w.value())
            else:
                text = w.text().strip()
                out[key] = text if text in ("all-linear", "") else [t.strip() for t in text.split(",") if t.strip()]
        return out

    def apply_preset(self, key: str) -> None:
        preset = next(p for p in BEGINNER_PRESETS if p.key == key)
        self.load_values(preset.values)

    def _field_changed(self, *_args) -> None:
        if self._loading or self.wizard() is None:
            return
        values = self.read_values()
        self.choices.seed = values.pop("seed")
        self.choices.settings = values
        match = matching_preset(values)
        for key, radio in self.radios.items():
            if radio.isChecked() != (key == match):
                radio.blockSignals(True)
                if key == match:
                    radio.setChecked(True)
                else:
                    self.group.setExclusive(False)
                    radio.setChecked(False)
                    self.group.setExclusive(True)
                radio.blockSignals(False)
        self.custom_label.setVisible(match is None)
        self._update_estimate()
        self.changed()

    def _update_estimate(self) -> None:
        c = self.choices
        try:
            config = c.config()
        except ConfigError:
            self.estimate_label.setText("")
            return
        check = load_settings().get("device_check") or {}
        device = config.device if config.device != "auto" else check.get("device", "cpu")
        speed = measured_speed(c.runs_dir, device) if c.runs_dir else None
        est = estimate(config, c.usable_train_examples(), c.average_tokens(), c.params_b, device, speed)
        extra = " (From the speed of your last run on this computer.)" if speed else ""
        extra += "" if c.params_b else " (The model's size is unknown, so this is a guess.)"
        if not check:
            extra += " Run Help > Check this computer for a better estimate."
        self.estimate_label.setText("<b>Estimate:</b> " + est.words() + extra)

    def problem(self) -> str | None:
        try:
            self.choices.config()
        except ConfigError as exc:
            return "Fix this setting: " + exc.problems[0]
        return None
