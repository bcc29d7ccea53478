"""How a setting is declared, and what is made from the declaration.

A field of TrainConfig made with `setting(...)` carries, in its dataclass
metadata, everything the rest of DragonFarm needs to know about it: default,
range or choices, label, help, typical value, whether it is advanced, and how
a spin box steps. Validation messages (TrainConfig.problems), the wizard's
Advanced form, the summary line, the beginner presets' checks and the
`dragonfarm new` flags are all made from these declarations.

A field made with `run_field(...)` is part of the run but not a training
setting (the model, the name, file paths): it says how a person reaches it
(the wizard's Choices attribute, the command-line flag) or that it is filled
in automatically.

Standard library only.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

SETTING = "setting"
RUN_FIELD = "run_field"


@dataclass(frozen=True)
class Setting:
    """What a person sees and may choose for one training setting."""

    label: str
    help: str
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] | None = None
    typical: Any = None            # a value, or a tuple of values ("8 or 16")
    advanced: bool = True          # False: shown in the run's one-line summary and first in --help
    step: float | None = None      # spin-box step for numbers
    decimals: int | None = None    # spin-box decimals for floats
    unit: str = ""                 # said after a range: "16 to 131072 tokens"
    zero_means: str = ""           # what the value 0 means: "automatic", "use epochs"

    def range_words(self) -> str:
        if self.choices:
            return "one of " + ", ".join(self.choices)
        if self.min is None and self.max is None:
            return ""
        if self.max is None:
            words = f"{format_value(self.min)} or more"
        elif self.min is None:
            words = f"at most {format_value(self.max)}"
        else:
            words = f"{format_value(self.min)} to {format_value(self.max)}"
        words += f" {self.unit}" if self.unit else ""
        if self.zero_means and self.min == 0:
            words += f"; 0 means {self.zero_means}"
        return words

    def typical_words(self) -> str:
        if self.typical is None:
            return ""
        values = self.typical if isinstance(self.typical, tuple) else (self.typical,)
        return " or ".join(format_value(v) for v in values) + " is typical"

    def problem(self, name: str, value: Any) -> str | None:
        """One validation message for `value`, or None when it is fine."""
        if self.choices:
            if value not in self.choices:
                return f"{name}: '{value}' is not known; use {self.range_words()}"
            return None
        if self.min is None and self.max is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return f"{name}: {value!r} is not a number; use {self.range_words()}"
        if (self.min is not None and value < self.min) or (self.max is not None and value > self.max):
            typical = self.typical_words()
            return (f"{name}: {value} is out of range; use {self.range_words()}"
                    + (f" ({typical})" if typical else ""))
        return None


@dataclass(frozen=True)
class RunField:
    """A field of the run that is not a training setting."""

    choice: str | None = None      # the wizard's Choices attribute that fills it (None: automatic)
    flag: str | None = None        # the `dragonfarm new` flag that fills it (None: automatic)
    why: str = ""                  # for automatic fields: who fills it in


def setting(default: Any, *, label: str, help: str, min: float | None = None, max: float | None = None,
            choices: tuple[str, ...] | None = None, typical: Any = None, advanced: bool = True,
            step: float | None = None, decimals: int | None = None, unit: str = "",
            zero_means: str = "") -> Any:
    """A dataclass field declaring one training setting (see the module docstring)."""
    if choices is not None and default not in choices:
        raise ValueError(f"default {default!r} is not one of {choices}")
    meta = Setting(label=label, help=help, min=min, max=max, choices=tuple(choices) if choices else None,
                   typical=typical, advanced=advanced, step=step, decimals=decimals, unit=unit,
                   zero_means=zero_means)
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata={SETTING: meta})
    return field(default=default, metadata={SETTING: meta})


def run_field(default: Any, *, choice: str | None = None, flag: str | None = None, why: str = "") -> Any:
    """A dataclass field that is part of the run but not a training setting."""
    meta = {RUN_FIELD: RunField(choice=choice, flag=flag, why=why)}
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata=meta)
    return field(default=default, metadata=meta)


def declared_settings(cls: type) -> list[tuple[dataclasses.Field, Setting]]:
    """Every (field, Setting) of a config class, in field order."""
    return [(f, f.metadata[SETTING]) for f in dataclasses.fields(cls) if SETTING in f.metadata]


def type_name(f: dataclasses.Field) -> str:
    """"int", "float", "bool", "str", or the annotation text for anything else."""
    return f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))


def format_value(value: Any) -> str:
    """A number as a person writes it: 0.0002 (not 2e-04), 3 (not 3.0), 1024."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if not isinstance(value, (int, float)):
        return value if isinstance(value, str) else ",".join(value) if isinstance(value, list) else str(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        if 1e-9 <= abs(value) < 1e-4:
            return f"{value:.10f}".rstrip("0")
        return f"{value:g}"
    return str(value)


def parse_text(f: dataclasses.Field, text: str) -> Any:
    """A setting typed as text (a command-line flag, a line edit) as its field's value.
    Lists are comma-separated; a field that may be a list or text keeps its default word
    ("all-linear") and empty text as text."""
    typ = type_name(f)
    if typ == "int":
        return int(text)
    if typ == "float":
        return float(text)
    if typ == "bool":
        return text.strip().lower() in ("1", "true", "yes", "on")
    if typ == "str":
        return text
    text = text.strip()
    if text in ("", f.default):
        return text
    return [t.strip() for t in text.split(",") if t.strip()]
