"""Type and range checks for what the trainer writes (status.json, progress
lines, eval.json, samples.json), because a run folder is untrusted input.

Each `clean_*` returns what can be trusted (bad fields dropped, non-finite
losses as None, since a diverged run honestly writes NaN) and the problems in
words ("step is 'five', not a whole number"). Readers show a run with problems
as damaged, naming the file, and keep every other run intact.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from trainer.run.files import ADAPTER_BEST_DIR, ADAPTER_DIR
from trainer.run.states import ALL_STATES

MAX_JSON_BYTES = 32 << 20   # status, eval and samples files are kilobytes
MAX_PID = 2**32
MAX_COUNT = 10**15
MAX_TIME = 10**11           # Unix seconds; the year 5138
MAX_SAMPLES = 200
MISSING = object()
BEST_ADAPTERS = (ADAPTER_BEST_DIR, ADAPTER_DIR)   # eval.json's best.adapter: where the best point's adapter is

_STATUS_TEXT = ("message", "host", "device", "device_name", "precision", "error", "error_detail")
_STATUS_COUNTS = {"pid": (1, MAX_PID), "step": (0, MAX_COUNT), "total_steps": (0, MAX_COUNT),
                  "params_total": (0, MAX_COUNT), "params_trainable": (0, MAX_COUNT), "resumed_from": (0, MAX_COUNT)}
_STATUS_TIMES = ("started_at", "updated_at", "heartbeat_at", "pid_created_at")
_STATUS_NUMBERS = ("epoch", "loss")
_PROGRESS_NUMBERS = ("epoch", "loss", "eval_loss", "learning_rate", "grad_norm", "tokens_per_second",
                     "elapsed_s", "eta_s", "time")
_SAMPLE_TEXT = ("prompt", "reference", "base", "finetuned")


def shown(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _kind(value: Any) -> str:
    return {list: "list", str: "string", int: "number", float: "number", bool: "true/false",
            type(None): "null"}.get(type(value), type(value).__name__)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _count(value: Any, low: int, high: int) -> bool:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return isinstance(value, int) and not isinstance(value, bool) and low <= value < high


def number_or_none(value: Any) -> tuple[bool, float | None]:
    """(ok, value): a finite number, None for NaN/inf/None; not ok for anything else."""
    if value is None:
        return True, None
    if not _is_number(value):
        return False, None
    try:
        value = float(value)
    except OverflowError:
        return True, None
    return True, value if math.isfinite(value) else None


def load_json(path: Path) -> tuple[Any, str | None]:
    """(data, problem): MISSING and no problem when the file is absent."""
    try:
        if path.stat().st_size > MAX_JSON_BYTES:
            return MISSING, f"{path.stat().st_size >> 20} MB, far larger than DragonFarm ever writes"
        raw = path.read_bytes()
    except FileNotFoundError:
        return MISSING, None
    except OSError as exc:
        return MISSING, f"cannot be read ({exc.strerror or exc})"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return MISSING, "not text (binary or damaged)"
    if not text.strip():
        return MISSING, "empty"
    try:
        return json.loads(text), None
    except (ValueError, RecursionError):
        return MISSING, "not complete JSON (cut short or damaged)"


def clean_status(data: Any) -> tuple[dict[str, Any], list[str]]:
    if not isinstance(data, dict):
        return {}, [f"a {_kind(data)}, not an object"]
    clean, problems = {}, []
    for key, value in data.items():
        problem = None
        if value is None or key not in _KNOWN_STATUS:
            clean[key] = value
            continue
        if key == "state":
            problem = None if value in ALL_STATES else f"state {shown(value)} is not a state DragonFarm knows"
        elif key in _STATUS_TEXT:
            problem = None if isinstance(value, str) else f"{key} is {shown(value)}, not text"
        elif key in _STATUS_COUNTS:
            low, high = _STATUS_COUNTS[key]
            if _count(value, low, high):
                value = int(value)
            else:
                problem = f"{key} is {shown(value)}, not a {'process id' if key == 'pid' else 'count'}"
        elif key in _STATUS_TIMES:
            ok = _is_number(value) and 0 <= value < MAX_TIME  # NaN and inf fail the comparison
            problem = None if ok else f"{key} is {shown(value)}, not a time"
        elif key in _STATUS_NUMBERS:
            ok, number = number_or_none(value)
            problem = None if ok else f"{key} is {shown(value)}, not a number"
            value = number
        elif key == "examples":
            ok = isinstance(value, dict) and all(_count(v, 0, MAX_COUNT) for v in value.values())
            problem = None if ok else f"examples is {shown(value)}, not counts"
        elif key == "metrics":
            if isinstance(value, dict) and all(number_or_none(v)[0] for v in value.values()):
                value = {k: number_or_none(v)[1] for k, v in value.items()}
            else:
                problem = f"metrics is {shown(value)}, not numbers"
        if problem:
            problems.append(problem)
        else:
            clean[key] = value
    if data and "state" not in data:
        problems.append("has no state")
    return clean, problems


_KNOWN_STATUS = {"state", "examples", "metrics", *_STATUS_TEXT, *_STATUS_COUNTS, *_STATUS_TIMES, *_STATUS_NUMBERS}


def clean_progress(record: Any) -> tuple[dict[str, Any] | None, str | None]:
    """One progress line: (record, None), or (None, what is wrong with it)."""
    if not isinstance(record, dict):
        return None, "not a JSON object"
    step = record.get("step")
    if not _count(step, 0, MAX_COUNT):
        return None, f"step is {shown(step)}, not a whole number"
    clean = dict(record)
    clean["step"] = int(step)
    for key in _PROGRESS_NUMBERS:
        value = record.get(key)
        if type(value) is float and math.isfinite(value):  # the common case, quickly
            continue
        if key in record:
            ok, value = number_or_none(value)
            if not ok:
                return None, f"{key} is {shown(record[key])}, not a number"
            clean[key] = value
    return clean, None


def clean_eval(data: Any) -> tuple[dict[str, Any], list[str]]:
    if not isinstance(data, dict):
        return {}, [f"a {_kind(data)}, not an object with before and after"]
    clean, problems = {}, []
    for part in ("before", "after"):
        value = data.get(part)
        if value is None:
            continue
        if not isinstance(value, dict):
            problems.append(f"{part} is {shown(value)}, not an object")
            continue
        good = {}
        for key in ("loss", "perplexity"):
            ok, number = number_or_none(value.get(key))
            if not ok:
                problems.append(f"{part} {key} is {shown(value.get(key))}, not a number")
            good[key] = number
        examples = value.get("examples")
        if examples is not None and not _count(examples, 0, MAX_COUNT):
            problems.append(f"{part} examples is {shown(examples)}, not a count")
        else:
            good["examples"] = examples
        clean[part] = good
    best = data.get("best")
    if best is not None:   # the coach's best held-out point (trainer/engine/best.py)
        ok, loss = number_or_none(best.get("loss")) if isinstance(best, dict) else (False, None)
        if not ok or not _count(best.get("step"), 0, MAX_COUNT) or best.get("adapter") not in BEST_ADAPTERS \
                or not _count(best.get("checks", 0), 0, MAX_COUNT):
            problems.append(f"best is {shown(best)}, not a step, loss and adapter")
        else:
            clean["best"] = {"step": int(best["step"]), "loss": loss, "adapter": best["adapter"],
                             "checks": int(best.get("checks", 0))}
    early = data.get("stopped_early_at")
    if early is not None:
        if _count(early, 0, MAX_COUNT):
            clean["stopped_early_at"] = int(early)
        else:
            problems.append(f"stopped_early_at is {shown(early)}, not a step")
    return clean, problems


def clean_samples(data: Any) -> tuple[list[dict[str, Any]], list[str]]:
    if not isinstance(data, dict) or not isinstance(data.get("samples", []), list):
        return [], [f'a {_kind(data)}, not {{"samples": [...]}}'] if not isinstance(data, dict) else ["samples is not a list"]
    clean, problems = [], []
    for i, sample in enumerate(data.get("samples", [])[:MAX_SAMPLES], 1):
        problem = _sample_problem(sample)
        if problem:
            problems.append(f"sample {i} {problem}")
        else:
            clean.append(sample)
    return clean, problems


def _sample_problem(sample: Any) -> str | None:
    if not isinstance(sample, dict):
        return f"is {shown(sample)}, not an object"
    messages = sample.get("messages", [])
    if not isinstance(messages, list) or not all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
            for m in messages):
        return "has messages that are not a list of {role, content}"
    for key in _SAMPLE_TEXT:
        if sample.get(key) is not None and not isinstance(sample[key], str):
            return f"{key} is {shown(sample[key])}, not text"
    if not isinstance(sample.get("yours", False), bool):
        return f"yours is {shown(sample['yours'])}, not true or false"
    return None
