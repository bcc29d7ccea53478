"""Beginner presets of training settings (Quick try, Balanced, Thorough).

Data in the contract so that the app's wizard and `dragonfarm new --preset`
offer the same choices. Each preset names only TrainConfig settings; a preset
laid over the defaults must pass TrainConfig's validation (check_presets()).
Standard library only.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping


@dataclass(frozen=True)
class TrainingPreset:
    key: str
    title: str
    sentence: str
    values: Mapping[str, Any]

    def config_values(self) -> dict[str, Any]:
        return dict(self.values)


def _preset(key: str, title: str, sentence: str, **values: Any) -> TrainingPreset:
    return TrainingPreset(key, title, sentence, MappingProxyType(values))


TRAINING_PRESETS: tuple[TrainingPreset, ...] = (
    # Chosen with bench/learning.py (docs/presets.md): a constant learning rate and no LoRA dropout
    # taught facts from few rows where the cosine schedule and dropout did not, and few examples
    # need more passes (min_examples_seen), so a small file is repeated until enough was seen.
    # Averaging the loss per example recalled facts a little more often than per token. On a small
    # file, more passes, a bigger rank, smaller batches or dropout over more passes all did worse,
    # so Thorough sees as many examples as Balanced there and differs on bigger files only.
    # Quick try's few steps learn more at 5e-4 than at 2e-4 (voice 6/6 instead of 0/6), and with
    # Balanced's rank 16 than with 8 (every fact on four seeds instead of two of four).
    _preset("quick", "Quick try",
            "One pass over your examples (more when there are few) in bigger steps: a first look in minutes.",
            epochs=1.0, min_examples_seen=100, learning_rate=5e-4, lr_scheduler="constant", lora_dropout=0.0,
            loss_average="example", lora_r=16, lora_alpha=32, batch_size=4, max_length=512),
    _preset("balanced", "Balanced",
            "Three passes over your examples, more when there are few: the usual choice.",
            epochs=3.0, min_examples_seen=300, learning_rate=2e-4, lr_scheduler="constant", lora_dropout=0.0,
            loss_average="example", lora_r=16, lora_alpha=32, batch_size=4, max_length=1024),
    _preset("thorough", "Thorough",
            "Five passes over a bigger file and longer examples (a small file gets Balanced's passes: more "
            "did worse): slower; best with a GPU.",
            epochs=5.0, min_examples_seen=300, learning_rate=2e-4, lr_scheduler="constant", lora_dropout=0.0,
            loss_average="example", lora_r=16, lora_alpha=32, batch_size=4, max_length=2048),
)
DEFAULT_PRESET = "balanced"


def preset_keys() -> tuple[str, ...]:
    return tuple(p.key for p in TRAINING_PRESETS)


def preset_by_key(key: str) -> TrainingPreset:
    for p in TRAINING_PRESETS:
        if p.key == key:
            return p
    raise KeyError(key)


def matching_preset(values: Mapping[str, Any]) -> str | None:
    """The preset whose values all match, else None ("Custom")."""
    for p in TRAINING_PRESETS:
        if all(_same(values.get(k), v) for k, v in p.values.items()):
            return p.key
    return None


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(float(a), float(b), rel_tol=1e-9)
    return a == b


def check_presets() -> list[str]:
    """Problems with the presets themselves: each must be a valid TrainConfig over the defaults."""
    from trainer.run.config import ConfigError, TrainConfig
    from trainer.run.declare import SETTING

    settings = {f.name for f in TrainConfig.__dataclass_fields__.values() if SETTING in f.metadata}
    problems = []
    for p in TRAINING_PRESETS:
        stray = sorted(set(p.values) - settings)
        if stray:
            problems.append(f"preset {p.key}: {', '.join(stray)} are not training settings")
            continue
        try:
            TrainConfig.from_dict(p.config_values())
        except ConfigError as exc:
            problems += [f"preset {p.key}: {line}" for line in exc.problems]
    return problems
