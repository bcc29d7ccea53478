"""Command-line flags made from the settings declared on TrainConfig, and --preset.

Every training setting becomes `--name-with-dashes` with its declared help,
range and default, so `dragonfarm new --help` and the wizard say the same.
A flag left out is None and does not override the preset or the default.
"""
from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from trainer.run.config import TrainConfig
from trainer.run.declare import Setting, declared_settings, format_value, parse_text, type_name
from trainer.run.training_presets import DEFAULT_PRESET, TRAINING_PRESETS, preset_by_key, preset_keys


def flag_name(name: str) -> str:
    return "--" + name.replace("_", "-")


def _help(default: Any, s: Setting) -> str:
    # argparse lists the choices itself, and most help already says what 0 means.
    words = "" if s.choices else s.range_words().split("; 0 means")[0] if "0 means" in s.help else s.range_words()
    extra = [w for w in (words, f"default {format_value(default)}") if w]
    return f"{s.help} ({'; '.join(extra)})".replace("%", "%%")


def _converter(f):
    typ = type_name(f)
    if typ in ("int", "float"):
        kind = "a whole number" if typ == "int" else "a number"

        def convert(text: str):
            try:
                return parse_text(f, text)
            except ValueError:
                raise argparse.ArgumentTypeError(f"{text!r} is not {kind}") from None
        convert.__name__ = typ
        return convert
    return lambda text: parse_text(f, text)


def add_setting_flags(parser: argparse.ArgumentParser, only: tuple[str, ...] | None = None) -> None:
    """One flag per declared setting (or the ones in `only`): the main settings in one
    group, the advanced ones in another."""
    declared = [(f, s) for f, s in declared_settings(TrainConfig) if only is None or f.name in only]
    if only is not None:
        groups = {True: parser, False: parser}
    else:
        groups = {False: parser.add_argument_group("training settings (override the preset; "
                                                   "can be changed later in config.json)"),
                  True: parser.add_argument_group("advanced training settings")}
    for f, s in declared:
        target = groups[s.advanced]
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        kwargs: dict[str, Any] = {"dest": f.name, "default": None, "help": _help(default, s)}
        if type_name(f) == "bool":
            kwargs["action"] = argparse.BooleanOptionalAction
        elif s.choices:
            kwargs["choices"] = s.choices
        else:
            kwargs["type"] = _converter(f)
            kwargs["metavar"] = "N" if type_name(f) in ("int", "float") else "TEXT"
        target.add_argument(flag_name(f.name), **kwargs)


def add_preset_flag(parser: argparse.ArgumentParser) -> None:
    listed = " ".join(f"{p.key}: {p.sentence}" for p in TRAINING_PRESETS)
    parser.add_argument("--preset", choices=preset_keys(), default=None,
                        help=f"a beginner preset of training settings (default {DEFAULT_PRESET}, "
                             f"the same as no preset). {listed}".replace("%", "%%"))


def setting_values(args: argparse.Namespace) -> dict[str, Any]:
    """The preset's values, then every setting flag that was given."""
    values: dict[str, Any] = {}
    if getattr(args, "preset", None):
        values.update(preset_by_key(args.preset).config_values())
    for f, _s in declared_settings(TrainConfig):
        given = getattr(args, f.name, None)
        if given is not None:
            values[f.name] = given
    return values

