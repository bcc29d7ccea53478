"""Helpers for the tests of the settings declared on TrainConfig (trainer and wizard sides)."""
from __future__ import annotations

import dataclasses

from trainer.run.declare import Setting, type_name


def other_value(f: dataclasses.Field, s: Setting):
    """A valid value that is not the default, for every kind of setting."""
    default = f.default
    if s.choices:
        return next(c for c in s.choices if c != default)
    typ = type_name(f)
    if typ == "bool":
        return not default
    if typ == "int":
        return default + 1 if s.max is None or default + 1 <= s.max else default - 1
    if typ == "float":
        return round((default + s.max) / 2, 4)
    return ["q_proj", "v_proj"]
