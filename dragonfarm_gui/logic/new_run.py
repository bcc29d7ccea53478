"""The wizard's choices and the exact create_run call they make. No Qt.

The wizard calls trainer.dataimport.create_run with these arguments, the same
function `dragonfarm new` calls, so both make the same run folder.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainer.run.config import TrainConfig
from trainer.run.presets import resolve_model_id
from trainer.run.resources import resource

from .estimates import DEFAULT_PRESET, preset_by_key

# The chat template's own tokens per example (role markers, a default system
# prompt): measured about 30 for SmolLM2 on the pirate example.
TEMPLATE_TOKENS = 30.0

# Settings the wizard's Advanced section shows (every training field of TrainConfig).
NOT_SETTINGS = {"schema_version", "name", "model", "train_file", "eval_file", "created_at", "notes", "seed"}
ADVANCED_FIELDS = [f.name for f in dataclasses.fields(TrainConfig) if f.name not in NOT_SETTINGS]

HELP = {
    "max_length": "The longest example, in tokens (about ¾ of a word each). Longer examples are cut. Lower uses less memory.",
    "epochs": "How many times training goes through all your examples. More can learn more, and can also memorise.",
    "max_steps": "Stop after this many steps instead of counting epochs. 0 means: use epochs.",
    "learning_rate": "How big each learning step is. Too high and training becomes unstable; too low and it learns slowly.",
    "lr_scheduler": "How the learning rate changes over the run: cosine (smoothly down), linear (straight down) or constant.",
    "warmup_ratio": "The share of the run spent slowly raising the learning rate at the start.",
    "batch_size": "How many examples are looked at in one step. Larger needs more memory.",
    "gradient_accumulation": "Add up this many batches before each update: a larger effective batch without more memory.",
    "lora_r": "The size of the adapter (LoRA rank). Larger can learn more and takes more memory and time.",
    "lora_alpha": "How strongly the adapter acts; twice the rank is the usual choice.",
    "lora_dropout": "A little randomness that helps against memorising; 0.05 is typical.",
    "target_modules": "Which parts of the model get an adapter: all-linear (every linear layer) or a list of names.",
    "log_every": "Write a point to the loss plot every this many steps.",
    "eval_every": "Check the held-out loss every this many steps. 0 means about five times per run.",
    "save_every": "Save a checkpoint (for Resume) every this many steps. 0 means at each held-out check.",
    "num_samples": "How many held-out prompts get sample replies (before and after) at the end.",
    "sample_max_new_tokens": "The longest sample reply, in tokens.",
    "device": "Where to train: auto picks the GPU when there is one that works.",
    "precision": "Number format for training: auto picks the best one for the device.",
    "packing": "Put examples end to end instead of padding them to the same length: faster, same result (each example still sees only itself). Leave on.",
    "seed": "The random seed for the held-out split and training; the same seed gives the same run.",
}

LABELS = {
    "max_length": "Max length (tokens)", "epochs": "Epochs", "max_steps": "Max steps", "learning_rate": "Learning rate",
    "lr_scheduler": "Learning-rate schedule", "warmup_ratio": "Warm-up share", "batch_size": "Batch size",
    "gradient_accumulation": "Gradient accumulation", "lora_r": "LoRA rank", "lora_alpha": "LoRA alpha",
    "lora_dropout": "LoRA dropout", "target_modules": "Target modules", "log_every": "Log every (steps)",
    "eval_every": "Held-out check every (steps)", "save_every": "Checkpoint every (steps)",
    "num_samples": "Sample prompts", "sample_max_new_tokens": "Sample reply length", "device": "Device",
    "precision": "Precision", "packing": "Packing", "seed": "Seed",
}


def example_datasets() -> list[Path]:
    folder = resource("examples")
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in (".csv", ".tsv", ".xlsx", ".json", ".jsonl"))


def default_settings() -> dict[str, Any]:
    base = TrainConfig().to_dict()
    values = {k: base[k] for k in ADVANCED_FIELDS}
    values.update(preset_by_key(DEFAULT_PRESET).values)
    return values


@dataclass
class Choices:
    data_path: Path | None = None
    sheet: str | None = None
    mapping: Any = None            # trainer.dataimport.Mapping (resolved)
    report: Any = None             # trainer.dataimport.Report
    eval_fraction: float = 0.1
    eval_path: Path | None = None
    model: str = "HuggingFaceTB/SmolLM2-135M-Instruct"
    params_b: float | None = 0.135
    gated: bool = False
    runs_dir: Path | None = None
    name: str = ""
    seed: int = 42
    settings: dict[str, Any] = field(default_factory=default_settings)
    start_now: bool = True

    def config_overrides(self) -> dict[str, Any]:
        return {k: self.settings[k] for k in ADVANCED_FIELDS if k in self.settings}

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
