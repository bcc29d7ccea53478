"""What training keeps on disk, written so that a crash or a kill never leaves it damaged.

checkpoints/step-N holds the adapter weights, the optimizer and scheduler
state and the RNG state; the last KEEP are kept. Nothing here is a pickle:
state goes through trainer.engine.statefile (safetensors + JSON), so a
checkpoint from someone else's run folder can never run code.

Every write goes to a temporary folder that is renamed into place, so a
folder named step-N or adapter/ is always complete; a checkpoint missing any
of its files is skipped on resume. When a finished run is started again, its
old results are moved into previous/ and kept until the new run's first
checkpoint (or adapter) exists; if the new run fails before that, they go back.
"""
from __future__ import annotations

import json
import logging
import random
import shutil
from pathlib import Path
from typing import Any

from trainer.engine.statefile import StateFormatError, load_state, save_state
from trainer.run.errors import UserError
from trainer.run.files import (ADAPTER_BEST_DIR, ADAPTER_DIR, CHECKPOINTS_DIR, EVAL_FILE, PREVIOUS_DIR, PROGRESS_FILE,
                               SAMPLES_FILE)

log = logging.getLogger("dragonfarm.checkpoint")
KEEP = 2
WEIGHTS = "adapter_model.safetensors"
STATE_JSON, STATE_TENSORS, STEP_FILE = "training_state.json", "training_state.safetensors", "trainer_state.json"
COMPLETE = (WEIGHTS, "adapter_config.json", STATE_JSON, STATE_TENSORS, STEP_FILE)
RESULTS = (ADAPTER_DIR, ADAPTER_BEST_DIR, CHECKPOINTS_DIR, EVAL_FILE, SAMPLES_FILE, PROGRESS_FILE)


def write_training_state(folder: Path, optimizer: Any, scheduler: Any) -> None:
    import torch

    save_state({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                "torch_rng": torch.get_rng_state(), "python_rng": random.getstate()},
               folder / STATE_JSON, folder / STATE_TENSORS)


def swap_in(tmp: Path, final: Path) -> None:
    """Put a finished temporary folder in place of `final`: the old one is
    renamed away first, so there is always one complete folder (or the other)."""
    old = final.with_name(f".{final.name}.replaced")
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.replace(old)
    tmp.replace(final)
    shutil.rmtree(old, ignore_errors=True)


def save_checkpoint(run_dir: Path, step: int, model: Any, optimizer: Any, scheduler: Any, extra: dict[str, Any]) -> Path:
    folder = run_dir / CHECKPOINTS_DIR
    final = folder / f"step-{step}"
    tmp = folder / f".step-{step}.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        model.save_pretrained(str(tmp), safe_serialization=True)
        write_training_state(tmp, optimizer, scheduler)
        (tmp / STEP_FILE).write_text(json.dumps({"step": step, **extra}, indent=2))  # last: marks it complete
        swap_in(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # a disk-full write leaves the older checkpoints as they were
        raise
    for old in sorted(_steps(folder))[:-KEEP]:
        _remove(folder / f"step-{old}")
    discard_previous(run_dir)
    log.info("Saved checkpoint at step %d", step)
    return final


def save_adapter(run_dir: Path, model: Any, tokenizer: Any) -> Path:
    target = run_dir / ADAPTER_DIR
    tmp = run_dir / (ADAPTER_DIR + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        model.save_pretrained(str(tmp), safe_serialization=True)
        tokenizer.save_pretrained(str(tmp))
        swap_in(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    discard_previous(run_dir)
    return target


def _remove(path: Path) -> None:
    """Rename first, so a kill halfway through never leaves a half-deleted step-N."""
    trash = path.with_name(f".{path.name}.removing")
    shutil.rmtree(trash, ignore_errors=True)
    path.replace(trash)
    shutil.rmtree(trash, ignore_errors=True)


def _steps(folder: Path) -> list[int]:
    out = []
    for p in folder.glob("step-*"):
        tail = p.name.split("-", 1)[1]
        if tail.isdigit() and all((p / name).is_file() for name in COMPLETE):
            out.append(int(tail))
    return out


def latest_checkpoint(run_dir: Path) -> Path | None:
    steps = _steps(run_dir / CHECKPOINTS_DIR) if (run_dir / CHECKPOINTS_DIR).is_dir() else []
    return run_dir / CHECKPOINTS_DIR / f"step-{max(steps)}" if steps else None


def old_format_checkpoint(run_dir: Path) -> bool:
    """A checkpoint from before safetensors state (training_state.pt, a pickle we no longer load)."""
    return any((run_dir / CHECKPOINTS_DIR).glob("step-*/training_state.pt"))


def load_checkpoint(path: Path, model: Any, optimizer: Any, scheduler: Any) -> dict[str, Any]:
    import torch
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    again = "Start the run again from the beginning."
    try:
        set_peft_model_state_dict(model, load_file(str(path / WEIGHTS)))
        state = load_state(path / STATE_JSON, path / STATE_TENSORS)
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["torch_rng"])
        random.setstate(state["python_rng"])
        step = json.loads((path / STEP_FILE).read_text(encoding="utf-8"))
        int(step["step"])
    except (StateFormatError, OSError, ValueError, KeyError, TypeError, RuntimeError) as exc:
        raise UserError(f"The checkpoint {path.name} is damaged ({type(exc).__name__}: {str(exc)[:200]}).",
                        again) from exc
    return step


# ----- the previous results of a run started again ----------------------
def set_aside_previous(run_dir: Path) -> None:
    """Before a fresh start: move the old results into previous/ (kept until a new checkpoint exists)."""
    keep = run_dir / PREVIOUS_DIR
    if keep.exists():
        # An earlier restart died before its first checkpoint: previous/ holds the trained results,
        # and what lies in the run folder now is that attempt's partial output.
        for name in RESULTS:
            _delete(run_dir / name)
        return
    present = [name for name in RESULTS if (run_dir / name).exists()]
    if not present:
        return
    tmp = run_dir / (PREVIOUS_DIR + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    for name in present:
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (run_dir / name).replace(tmp / name)
    tmp.replace(keep)
    log.info("Moved the previous results into %s until the new run's first checkpoint", keep)


def restore_previous(run_dir: Path) -> bool:
    """The new start failed before its first checkpoint: put the old results back."""
    keep = run_dir / PREVIOUS_DIR
    if not keep.is_dir():
        return False
    for name in RESULTS:
        if (keep / name).exists():
            _delete(run_dir / name)
            (keep / name).replace(run_dir / name)
        else:
            _delete(run_dir / name)
    shutil.rmtree(keep, ignore_errors=True)
    return True


def discard_previous(run_dir: Path) -> None:
    shutil.rmtree(run_dir / PREVIOUS_DIR, ignore_errors=True)


def _delete(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
