"""A rough time/memory estimate for a run. No Qt.

The beginner presets live in the run contract (trainer/run/training_presets.py)
so that `dragonfarm new --preset` offers the same ones; the names below are
kept for the wizard's pages."""
from __future__ import annotations

import math
from dataclasses import dataclass

from trainer.run.config import TrainConfig, effective_epochs
from trainer.run.training_presets import DEFAULT_PRESET as DEFAULT_PRESET
from trainer.run.training_presets import TRAINING_PRESETS as BEGINNER_PRESETS
from trainer.run.training_presets import TrainingPreset as BeginnerPreset
from trainer.run.training_presets import matching_preset as matching_preset
from trainer.run.training_presets import preset_by_key as preset_by_key

__all__ = ["BEGINNER_PRESETS", "BeginnerPreset", "DEFAULT_PRESET", "Estimate", "estimate", "fits_machine",
           "format_duration", "matching_preset", "measured_speed", "preset_by_key"]


# Rough training throughput (tokens per second) for a 1B-parameter model;
# smaller models scale up roughly in proportion. Deliberately cautious.
_TOKENS_PER_S_PER_B = {"cuda": 9000.0, "mps": 1500.0, "cpu": 60.0}


@dataclass(frozen=True)
class Estimate:
    steps: int
    seconds: float
    memory_gb: float
    device: str

    def words(self) -> str:
        where = {"cuda": "on the GPU", "mps": "on the Apple GPU", "cpu": "on the processor (CPU)"}[self.device]
        return (f"About {format_duration(self.seconds)} {where}, {self.steps} steps, "
                f"needing about {self.memory_gb:.1f} GB of memory.")


def measured_speed(runs_dir, device: str) -> float | None:
    """Tokens per second for a 1B model on this machine, from the newest finished
    run on the same device (its speed times its size), or None."""
    from trainer.run.reader import list_runs

    best = None
    for run in list_runs(runs_dir):
        s = run.status()
        tps = (s.get("metrics") or {}).get("tokens_per_second")
        params = s.get("params_total")
        if s.get("state") == "done" and s.get("device") == device and isinstance(tps, (int, float)) and tps > 0 \
                and isinstance(params, (int, float)) and params > 0:
            when = s.get("updated_at") or 0
            if best is None or when > best[0]:
                best = (when, tps * params / 1e9)
    return best[1] if best else None


def estimate(config: TrainConfig, train_examples: int, avg_tokens: float,
             params_b: float | None, device: str = "cpu", speed_per_b: float | None = None) -> Estimate:
    """A rough, honest estimate: better a range of minutes than a false promise.
    speed_per_b: this machine's measured speed (see measured_speed), if known."""
    device = device if device in _TOKENS_PER_S_PER_B else "cpu"
    params_b = params_b if params_b and params_b > 0 else 0.5
    per_step = max(1, config.batch_size * config.gradient_accumulation)
    steps_per_epoch = max(1, math.ceil(max(train_examples, 1) / per_step))
    epochs = effective_epochs(config, train_examples)
    steps = config.max_steps if config.max_steps > 0 else max(1, math.ceil(steps_per_epoch * epochs))
    tokens_per_example = min(max(avg_tokens, 1.0), config.max_length)
    total_tokens = steps * per_step * tokens_per_example
    speed = (speed_per_b or _TOKENS_PER_S_PER_B[device]) / params_b
    seconds = total_tokens / speed + 20.0 + 15.0 * params_b  # plus loading the model
    bytes_per_param = 4 if device == "cpu" else 2
    weights = params_b * bytes_per_param
    activations = config.batch_size * tokens_per_example * params_b * 0.0008
    adapter = params_b * config.lora_r / 16 * 0.05
    memory = weights * 1.15 + activations + adapter + 0.4
    return Estimate(steps=steps, seconds=seconds, memory_gb=round(memory, 1), device=device)


def format_duration(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "—"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, sec = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {sec:02d} s" if minutes < 10 else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def fits_machine(min_gpu_gb: float, cpu_ok: bool, check: dict | None) -> tuple[bool | None, str]:
    """Whether a preset fits this machine, from `check --json` output (None: unknown)."""
    if not check:
        return None, "Not checked yet"
    device = check.get("device")
    if device == "cuda":
        gpu = check.get("gpu_memory_gb")
        if isinstance(gpu, (int, float)):
            ok = gpu >= min_gpu_gb
            return ok, (f"Yes ({gpu:g} GB GPU)" if ok else f"No: needs {min_gpu_gb:g} GB, the GPU has {gpu:g} GB")
        return None, "GPU memory unknown"
    if device == "mps":
        mem = check.get("system_memory_gb")
        if isinstance(mem, (int, float)):
            ok = mem * 0.6 >= min_gpu_gb
            return ok, "Yes (Apple GPU)" if ok else f"Tight: needs {min_gpu_gb:g} GB, this Mac has {mem:g} GB"
        return None, "Memory unknown"
    if cpu_ok:
        return True, "Yes, on the CPU (slow)"
    return False, "Too slow without a GPU"
