"""`dragonfarm merge RUN_DIR`: the adapter folded into the base model, as a
standalone model in `merged/` (safetensors, tokenizer, chat template).

The merge runs in float32 on the CPU (merge_and_unload) and is saved in the
base model's own dtype (its config's torch_dtype/dtype; `--dtype` overrides),
so a 1B model's merged folder is about 2.5 GB in bf16 rather than 5 GB in
float32. It uses the best adapter (adapter-best/) unless `last` asks for the
last one. It checks itself: the merged model, loaded back from disk, must give
the same greedy replies as the adapter model on a few held-out prompts (within
the saved dtype's tolerance). The adapter model's replies are
kept in merged/dragonfarm_merge.json, so each export compares against them
without loading the adapter again.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from trainer.run.files import MERGED_DIR
from trainer.run.reader import Run
from trainer.run.errors import UserError
from trainer.run.files import MERGE_INFO
from trainer.results.check import CheckResult, compare, greedy_ids, held_out_prompts

log = logging.getLogger("dragonfarm.merge")
Progress = Callable[[str], None]


def _quiet(_text: str) -> None:
    pass


DTYPES = {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}
NAMES = {v: k for k, v in DTYPES.items()} | {"float": "f32", "half": "f16", "fp16": "f16", "fp32": "f32"}


def model_dtype(folder: Path) -> str:
    """The dtype a model was published in (config.json's torch_dtype or dtype), as bf16/f16/f32; f32 if unknown."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "f32"
    if not isinstance(config, dict):
        return "f32"
    found = config.get("torch_dtype") or config.get("dtype") or (config.get("text_config") or {}).get("torch_dtype")
    return NAMES.get(str(found).replace("torch.", ""), "f32") if found else "f32"


def adapter_fingerprint(run: Run, last: bool = False) -> str:
    digest = hashlib.sha256()
    for name in ("adapter_config.json", "adapter_model.safetensors", "adapter_model.bin"):
        path = run.adapter_for(last) / name
        if path.is_file():
            with open(path, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(chunk)
    return digest.hexdigest()


def merge_info(run_dir: str | Path) -> dict[str, Any]:
    try:
        data = json.loads((Path(run_dir) / MERGED_DIR / MERGE_INFO).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def merged_is_current(run_dir: str | Path, last: bool = False) -> bool:
    """merged/ exists, is complete, and was made from the chosen adapter (best, or last) as it is now."""
    run = Run(run_dir)
    info = merge_info(run_dir)
    return bool(info) and run.has_adapter() and info.get("adapter_sha256") == adapter_fingerprint(run, last) \
        and (run.path / MERGED_DIR / "config.json").is_file()


@dataclass
class MergeResult:
    path: Path
    check: CheckResult | None
    reused: bool = False


def merge(run_dir: str | Path, on_progress: Progress = _quiet, force: bool = False,
          check: bool = True, last: bool = False, dtype: str | None = None) -> MergeResult:
    """dtype: bf16, f16 or f32; None saves in the base model's own dtype."""
    import torch

    if dtype is not None and dtype not in DTYPES:
        raise UserError(f"'{dtype}' is not a dtype merge knows.", f"Use one of: {', '.join(DTYPES)}.")
    # Scoped, not global: merge runs in-process in tests and in `chat`, beside training.
    with torch.no_grad():
        return _merge(run_dir, on_progress, force, check, last, dtype)


def _merge(run_dir: str | Path, on_progress: Progress, force: bool, check: bool, last: bool,
           dtype: str | None) -> MergeResult:
    import torch

    from trainer.results.generate import load_for_run
    from trainer.engine.models import load_model, resolve_model_path

    run = Run(run_dir)
    if not run.has_adapter():
        raise UserError(f"The run {run.name} has no trained adapter to merge yet.",
                        "Train it first, or wait until it has finished.")
    if run.status().get("live"):
        raise UserError(f"The run {run.name} is still training, so its adapter is still changing.",
                        "Merge it when it has finished (or stop it first).")
    target = run.path / MERGED_DIR
    if not force and merged_is_current(run.path, last):
        on_progress(f"merged/ is already up to date: {target}")
        return MergeResult(target, None, reused=True)
    dtype = dtype or model_dtype(resolve_model_path(run.config.model))
    which = "last" if last or not run.has_best_adapter() else "best"
    best = run.best() or {}
    step = f" (step {best['step']})" if which == "best" and isinstance(best.get("step"), int) else ""
    on_progress(f"Loading the base model and your {which} adapter{step} (float32, on the CPU)…")
    model, tokenizer, _ = load_for_run(run.path, device="cpu", last=last)
    prompts = held_out_prompts(run.path) if check else []
    reference = greedy_ids(model, tokenizer, prompts) if check else []
    on_progress("Folding the adapter into the model…")
    merged = model.merge_and_unload()
    tmp = run.path / f"{MERGED_DIR}.partial-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    on_progress(f"Saving the merged model in {dtype}…")
    merged = merged.to(getattr(torch, DTYPES[dtype]))
    merged.save_pretrained(str(tmp))
    tokenizer.save_pretrained(str(tmp))
    del model, merged
    result = None
    if check:
        on_progress("Checking the merged model against your fine-tuned model…")
        reloaded = load_model(tmp, "cpu", getattr(torch, DTYPES[dtype]))
        kind = "merged" if dtype == "f32" else dtype
        label = "merged model" if dtype == "f32" else f"merged model ({dtype})"
        result = compare(label, kind, prompts, reference,
                         greedy_ids(reloaded, tokenizer, prompts), tokenizer)
        del reloaded
    info = {"adapter_sha256": adapter_fingerprint(run, last), "base_model": run.config_dict().get("model"),
            "adapter": which, "adapter_step": best.get("step") if which == "best" else None,
            "dtype": DTYPES[dtype], "merged_at": time.time(),
            "reference": {"prompts": prompts, "replies": reference},
            "check": result.as_dict() if result else None}
    (tmp / MERGE_INFO).write_text(json.dumps(info, indent=2), encoding="utf-8")
    shutil.rmtree(target, ignore_errors=True)
    tmp.replace(target)
    if result is not None:
        on_progress(result.words())
    on_progress(f"Merged model: {target}")
    return MergeResult(target, result)


def ensure_merged(run_dir: str | Path, on_progress: Progress = _quiet, last: bool = False) -> dict[str, Any]:
    """Merge when merged/ is missing or stale (or has no reference replies); its merge info."""
    info = merge_info(run_dir)
    if not merged_is_current(run_dir, last) or not (info.get("reference") or {}).get("replies"):
        merge(run_dir, on_progress, force=True, last=last)
        info = merge_info(run_dir)
    return info
