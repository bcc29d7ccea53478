"""The wizard's choices and the exact create_run call they make. No Qt.

The wizard calls trainer.dataimport.create_run with these arguments, the same
function `dragonfarm new` calls, so both make the same run folder.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainer.run.config import DEFAULT_EVAL_FRACTION, DEFAULT_MODEL, DEFAULT_SEED, TrainConfig
from trainer.run.declare import declared_settings, format_value
from trainer.run.presets import resolve_model_id
from trainer.run.resources import resource
from trainer.run.training_presets import DEFAULT_PRESET, matching_preset, preset_by_key

# The chat template's own tokens per example (role markers, a default system
# prompt): measured about 30 for SmolLM2 on the pirate example.
TEMPLATE_TOKENS = 30.0

# The training settings the wizard's Choices.settings holds: every declared setting
# except the seed, which Choices keeps apart because the held-out split uses it too.
DECLARED = {f.name: s for f, s in declared_settings(TrainConfig)}
SETTING_FIELDS = [name for name in DECLARED if name != "seed"]


def label_in_sentence(name: str) -> str:
    """A setting's label inside a sentence: "learning rate", but "LoRA rank"."""
    label = DECLARED[name].label
    first = label.split()[0]
    return label[0].lower() + label[1:] if first[1:] == first[1:].lower() else label


def settings_line(settings: dict[str, Any]) -> str:
    """The summary page's one line: the preset (or Custom) and the settings that are not advanced."""
    preset = matching_preset(settings)
    words = []
    for name, s in DECLARED.items():
        if not s.advanced and name in settings:
            label = label_in_sentence(name).split(" (")[0]
            words.append(f"{label} {format_value(settings[name])}" + (f" {s.unit}" if s.unit else ""))
    return (preset_by_key(preset).title if preset else "Custom") + ": " + ", ".join(words)


def questions_from_text(text: str) -> list[str]:
    """Your own test questions as typed in the wizard: one per line, blank lines dropped."""
    return [line.strip() for line in text.splitlines() if line.strip()]


def example_datasets() -> list[Path]:
    folder = resource("examples")
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in (".csv", ".tsv", ".xlsx", ".json", ".jsonl"))


def default_settings() -> dict[str, Any]:
    base = TrainConfig().to_dict()
    values = {k: base[k] for k in SETTING_FIELDS}
    values.update(preset_by_key(DEFAULT_PRESET).config_values())
    return values


@dataclass
class Choices:
    data_path: Path | None = None
    sheet: str | None = None
    mapping: Any = None            # trainer.dataimport.Mapping (resolved)
    report: Any = None             # trainer.dataimport.Report
    eval_fraction: float = DEFAULT_EVAL_FRACTION
    eval_path: Path | None = None
    model: str = DEFAULT_MODEL
    params_b: float | None = 0.135
    gated: bool = False
    runs_dir: Path | None = None
    name: str = ""
    seed: int = DEFAULT_SEED
    settings: dict[str, Any] = field(default_factory=default_settings)
    questions: list[str] = field(default_factory=list)   # your own test questions (config check_questions)
    start_now: bool = True

    def config_overrides(self) -> dict[str, Any]:
        values = {k: self.settings[k] for k in SETTING_FIELDS if k in self.settings}
        if self.questions:
            values["check_questions"] = list(self.questions)
        return values

    def config(self) -> TrainConfig:
        """The config the run will get (for checks and the estimate)."""
        return TrainConfig(model=resolve_model_id(self.model), seed=self.seed).with_overrides(**self.config_overrides())

    def create_run_kwargs(self) -> dict[str, Any]:
        return {
            "runs_dir": self.runs_dir, "name": self.name, "model": resolve_model_id(self.model),
            "mapping": self.mapping, "sheet": self.sheet,
            "eval_fraction": 0.0 if self.eval_path else self.eval_fraction,
            "eval_file": self.eval_path, "seed": self.seed, "config_overrides": self.config_overrides(),
        }

    def usable_train_examples(self) -> int:
        usable = self.report.counts.usable if self.report is not None else 0
        return usable if self.eval_path else max(1, round(usable * (1 - self.eval_fraction)))

    def average_tokens(self) -> float:
        lengths = getattr(self.report, "lengths", None)
        if lengths is None or not lengths.count:
            return 200.0
        text = lengths.mean if lengths.unit == "tokens" else lengths.mean / 4.0
        return text + TEMPLATE_TOKENS
