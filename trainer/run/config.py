"""The run's config.json: a typed, versioned, validated description of a run.

Standard library only: the app imports this to write runs without torch.
Every validation message names the field and says how to fix it.

Each setting is declared once, here, with `setting(...)` (trainer/run/declare.py):
default, label, help, range or choices, typical value, advanced or not, spin-box
step. The checks in problems(), the wizard's Advanced form and summary line, the
beginner presets' checks and the `dragonfarm new --flag`s are made from it.

To add a setting:
  1. Add a field below with `setting(default, label=..., help=..., min=/max= or
     choices=..., typical=...)`, in the place it should appear in config.json
     and the wizard. Write help for someone who does not program.
  2. Use it in the engine (trainer/engine/). That is all: the wizard gets a
     widget, `dragonfarm new` a flag, and validation a range check.
  3. Only a rule between two fields (like epochs and max_steps) needs a line in
     problems(). tests/trainer/test_settings_declared.py checks the rest.
Fields that are not training settings use `run_field(...)` and say who fills them in.
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainer.run.declare import declared_settings, run_field, setting, type_name
from trainer.run.files import CONFIG_FILE, EVAL_DATA, TRAIN_DATA

SCHEMA_VERSION = 1

# Shared defaults: the app, the command line and data import use these names.
DEFAULT_MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"
DEFAULT_SEED = 42
DEFAULT_EVAL_FRACTION = 0.1     # share of examples held out to check progress
MAX_EVAL_FRACTION = 0.5

MAX_CHECK_QUESTIONS = 20       # your own test questions (samples.json); more only make each check slower
MAX_CHECK_QUESTION_CHARS = 2000

DEVICES = ("auto", "cuda", "mps", "cpu")
PRECISIONS = ("auto", "bf16", "fp16", "fp32")
SCHEDULERS = ("cosine", "linear", "constant")
LOSS_AVERAGES = ("example", "token")
TRAIN_DEVICES = DEVICES[1:]     # what "auto" chooses between


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
    """Everything the trainer needs. Field order is the order in config.json and in the wizard."""

    schema_version: int = run_field(SCHEMA_VERSION, why="DragonFarm writes it")
    name: str = run_field("", choice="name", flag="--name")
    # A preset id, any Hugging Face Hub id, a local model folder, or a local .gguf file.
    model: str = run_field(DEFAULT_MODEL, choice="model", flag="--model")
    train_file: str = run_field(TRAIN_DATA, choice="data_path", flag="--data")
    eval_file: str = run_field(EVAL_DATA, choice="eval_path", flag="--eval-file")
    # New questions a person wrote to see what the model learned (samples.json answers them first).
    check_questions: list[str] = run_field([], choice="questions", flag="--question")
    max_length: int = setting(
        1024, label="Max length (tokens)", min=16, max=131072, unit="tokens", typical=(512, 1024), advanced=False,
        help="The longest example, in tokens (about ¾ of a word each). Longer examples are cut. "
             "Lower uses less memory.")
    epochs: float = setting(
        3.0, label="Epochs", min=0.0, max=1000.0, typical=3, decimals=2, step=1.0, advanced=False,
        help="How many times training goes through all your examples. More can learn more, and can also memorise.")
    min_examples_seen: int = setting(
        300, label="Train on at least (examples)", min=0, max=10_000_000, typical=300, zero_means="the epochs alone",
        help="Few examples need more passes to be learned: training repeats them until it has seen at least this "
             "many in all (20 examples and 300 make 15 passes, at most 30). 0 trains for the epochs alone.")
    max_steps: int = setting(
        0, label="Max steps", min=0, max=10_000_000, zero_means="train by epochs",
        help="Stop after this many steps instead of counting epochs. 0 means: use epochs.")
    learning_rate: float = setting(
        2e-4, label="Learning rate", min=1e-6, max=0.5, typical=2e-4, decimals=6, step=1e-5, advanced=False,
        help="How big each learning step is. Too high and training becomes unstable; too low and it learns slowly.")
    lr_scheduler: str = setting(
        "constant", label="Learning-rate schedule", choices=SCHEDULERS,
        help="How the learning rate changes over the run: constant (the same all through; it taught facts "
             "best in DragonFarm's learning benchmark), cosine (smoothly down) or linear (straight down).")
    warmup_ratio: float = setting(
        0.05, label="Warm-up share", min=0.0, max=0.5, typical=0.05, decimals=3, step=0.01,
        help="The share of the run spent slowly raising the learning rate at the start.")
    loss_average: str = setting(
        "example", label="Loss averaging", choices=LOSS_AVERAGES,
        help="How each step's loss is averaged: over examples (each example's own average, so short and long "
             "replies count the same; it recalled facts a little more often in DragonFarm's learning benchmark) "
             "or over every reply word-piece (token; long replies weigh more). The held-out loss is always per token.")
    batch_size: int = setting(
        4, label="Batch size", min=1, max=1024, typical=4, advanced=False,
        help="How many examples are looked at in one step. Larger needs more memory.")
    gradient_accumulation: int = setting(
        1, label="Gradient accumulation", min=1, max=1024, typical=1,
        help="Add up this many batches before each update: a larger effective batch without more memory.")
    lora_r: int = setting(
        16, label="LoRA rank", min=1, max=1024, typical=(8, 16), advanced=False,
        help="The size of the adapter (LoRA rank). Larger can learn more and takes more memory and time.")
    lora_alpha: int = setting(
        32, label="LoRA alpha", min=1, max=4096, typical=32,
        help="How strongly the adapter acts; twice the rank is the usual choice.")
    lora_dropout: float = setting(
        0.0, label="LoRA dropout", min=0.0, max=0.5, typical=(0.0, 0.05), decimals=3, step=0.01,
        help="Randomness that works against memorising; 0 learns facts from few examples best, 0.05 can help "
             "with many varied examples.")
    # "all-linear" means every linear projection of the architecture (not the output head).
    target_modules: list[str] | str = setting(
        "all-linear", label="Target modules",
        help="Which parts of the model get an adapter: all-linear (every linear layer) or a list of names "
             "separated by commas.")
    seed: int = setting(
        DEFAULT_SEED, label="Seed", min=0, max=2**31 - 1,
        help="The random seed for the held-out split and training; the same seed gives the same run.")
    log_every: int = setting(
        1, label="Log every (steps)", min=1, max=100_000, typical=1,
        help="Write a point to the loss plot every this many steps.")
    eval_every: int = setting(
        0, label="Held-out check every (steps)", min=0, max=10_000_000, zero_means="about five times per run",
        help="Check the held-out loss every this many steps. 0 means about five times per run.")
    save_every: int = setting(
        0, label="Checkpoint every (steps)", min=0, max=10_000_000, zero_means="at each held-out check",
        help="Save a checkpoint (for Resume) every this many steps. 0 means at each held-out check.")
    early_stop_checks: int = setting(
        0, label="Stop early after (held-out checks)", min=0, max=100, typical=(2, 3), zero_means="never",
        help="Stop once the held-out loss has stayed above its best for this many checks in a row (it has "
             "started to memorise the examples); the best point's adapter is kept either way. 0 never stops early.")
    num_samples: int = setting(
        3, label="Sample prompts", min=0, max=50, typical=3,
        help="How many held-out prompts get sample replies (before and after) at the end.")
    sample_max_new_tokens: int = setting(
        96, label="Sample reply length", min=1, max=4096, unit="tokens", typical=96,
        help="The longest sample reply, in tokens.")
    device: str = setting(
        "auto", label="Device", choices=DEVICES,
        help="Where to train: auto picks the GPU when there is one that works.")
    precision: str = setting(
        "auto", label="Precision", choices=PRECISIONS,
        help="Number format for training: auto picks the best one for the device.")
    packing: bool = setting(
        True, label="Packing",
        help="Put examples end to end instead of padding them to the same length: faster, same result "
             "(each example still sees only itself). Leave on.")
    created_at: str = run_field("", why="written when the run is made")
    notes: str = run_field("", why="free text a person may add to config.json")

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
        """One message per problem: the declared ranges and choices, then the rules between fields."""
        p: list[str] = []
        if not str(self.model).strip():
            p.append(f"model: empty; give a preset such as {DEFAULT_MODEL}, a Hub id, a model folder or a .gguf file")
        if not str(self.train_file).strip():
            p.append("train_file: empty; give the training data file, normally data/train.jsonl")
        for f, s in declared_settings(type(self)):
            problem = s.problem(f.name, getattr(self, f.name))
            if problem:
                p.append(problem)
        if not (self.epochs > 0 or self.max_steps > 0) and not any(x.startswith("epochs:") for x in p):
            p.append("epochs: must be more than 0 (or set max_steps); try 3")
        p.extend(check_question_problems(self.check_questions))
        tm = self.target_modules
        if not (tm == "all-linear" or (isinstance(tm, list) and tm and all(isinstance(x, str) and x for x in tm))):
            p.append("target_modules: use \"all-linear\" or a list of module names such as [\"q_proj\", \"v_proj\"]")
        return p

    def validate(self, source: str | None = None) -> None:
        problems = self.problems()
        if problems:
            raise ConfigError(problems, source)


def check_question_problems(questions: Any) -> list[str]:
    """What is wrong with a list of your own test questions (the wizard, `--question`, config.json)."""
    if not isinstance(questions, list) or not all(isinstance(q, str) for q in questions):
        return ['check_questions: must be a list of texts, like ["How do I reset my password?"]']
    p = []
    if len(questions) > MAX_CHECK_QUESTIONS:
        p.append(f"check_questions: {len(questions)} questions; keep at most {MAX_CHECK_QUESTIONS} "
                 "(each one is answered twice per run)")
    for i, q in enumerate(questions, 1):
        if not q.strip():
            p.append(f"check_questions: question {i} is empty; remove it or write a question")
        elif len(q) > MAX_CHECK_QUESTION_CHARS:
            p.append(f"check_questions: question {i} has {len(q):,} characters; keep it under "
                     f"{MAX_CHECK_QUESTION_CHARS:,}")
    return p


def _closest(key: str, known: dict) -> str | None:
    import difflib

    match = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return match[0] if match else None


_NUMBER_HINT = {int: "a whole number", float: "a number"}


def _coerce(f: dataclasses.Field, value: Any) -> tuple[bool, Any, str]:
    """Check one value against its field's type; JSON gives int for 3.0 etc."""
    typ = type_name(f)
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
    if typ == "list[str]":
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            return False, None, f"{name}: {value!r} is not a list of texts; write it like [\"first\", \"second\"]"
        return True, list(value), ""
    # target_modules: list[str] | str
    if isinstance(value, (str, list)):
        return True, value, ""
    return False, None, f"{name}: {value!r} has the wrong type"


MAX_AUTO_EPOCHS = 30.0   # min_examples_seen never asks for more passes than this


def effective_epochs(config: "TrainConfig", examples: int) -> float:
    """The passes a run makes over its `examples` training examples: its epochs, or
    more when min_examples_seen asks for more over a small set (docs/presets.md)."""
    if config.min_examples_seen > 0 and examples > 0:
        return max(config.epochs, min(config.min_examples_seen / examples, MAX_AUTO_EPOCHS))
    return config.epochs


def default_eval_every(total_steps: int) -> int:
    """About five held-out evaluations per run, at least every step for tiny runs."""
    return max(1, math.ceil(total_steps / 5))
