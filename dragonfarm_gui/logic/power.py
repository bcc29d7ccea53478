"""Battery power, for the warning when a run starts on battery. No Qt.

psutil.sensors_battery() says whether the computer is plugged in, the charge
and the time left; any failure (no battery, no psutil, an odd platform) means
"unknown", and unknown never warns.
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainer.run.config import ConfigError, TrainConfig
from trainer.run.presets import find_preset
from trainer.run.settings import load_settings

from .estimates import estimate, format_duration, measured_speed


@dataclass(frozen=True)
class Battery:
    percent: float
    plugged: bool
    seconds_left: float | None   # None: unknown or unlimited


def _sensors() -> Any:
    import psutil

    return psutil.sensors_battery()


def battery(sensors: Callable[[], Any] = _sensors) -> Battery | None:
    """The battery now, or None when there is none or it cannot be read."""
    try:
        found = sensors()
        if found is None:
            return None
        left = found.secsleft
        left = float(left) if isinstance(left, (int, float)) and left >= 0 and math.isfinite(left) else None
        return Battery(float(found.percent), bool(found.power_plugged), left)
    except Exception:  # noqa: BLE001 - a battery we cannot read is an unknown battery
        return None


def battery_warning(state: Battery | None, training_seconds: float | None = None) -> str | None:
    """Words for starting a run on battery, or None when plugged in (or unknown)."""
    if state is None or state.plugged:
        return None
    left = f", about {format_duration(state.seconds_left)} left" if state.seconds_left else ""
    text = f"This computer is running on battery ({state.percent:.0f}%{left})."
    if training_seconds:
        text += f" This run is estimated to take {format_duration(training_seconds)}."
        if state.seconds_left and training_seconds > state.seconds_left:
            text += " That is longer than the battery will last."
    return text + (" Training works the computer hard and drains the battery fast; plug it in before you start, "
                   "or the run may stop when the battery runs out (Resume continues it later).")


def run_estimate_seconds(run_dir: str | Path, runs_dir: str | Path | None = None) -> float | None:
    """A rough training time for a run about to start, from its config and data (None if unknown)."""
    try:
        config = TrainConfig.load(run_dir)
        lines = (Path(run_dir) / config.train_file).read_text(encoding="utf-8").splitlines()
    except (ConfigError, OSError, UnicodeDecodeError):
        return None
    chars = []
    for line in lines[:200]:
        try:
            chars.append(sum(len(m.get("content", "")) for m in json.loads(line)["messages"]))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
    avg_tokens = (sum(chars) / len(chars) / 4) if chars else 200.0
    check = load_settings().get("device_check") or {}
    device = config.device if config.device != "auto" else check.get("device", "cpu")
    preset = find_preset(config.model)
    speed = measured_speed(runs_dir, device) if runs_dir else None
    return estimate(config, len(lines), avg_tokens, preset.params_b if preset else None, device, speed).seconds

