"""The wizard's Advanced form is made from TrainConfig's declarations: a widget
for every setting, the declared ranges and choices, and every value reaching
the run's config; the summary line and the preset radios come from them too."""
from __future__ import annotations

import dataclasses
import math

import pytest
from PySide6.QtWidgets import QCheckBox, QComboBox, QDoubleSpinBox, QLineEdit, QSpinBox
from settinghelpers import other_value

from trainer.run.config import TrainConfig
from trainer.run.declare import RUN_FIELD, SETTING, declared_settings, type_name
from trainer.run.training_presets import TRAINING_PRESETS

DECLARED = declared_settings(TrainConfig)


@pytest.fixture
def wiz(qtbot, tmp_path):
    from dragonfarm_gui.wizard.new_run_wizard import NewRunWizard

    w = NewRunWizard(tmp_path)
    qtbot.addWidget(w)
    return w


def test_every_field_is_reachable_from_the_wizard(wiz):
    from dragonfarm_gui.logic.new_run import Choices

    page = wiz.settings_page
    choice_names = {f.name for f in dataclasses.fields(Choices)}
    for f in dataclasses.fields(TrainConfig):
        if SETTING in f.metadata:
            assert f.name in page.fields, f"{f.name} has no widget in the Advanced form"
        else:
            run_field = f.metadata[RUN_FIELD]
            assert run_field.choice in choice_names if run_field.choice else run_field.why, f.name


def test_widgets_match_the_declarations(wiz):
    fields = wiz.settings_page.fields
    assert list(fields) == [f.name for f, _ in DECLARED]
    for f, s in DECLARED:
        w = fields[f.name]
        assert w.toolTip() == s.help
        if s.choices:
            assert isinstance(w, QComboBox)
            assert tuple(w.itemText(i) for i in range(w.count())) == s.choices
        elif type_name(f) == "bool":
            assert isinstance(w, QCheckBox)
        elif type_name(f) == "int":
            assert isinstance(w, QSpinBox) and (w.minimum(), w.maximum()) == (s.min, s.max), f.name
        elif type_name(f) == "float":
            assert isinstance(w, QDoubleSpinBox), f.name
            assert math.isclose(w.minimum(), s.min) and math.isclose(w.maximum(), s.max), f.name
            if s.decimals is not None:
                assert w.decimals() == s.decimals
        else:
            assert isinstance(w, QLineEdit)


def test_every_form_value_reaches_the_config(wiz):
    page = wiz.settings_page
    expected = {f.name: other_value(f, s) for f, s in DECLARED}
    page.load_values(expected)
    assert page.read_values() == expected
    config = wiz.choices.config()
    assert {k: getattr(config, k) for k in expected} == expected
    assert wiz.choices.create_run_kwargs()["seed"] == expected["seed"]


def test_preset_radios_and_summary_line_use_labels(wiz):
    from dragonfarm_gui.logic.new_run import settings_line

    page = wiz.settings_page
    for p in TRAINING_PRESETS:
        page.radios[p.key].click()
        assert page.read_values()["epochs"] == p.values["epochs"]
    assert "LoRA rank 16" in page.radios["thorough"].toolTip()
    line = settings_line(wiz.choices.settings)
    assert line == "Thorough: max length 2048 tokens, epochs 5, learning rate 0.0002, batch size 4, LoRA rank 16"
    page.fields["batch_size"].setValue(8)
    assert settings_line(wiz.choices.settings).startswith("Custom: ")
