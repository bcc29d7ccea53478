"""Read (and start) runs from plain Python, without importing torch.

    from trainer.run.reader import Run, list_runs
    run = Run("runs/my-run")
    run.state, run.config.model, run.progress()[-1]["loss"], run.eval()

Everything here reads the run-folder files described in DESIGN.md. A run
folder is untrusted: every file is checked (trainer/run/checks.py), and a
damaged one is reported by `Run.damage()` ("eval.json: holds list, not an
object") while the rest of the run, and every other run, still reads.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainer.run import status as st
from trainer.run.checks import MISSING, clean_eval, clean_samples, load_json
from trainer.run.coach import coach
from trainer.run.config import ConfigError, TrainConfig
from trainer.run.files import (ADAPTER_BEST_DIR, ADAPTER_DIR, CHECKPOINTS_DIR, CONFIG_FILE, EVAL_FILE, LOG_FILE,
                               PROGRESS_FILE, SAMPLES_FILE, STATUS_FILE)
from trainer.run.progress import ProgressReader, read_progress
from trainer.run.settings import runs_dir as default_runs_dir

# Checks of files that have not changed are remembered: (path, mtime, size) -> problems.
_CHECKED: dict[tuple[str, int, int], list[str]] = {}
_PROGRESS_READERS: dict[str, ProgressReader] = {}
DAMAGE_SCAN_BYTES = 4 << 20


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
        data, _problem = load_json(self.path / CONFIG_FILE)
        return data if isinstance(data, dict) else {}

    def status(self) -> dict[str, Any]:
        """status.json with `state` replaced by the effective state (a dead
        trainer's run reads `interrupted`), `live` added (from the trainer
        lock first), and `damaged`: every damaged file of the run, in words."""
        raw, problems, exists = st.check_status(self.path)
        view = dict(raw)
        view["written_state"] = raw.get("state")
        view["live"] = st.is_live(raw, run_dir=self.path)
        if problems and "state" not in raw:
            view["state"] = st.DAMAGED
        else:
            view["state"] = st.effective_state(raw, run_dir=self.path) if raw else st.QUEUED
        if not exists:
            view["message"] = "Not started yet"
        view["damaged"] = [f"{STATUS_FILE}, {p}" for p in problems] + self._other_damage()
        return view

    def damage(self) -> list[str]:
        """What is damaged in this run, one "file, what" per problem; [] when nothing."""
        return self.status()["damaged"]

    def _other_damage(self) -> list[str]:
        found = []
        for name, check in ((CONFIG_FILE, _config_problems), (EVAL_FILE, lambda d: clean_eval(d)[1]),
                            (SAMPLES_FILE, lambda d: clean_samples(d)[1])):
            found += [f"{name}, {p}" for p in _checked(self.path / name, check)]
        problem = self._progress_reader().problem_text()
        if problem:
            found.append(f"{PROGRESS_FILE}, {problem}")
        return found

    def _progress_reader(self) -> ProgressReader:
        """The run's progress file checked up to now: only new bytes each time,
        and a few MB per call, so a huge file never stalls a caller (the app's
        list refresh); what is left is checked on the next call."""
        key = os.path.abspath(self.path)
        reader = _PROGRESS_READERS.get(key) or _PROGRESS_READERS.setdefault(key, ProgressReader(self.path / PROGRESS_FILE))
        reader.read_new(limit=DAMAGE_SCAN_BYTES)
        return reader

    @property
    def state(self) -> str:
        return self.status()["state"]

    def progress(self) -> list[dict[str, Any]]:
        return read_progress(self.path)

    def train_records(self) -> list[dict[str, Any]]:
        return [r for r in self.progress() if "loss" in r]

    def eval(self) -> dict[str, Any]:
        """eval.json's trustworthy part ({} when it is missing or damaged)."""
        data, _problem = load_json(self.path / EVAL_FILE)
        return {} if data is MISSING else clean_eval(data)[0]

    def samples(self) -> list[dict[str, Any]]:
        """The well-formed samples of samples.json."""
        data, _problem = load_json(self.path / SAMPLES_FILE)
        return [] if data is MISSING else clean_samples(data)[0]

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
        return coach(ev, self.progress(), own_questions=any(s.get("yours") is True for s in self.samples()))

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
        """One row for a run list: name, model, state, progress, created, final
        eval loss, and `damaged` (the damaged files, in words). Never raises for
        a damaged run: its row says what is wrong."""
        try:
            cfg = self.config_dict()
            s = self.status()
            after = (self.eval().get("after") or {}).get("loss")
        except Exception as exc:  # noqa: BLE001 - one unreadable run must not break the list
            cfg, after = {}, None
            s = {"state": st.DAMAGED, "damaged": [f"the folder cannot be read ({type(exc).__name__}: {exc})"]}
        model = cfg.get("model")
        return {
            "name": self.name,
            "path": str(self.path),
            "model": model if isinstance(model, str) else "?",
            "state": st.DAMAGED if s.get("damaged") else s["state"],
            "step": s.get("step") or 0,
            "total_steps": s.get("total_steps") or 0,
            "created_at": cfg.get("created_at") if isinstance(cfg.get("created_at"), str) else "",
            "eval_loss": after,
            "error": s.get("error"),
            "damaged": s.get("damaged") or [],
            "live": bool(s.get("live")),
        }


def _checked(path: Path, check) -> list[str]:
    """Problems of one JSON file, remembered while the file is unchanged."""
    try:
        info = os.stat(path)
    except OSError:
        return []
    key = (str(path), info.st_mtime_ns, info.st_size)
    if key not in _CHECKED:
        if len(_CHECKED) > 2000:
            _CHECKED.clear()
        data, problem = load_json(path)
        _CHECKED[key] = [problem] if problem else ([] if data is MISSING else check(data))
    return _CHECKED[key]


def _config_problems(data: Any) -> list[str]:
    try:
        TrainConfig.from_dict(data)
    except ConfigError as exc:
        return exc.problems
    return []


def list_runs(folder: str | Path | None = None) -> list[Run]:
    """The run folders in `folder`. A hidden folder (".unpacking-…" while a shared run comes in,
    say) is not a run yet."""
    folder = Path(folder) if folder else default_runs_dir()
    if not folder.is_dir():
        return []
    return sorted((Run(p) for p in folder.iterdir() if not p.name.startswith(".") and p.is_dir() and is_run_dir(p)),
                  key=lambda r: r.name)


def verdict(ev: dict[str, Any], train_records: list[dict[str, Any]] | None = None) -> dict[str, Any] | None:
    """"Did it learn?" in words, from eval.json and the progress records (see trainer.run.coach)."""
    return coach(ev, train_records)


def perplexity(loss: float | None) -> float | None:
    if loss is None or not math.isfinite(loss):
        return None
    return math.exp(min(loss, 50.0))


__all__ = ["Run", "list_runs", "verdict", "perplexity", "is_run_dir", "ConfigError"]
