"""Read (and start) runs from plain Python, without importing torch.

    from trainer.run.reader import Run, list_runs
    run = Run("runs/my-run")
    run.state, run.config.model, run.progress()[-1]["loss"], run.eval()

Everything here reads the run-folder files described in DESIGN.md.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainer.run import status as st
from trainer.run.coach import coach
from trainer.run.config import ConfigError, TrainConfig
from trainer.run.files import ADAPTER_BEST_DIR, ADAPTER_DIR, CHECKPOINTS_DIR, CONFIG_FILE, EVAL_FILE, LOG_FILE, SAMPLES_FILE
from trainer.run.progress import read_progress
from trainer.run.settings import runs_dir as default_runs_dir



def is_run_dir(path: str | Path) -> bool:
    return (Path(path) / CONFIG_FILE).is_file()


@dataclass
class Run:
    path: Path

    def __init__(self, path: str | Path):
        self.path = Path(path)

    # ----- files -------------------------------------------------------
    @property
    def name(self) -> str:
        return self.path.name

    @property
    def config(self) -> TrainConfig:
        return TrainConfig.load(self.path)

    def config_dict(self) -> dict[str, Any]:
        """The raw config, even one that no longer validates (for listing)."""
        data = st.read_json(self.path / CONFIG_FILE, {})
        return data if isinstance(data, dict) else {}

    def status(self) -> dict[str, Any]:
        """status.json with `state` replaced by the effective state (a dead
        trainer's run reads `interrupted`) and `live` added."""
        raw = st.read_status(self.path)
        view = dict(raw)
        view["written_state"] = raw.get("state")
        view["state"] = st.effective_state(raw) if raw else st.QUEUED
        view["live"] = st.is_live(raw) if raw else False
        if not raw:
            view["message"] = "Not started yet"
        return view

    @property
    def state(self) -> str:
        return self.status()["state"]

    def progress(self) -> list[dict[str, Any]]:
        return read_progress(self.path)

    def train_records(self) -> list[dict[str, Any]]:
        return [r for r in self.progress() if "loss" in r]

    def eval(self) -> dict[str, Any]:
        return st.read_json(self.path / EVAL_FILE, {}) or {}

    def samples(self) -> list[dict[str, Any]]:
        data = st.read_json(self.path / SAMPLES_FILE, {}) or {}
        return data.get("samples", []) if isinstance(data, dict) else []

    @property
    def adapter_dir(self) -> Path:
        return self.path / ADAPTER_DIR

    @property
    def log_path(self) -> Path:
        return self.path / LOG_FILE

    def has_adapter(self) -> bool:
        return (self.adapter_dir / "adapter_config.json").is_file()

    def has_best_adapter(self) -> bool:
        """adapter-best/ is there: the best held-out point came before the last step."""
        return (self.path / ADAPTER_BEST_DIR / "adapter_config.json").is_file()

    def adapter_for(self, last: bool = False) -> Path:
        """The adapter that Try it, merge, export and pack use: the best one unless `last` is asked for."""
        return self.path / ADAPTER_BEST_DIR if not last and self.has_best_adapter() else self.adapter_dir

    def verdict(self) -> dict[str, Any] | None:
        """The coach's words for this run; a best adapter that eval.json names but the folder lacks
        (a run packed with --last) is not promised."""
        ev = self.eval()
        best = ev.get("best") if isinstance(ev, dict) else None
        if isinstance(best, dict) and best.get("adapter") == ADAPTER_BEST_DIR and not self.has_best_adapter():
            ev = dict(ev, best=dict(best, adapter=ADAPTER_DIR))
        return coach(ev, self.progress())

    def best(self) -> dict[str, Any] | None:
        """eval.json's "best": {"step", "loss", "adapter"}, or None before the first check."""
        best = self.eval().get("best")
        return best if isinstance(best, dict) else None

    def checkpoints(self) -> list[Path]:
        folder = self.path / CHECKPOINTS_DIR
        if not folder.is_dir():
            return []
        found = [p for p in folder.iterdir() if p.is_dir() and p.name.startswith("step-")
                 and (p / "trainer_state.json").is_file()]
        return sorted(found, key=lambda p: int(p.name.split("-", 1)[1]) if p.name.split("-", 1)[1].isdigit() else -1)

    def can_resume(self) -> bool:
        return self.state in (st.INTERRUPTED, st.CANCELLED, st.FAILED) and bool(self.checkpoints())

    def request_cancel(self) -> None:
        st.request_cancel(self.path)

    def summary(self) -> dict[str, Any]:
        """One row for a run list: name, model, state, progress, created, final eval loss."""
        cfg = self.config_dict()
        s = self.status()
        ev = self.eval()
        after = (ev.get("after") or {}).get("loss") if isinstance(ev, dict) else None
        return {
            "name": self.name,
            "path": str(self.path),
            "model": cfg.get("model", "?"),
            "state": s["state"],
            "step": s.get("step", 0),
            "total_steps": s.get("total_steps", 0),
            "created_at": cfg.get("created_at", ""),
            "eval_loss": after,
            "error": s.get("error"),
        }


def list_runs(folder: str | Path | None = None) -> list[Run]:
    folder = Path(folder) if folder else default_runs_dir()
    if not folder.is_dir():
        return []
    return sorted((Run(p) for p in folder.iterdir() if p.is_dir() and is_run_dir(p)), key=lambda r: r.name)


def verdict(ev: dict[str, Any], train_records: list[dict[str, Any]] | None = None) -> dict[str, Any] | None:
    """"Did it learn?" in words, from eval.json and the progress records (see trainer.run.coach)."""
    return coach(ev, train_records)


def perplexity(loss: float | None) -> float | None:
    if loss is None or not math.isfinite(loss):
        return None
    return math.exp(min(loss, 50.0))


__all__ = ["Run", "list_runs", "verdict", "perplexity", "is_run_dir", "ConfigError"]
