"""The run's config.json: a typed, versioned, validated description of a run.

Standard library only: the app imports this to write runs without torch.
Every validation message names the field and says how to fix it.
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainer.run.files import CONFIG_FILE, EVAL_DATA, TRAIN_DATA

SCHEMA_VERSION = 1

DEVICES = ("auto", "cuda", "mps", "cpu")
PRECISIONS = ("auto", "bf16", "fp16", "fp32")
SCHEDULERS = ("cosine", "linear", "constant")


class ConfigError(ValueError):
    """A config that cannot be used. `problems` holds one line per field."""

    def __init__(self, problems: list[str], source: str | None = None):
        self.problems = list(problems)
        self.source = source
        many = len(self.problems) > 1
        what = source or "The run settings"
        head = f"{what} {'has problems' if many else 'has a problem'}"
        super().__init__(head + ":\n" + "\n".join(f"  - {p}" for p in self.problems))


@dataclass
class TrainConfig:
    """Everything the trainer needs. Field order is the order in config.json."""

    schema_version: int = SCHEMA_VERSION
    name: str = ""
    # A preset id, any Hugging Face Hub id, a local model folder, or a local .gguf file.
    model: str = "HuggingFaceTB/SmolLM2-135M-Instruct"
    train_file: str = TRAIN_DATA
    eval_file: str = EVAL_DATA
    max_length: int = 1024
    epochs: float = 3.0
    max_steps: int = 0  # > 0 overrides epochs
    learning_rate: float = 2e-4
    lr_scheduler: str = "cosine"
    warmup_ratio: float = 0.05
    batch_size: int = 4
    gradient_accumulation: int = 1
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    # "all-linear" means every linear projection of the architecture (not the output head).
    target_modules: list[str] | str = "all-linear"
    seed: int = 42
    log_every: int = 1
    eval_every: int = 0  # steps between held-out evaluations; 0 = about 5 per run
    save_every: int = 0  # steps between checkpoints; 0 = same as eval_every
    num_samples: int = 3
    sample_max_new_tokens: int = 96
    device: str = "auto"
    precision: str = "auto"
    packing: bool = True
    created_at: str = ""
    notes: str = ""

    # ----- construction -------------------------------------------------
    @classmethod
    def from_dict(cls, data: Any, source: str | None = None) -> "TrainConfig":
        if not isinstance(data, dict):
            raise ConfigError(["the file must hold one JSON object ({...})"], source)
        known = {f.name: f for f in dataclasses.fields(cls)}
        problems = []
        unknown = [k for k in data if k not in known]
        for key in unknown:
            close = _closest(key, known)
            hint = f" (did you mean '{close}'?)" if close else ""
            problems.append(f"{key}: unknown setting{hint}; remove it")
        version = data.get("schema_version", SCHEMA_VERSION)
        if version != SCHEMA_VERSION:
            problems.append(
                f"schema_version: this DragonFarm reads version {SCHEMA_VERSION}, the file says "
                f"{version!r}; make the run again with this version of DragonFarm"
            )
        kwargs = {}
        for key, value in data.items():
            if key not in known:
                continue
            ok, converted, problem = _coerce(known[key], value)
            if ok:
                kwargs[key] = converted
            else:
                problems.append(problem)
        if problems:
            raise ConfigError(problems, source)
        config = cls(**kwargs)
        config.validate(source)
        return config

    @classmethod
    def load(cls, path: str | Path) -> "TrainConfig":
        path = Path(path)
        if path.is_dir():
            path = path / CONFIG_FILE
        if not path.exists():
            raise ConfigError([f"{path.name}: not found; is {path.parent} a DragonFarm run folder?"])
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError([f"not valid JSON ({exc}); fix the file or make the run again"], str(path)) from None
        return cls.from_dict(data, source=str(path))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def save(self, run_dir: str | Path) -> Path:
        self.validate()
        path = Path(run_dir) / CONFIG_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        tmp.replace(path)
        return path

    def with_overrides(self, **overrides: Any) -> "TrainConfig":
        data = self.to_dict()
        data.update({k: v for k, v in overrides.items() if v is not None})
        return TrainConfig.from_dict(data)

    # ----- validation ---------------------------------------------------
    def problems(self) -> list[str]:
        p: list[str] = []

        def need(cond: bool, msg: str) -> None:
            if not cond:
                p.append(msg)

        need(bool(str(self.model).strip()), "model: empty; give a preset such as HuggingFaceTB/SmolLM2-135M-Instruct, a Hub id, a model folder or a .gguf file")
        need(bool(self.train_file.strip()), "train_file: empty; give the training data file, normally data/train.jsonl")
        need(16 <= self.max_length <= 131072, f"max_length: {self.max_length} is out of range; use 16 to 131072 tokens (512 or 1024 is typical)")
        need(self.epochs > 0 or self.max_steps > 0, "epochs: must be more than 0 (or set max_steps); try 3")
        need(self.epochs <= 1000, f"epochs: {self.epochs} is too many; use 1000 or fewer (3 is typical)")
        need(self.max_steps >= 0, f"max_steps: {self.max_steps} is negative; use 0 to train by epochs, or a step count")
        need(0 < self.learning_rate < 1, f"learning_rate: {self.learning_rate} is out of range; use a small positive number such as 0.0002")
        need(self.lr_scheduler in SCHEDULERS, f"lr_scheduler: '{self.lr_scheduler}' is not known; use one of {', '.join(SCHEDULERS)}")
        need(0 <= self.warmup_ratio < 1, f"warmup_ratio: {self.warmup_ratio} is out of range; use 0 to 0.5 (0.05 is typical)")
        need(1 <= self.batch_size <= 1024, f"batch_size: {self.batch_size} is out of range; use 1 to 1024 (4 is typical)")
        need(1 <= self.gradient_accumulation <= 1024, f"gradient_accumulation: {self.gradient_accumulation} is out of range; use 1 to 1024")
        need(1 <= self.lora_r <= 1024, f"lora_r: {self.lora_r} is out of range; use 1 to 1024 (8 or 16 is typical)")
        need(self.lora_alpha > 0, f"lora_alpha: {self.lora_alpha} must be positive; twice lora_r is typical")
        need(0 <= self.lora_dropout < 1, f"lora_dropout: {self.lora_dropout} is out of range; use 0 to 0.5 (0.05 is typical)")
        tm = self.target_modules
        need(tm == "all-linear" or (isinstance(tm, list) and tm and all(isinstance(x, str) and x for x in tm)),
             "target_modules: use \"all-linear\" or a list of module names such as [\"q_proj\", \"v_proj\"]")
        need(self.log_every >= 1, f"log_every: {self.log_every} must be 1 or more")
        need(self.eval_every >= 0, f"eval_every: {self.eval_every} is negative; use 0 for automatic or a step count")
        need(self.save_every >= 0, f"save_every: {self.save_every} is negative; use 0 for automatic or a step count")
        need(0 <= self.num_samples <= 50, f"num_samples: {self.num_samples} is out of range; use 0 to 50")
        need(1 <= self.sample_max_new_tokens <= 4096, f"sample_max_new_tokens: {self.sample_max_new_tokens} is out of range; use 1 to 4096")
        need(self.device in DEVICES, f"device: '{self.device}' is not known; use one of {', '.join(DEVICES)}")
        need(self.precision in PRECISIONS, f"precision: '{self.precision}' is not known; use one of {', '.join(PRECISIONS)}")
        return p

    def validate(self, source: str | None = None) -> None:
        problems = self.problems()
        if problems:
            raise ConfigError(problems, source)


def _closest(key: str, known: dict) -> str | None:
    import difflib

    match = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return match[0] if match else None


_NUMBER_HINT = {int: "a whole number", float: "a number"}


def _coerce(f: dataclasses.Field, value: Any) -> tuple[bool, Any, str]:
    """Check one value against its field's type; JSON gives int for 3.0 etc."""
    typ = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    name = f.name
    if typ == "int":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (isinstance(value, float) and not value.is_integer()):
            return False, None, f"{name}: {value!r} is not a whole number; write it like {f.default}"
        return True, int(value), ""
    if typ == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return False, None, f"{name}: {value!r} is not a number; write it like {f.default}"
        return True, float(value), ""
    if typ == "bool":
        if not isinstance(value, bool):
            return False, None, f"{name}: {value!r} is not true or false"
        return True, value, ""
    if typ == "str":
        if not isinstance(value, str):
            return False, None, f"{name}: {value!r} is not text; put it in quotes"
        return True, value, ""
    # target_modules: list[str] | str
    if isinstance(value, (str, list)):
        return True, value, ""
    return False, None, f"{name}: {value!r} has the wrong type"


def default_eval_every(total_steps: int) -> int:
    """About five held-out evaluations per run, at least every step for tiny runs."""
    return max(1, math.ceil(total_steps / 5))
