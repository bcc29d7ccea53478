"""Wizard page 4, Settings: beginner presets in one sentence each, an Advanced
section with every setting, and an estimate of time and memory.

The Advanced form is made from the settings declared on TrainConfig
(trainer/run/config.py): label, help, range or choices, spin-box step."""
from __future__ import annotations

from PySide6.QtWidgets import (QButtonGroup, QCheckBox, QComboBox, QDoubleSpinBox, QFormLayout, QGroupBox, QLabel,
                               QLineEdit, QRadioButton, QScrollArea, QSpinBox, QToolButton, QVBoxLayout, QWidget)

from trainer.run.config import ConfigError, TrainConfig
from trainer.run.declare import Setting, declared_settings, format_value, parse_text, type_name
from trainer.run.settings import load_settings
from trainer.run.training_presets import TRAINING_PRESETS, matching_preset, preset_by_key

from ..logic.estimates import estimate, measured_speed
from ..logic.new_run import label_in_sentence
from .common import BlockingPage

# Spin boxes need finite ends; a declared setting without one gets these.
INT_LIMITS = (-(2**31), 2**31 - 1)
FLOAT_LIMITS = (-1e12, 1e12)


class SettingsPage(BlockingPage):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setTitle("How to train")
        self.setSubTitle("Pick a preset; the Advanced section has every setting if you want to change one.")
        self.group = QButtonGroup(self)
        presets_box = QVBoxLayout()
        self.radios: dict[str, QRadioButton] = {}
        for p in TRAINING_PRESETS:
            radio = QRadioButton(f"{p.title}: {p.sentence}")
            radio.setToolTip(", ".join(f"{label_in_sentence(k)} {format_value(v)}" for k, v in p.values.items()))
            radio.toggled.connect(lambda on, key=p.key: on and self.apply_preset(key))
            self.group.addButton(radio)
            self.radios[p.key] = radio
            presets_box.addWidget(radio)
        self.custom_label = QLabel("Custom settings (changed in Advanced).")
        self.custom_label.setProperty("tone", "muted")
        presets_box.addWidget(self.custom_label)

        self.toggle = QToolButton()
        self.toggle.setText("Advanced settings")
        self.toggle.setCheckable(True)
        self.toggle.setToolTip("Show every training setting")
        self.toggle.setObjectName("sectionToggle")
        self.advanced = QGroupBox()
        form = QFormLayout(self.advanced)
        self.fields: dict[str, QWidget] = {}
        self._text_fields = {}
        for f, setting in declared_settings(TrainConfig):
            widget = self._make_field(f.name, type_name(f), setting)
            widget.setToolTip(setting.help)
            widget.setAccessibleName(setting.label)
            self.fields[f.name] = widget
            if isinstance(widget, QLineEdit):
                self._text_fields[f.name] = f
            label = QLabel(setting.label + ":")
            label.setToolTip(setting.help)
            label.setBuddy(widget)
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
        self.estimate_label.setObjectName("infoBox")
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

    def _make_field(self, key: str, typ: str, setting: Setting) -> QWidget:
        if setting.choices:
            w = QComboBox()
            w.addItems(setting.choices)
            w.currentTextChanged.connect(self._field_changed)
        elif typ == "bool":
            w = QCheckBox()
            w.toggled.connect(self._field_changed)
        elif typ == "int":
            w = QSpinBox()
            low, high = INT_LIMITS
            w.setRange(int(setting.min if setting.min is not None else low),
                       int(setting.max if setting.max is not None else high))
            if setting.step:
                w.setSingleStep(int(setting.step))
            w.valueChanged.connect(self._field_changed)
        elif typ == "float":
            w = QDoubleSpinBox()
            w.setDecimals(setting.decimals if setting.decimals is not None else 3)
            low, high = FLOAT_LIMITS
            w.setRange(setting.min if setting.min is not None else low, setting.max if setting.max is not None else high)
            w.setSingleStep(setting.step or 0.01)
            w.valueChanged.connect(self._field_changed)
        else:
            w = QLineEdit()
            w.textChanged.connect(self._field_changed)
        if isinstance(w, (QSpinBox, QDoubleSpinBox)) and setting.zero_means and setting.min == 0:
            w.setSpecialValueText(f"0 ({setting.zero_means})")
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
                out[key] = parse_text(self._text_fields[key], w.text())
        return out

    def apply_preset(self, key: str) -> None:
        self.load_values(preset_by_key(key).config_values())

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
