"""Duplicate as a new run: the wizard's starting choices from an existing run."""
from __future__ import annotations

from pathlib import Path

from trainer.run.reader import Run
from trainer.run.config import TrainConfig
from trainer.run.files import TRAIN_DATA

from ..logic.new_run import SETTING_FIELDS


def prefill_from_run(path: Path) -> dict:
    run = Run(path)
    cfg = run.config_dict()
    base = TrainConfig().to_dict()
    data = run.path / (cfg.get("train_file") or TRAIN_DATA)
    eval_path = run.path / cfg["eval_file"] if cfg.get("eval_file") else None
    return {
        "data_path": data,
        "eval_path": eval_path if eval_path and eval_path.is_file() else None,
        "model": cfg.get("model") or base["model"],
        "settings": {k: cfg.get(k, base[k]) for k in SETTING_FIELDS},
        "seed": cfg.get("seed", base["seed"]),
        "questions": [q for q in cfg.get("check_questions") or [] if isinstance(q, str)]
        if isinstance(cfg.get("check_questions"), list) else [],
        "source_name": run.name,
    }
