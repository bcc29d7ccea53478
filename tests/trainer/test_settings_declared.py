"""Each setting is declared once on TrainConfig, and validation, the presets and
`dragonfarm new`'s flags are made from that declaration (the wizard's side is
in tests/gui/test_settings_form.py)."""
from __future__ import annotations

import argparse
import dataclasses
import json
import re
from pathlib import Path

import pytest

from settinghelpers import other_value
from trainer.cli import build_parser, main
from trainer.run import training_presets
from trainer.run.config import TrainConfig
from trainer.run.declare import RUN_FIELD, SETTING, declared_settings, type_name
from trainer.run.training_presets import TRAINING_PRESETS, check_presets, preset_by_key

ROOT = Path(__file__).resolve().parents[2]
DECLARED = declared_settings(TrainConfig)


def as_flags(name: str, value) -> list[str]:
    flag = "--" + name.replace("_", "-")
    if isinstance(value, bool):
        return [flag if value else "--no-" + flag[2:]]
    return [flag, ",".join(value) if isinstance(value, list) else str(value)]


def test_every_field_is_declared_as_a_setting_or_a_run_field():
    for f in dataclasses.fields(TrainConfig):
        assert (SETTING in f.metadata) != (RUN_FIELD in f.metadata), f"{f.name} must be declared once"


@pytest.mark.parametrize("f,s", DECLARED, ids=[f.name for f, _ in DECLARED])
def test_each_declaration_is_complete_and_its_default_valid(f, s):
    assert s.label and s.help.endswith("."), f.name
    typ = type_name(f)
    if typ in ("int", "float") and not s.choices:
        assert s.min is not None and s.max is not None, f"{f.name}: numbers need a declared range"
        for v in (s.typical if isinstance(s.typical, tuple) else (s.typical,)):
            assert v is None or s.min <= v <= s.max, f"{f.name}: typical {v} is outside its range"
    default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
    assert s.problem(f.name, default) is None
    if s.min is not None:
        below = s.min - (1 if typ == "int" else s.min / 2 + 0.001)
        message = s.problem(f.name, below)
        assert message and message.startswith(f"{f.name}: ") and "out of range" in message


def test_validation_uses_the_declared_range():
    cfg = TrainConfig(lora_alpha=4097, warmup_ratio=0.6, lora_dropout=0.51)
    assert cfg.problems() == [
        "warmup_ratio: 0.6 is out of range; use 0 to 0.5 (0.05 is typical)",
        "lora_alpha: 4097 is out of range; use 1 to 4096 (32 is typical)",
        "lora_dropout: 0.51 is out of range; use 0 to 0.5 (0 or 0.05 is typical)",
    ]


def test_every_preset_passes_validation():
    assert check_presets() == []
    for p in TRAINING_PRESETS:
        TrainConfig.from_dict(p.config_values())
    assert preset_by_key(training_presets.DEFAULT_PRESET)


def test_the_default_preset_is_the_defaults():
    """`dragonfarm new --help` says no --preset is the same as the default preset."""
    default = preset_by_key(training_presets.DEFAULT_PRESET)
    assert TrainConfig(**default.config_values()) == TrainConfig()


def test_a_bad_preset_is_caught(monkeypatch):
    bad = training_presets._preset("bad", "Bad", "Too much.", lora_r=5000, epochs_typo=2)
    worse = training_presets._preset("worse", "Worse", "Also too much.", lora_r=5000)
    monkeypatch.setattr(training_presets, "TRAINING_PRESETS", (bad, worse))
    assert check_presets() == [
        "preset bad: epochs_typo are not training settings",
        "preset worse: lora_r: 5000 is out of range; use 1 to 1024 (8 or 16 is typical)",
    ]


def _new_parser() -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["new"]


def test_every_field_has_a_flag_on_dragonfarm_new():
    flags = {o for a in _new_parser()._actions for o in a.option_strings}
    for f in dataclasses.fields(TrainConfig):
        if SETTING in f.metadata:
            assert "--" + f.name.replace("_", "-") in flags, f.name
        else:
            run_field = f.metadata[RUN_FIELD]
            assert run_field.flag in flags if run_field.flag else run_field.why, f.name


def test_help_text_comes_from_the_declaration():
    actions = {a.dest: a for a in _new_parser()._actions}
    for f, s in DECLARED:
        assert actions[f.name].help.startswith(s.help.replace("%", "%%")), f.name
        if s.choices:
            assert tuple(actions[f.name].choices) == s.choices


def _data(tmp_path: Path) -> Path:
    path = tmp_path / "qa.csv"
    rows = "".join(f"What is {i}?,It is {i}.\n" for i in range(12))
    path.write_text("question,answer\n" + rows, encoding="utf-8")
    return path


def test_every_setting_flag_reaches_config_json(tmp_path):
    expected = {f.name: other_value(f, s) for f, s in DECLARED}
    args = ["new", "--data", str(_data(tmp_path)), "--runs-dir", str(tmp_path / "runs"), "--quiet"]
    for name, value in expected.items():
        args += as_flags(name, value)
    assert main(args) == 0
    (run,) = (tmp_path / "runs").iterdir()
    config = json.loads((run / "config.json").read_text(encoding="utf-8"))
    assert {k: config[k] for k in expected} == expected


def test_preset_flag_and_overrides(tmp_path):
    runs = tmp_path / "runs"
    base = ["new", "--data", str(_data(tmp_path)), "--runs-dir", str(runs), "--quiet"]
    assert main(base + ["--name", "quick", "--preset", "quick"]) == 0
    assert main(base + ["--name", "mixed", "--preset", "thorough", "--epochs", "2"]) == 0
    quick = TrainConfig.load(runs / "quick")
    assert all(getattr(quick, k) == v for k, v in preset_by_key("quick").values.items())
    mixed = TrainConfig.load(runs / "mixed")
    assert mixed.epochs == 2 and mixed.lora_r == preset_by_key("thorough").values["lora_r"]


def test_out_of_range_and_wrong_type_flags_are_explained(tmp_path, capsys):
    base = ["new", "--data", str(_data(tmp_path)), "--runs-dir", str(tmp_path / "runs")]
    assert main(base + ["--lora-dropout", "0.9"]) == 2
    assert "lora_dropout: 0.9 is out of range; use 0 to 0.5" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(base + ["--batch-size", "lots"])
    assert "'lots' is not a whole number" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


# Shared defaults live in trainer/run/config.py only. Each pattern is a second
# declaration of one of them (docstrings and tests may still mention the values).
COPIES = {
    "the default model": r'=\s*"HuggingFaceTB/SmolLM2-135M-Instruct"',
    "the seed": r"\bseed(:\s*int)?\s*=\s*42\b|default=42\b",
    "the held-out fraction": r"eval_fraction(:\s*float)?\s*=\s*0\.1\b|default=0\.1\b",
    "the device choices": r'"auto",\s*"cuda",\s*"mps",\s*"cpu"|\("cuda",\s*"mps",\s*"cpu"\)',
}


def test_shared_defaults_are_declared_once():
    found = []
    for package in ("trainer", "dragonfarm_gui"):
        for path in (ROOT / package).rglob("*.py"):
            if path == ROOT / "trainer" / "run" / "config.py":
                continue
            text = path.read_text(encoding="utf-8")
            found += [f"{path.relative_to(ROOT)}: {what}" for what, pattern in COPIES.items()
                      if re.search(pattern, text)]
    assert found == []
