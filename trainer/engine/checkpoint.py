"""checkpoints/step-N: adapter weights, optimizer, scheduler and RNG; the last two are kept."""
from __future__ import annotations

import json
import logging
import random
import shutil
from pathlib import Path
from typing import Any

from trainer.run.files import CHECKPOINTS_DIR
from trainer.run.errors import UserError

log = logging.getLogger("dragonfarm.checkpoint")
KEEP = 2


def save_checkpoint(run_dir: Path, step: int, model: Any, optimizer: Any, scheduler: Any, extra: dict[str, Any]) -> Path:
    import torch

    folder = run_dir / CHECKPOINTS_DIR
    final = folder / f"step-{step}"
    tmp = folder / f".step-{step}.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    model.save_pretrained(str(tmp))
    torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                "torch_rng": torch.get_rng_state(), "python_rng": random.getstate()}, tmp / "training_state.pt")
    (tmp / "trainer_state.json").write_text(json.dumps({"step": step, **extra}, indent=2))
    shutil.rmtree(final, ignore_errors=True)
    tmp.replace(final)
    for old in sorted(_steps(folder))[:-KEEP]:
        shutil.rmtree(folder / f"step-{old}", ignore_errors=True)
    log.info("Saved checkpoint at step %d", step)
    return final


def _steps(folder: Path) -> list[int]:
    out = []
    for p in folder.glob("step-*"):
        tail = p.name.split("-", 1)[1]
        if tail.isdigit() and (p / "trainer_state.json").is_file():
            out.append(int(tail))
    return out


def latest_checkpoint(run_dir: Path) -> Path | None:
    steps = _steps(run_dir / CHECKPOINTS_DIR) if (run_dir / CHECKPOINTS_DIR).is_dir() else []
    return run_dir / CHECKPOINTS_DIR / f"step-{max(steps)}" if steps else None


def load_checkpoint(path: Path, model: Any, optimizer: Any, scheduler: Any) -> dict[str, Any]:
    import torch
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    weights = path / "adapter_model.safetensors"
    if not weights.is_file():
        raise UserError(f"The checkpoint {path.name} is incomplete.", "Start the run again from the beginning.")
    set_peft_model_state_dict(model, load_file(str(weights)))
    state = torch.load(path / "training_state.pt", weights_only=False)
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["torch_rng"])
    random.setstate(state["python_rng"])
    return json.loads((path / "trainer_state.json").read_text())
