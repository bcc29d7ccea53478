"""Keep the adapter from the best held-out point, and say when to stop early.

The loop calls `BestKeeper.after_eval` once after each held-out evaluation
(with `final=True` after the last one). When the newest check is the lowest
held-out loss so far, the adapter is saved to adapter-best/ (temp folder, then
renames, so a reader never sees half a folder). When the best point turns out
to be the last step, adapter-best/ is removed: adapter/ is then the best too.
eval.json's "best" and status.json's `best_step`/`best_eval_loss` say which.
"""
from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

from trainer.run import status as st
from trainer.run.coach import best_of, eval_points, should_stop
from trainer.run.files import ADAPTER_BEST_DIR, ADAPTER_DIR, EVAL_FILE
from trainer.run.progress import read_progress

log = logging.getLogger("dragonfarm.engine")


def save_folder_atomically(target: Path, write: Any) -> None:
    """`write(folder)` fills a temp folder, which then replaces `target` by renames."""
    tmp = target.with_name(target.name + ".partial")
    old = target.with_name(target.name + ".old")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)
    write(tmp)
    if target.exists():
        target.replace(old)
    tmp.replace(target)
    shutil.rmtree(old, ignore_errors=True)


class BestKeeper:
    def __init__(self, run_dir: str | Path, early_stop_checks: int, status: Any = None):
        self.run_dir = Path(run_dir)
        self.checks = max(0, int(early_stop_checks))
        self.status = status
        self.stopped_early_at: int | None = None

    @property
    def best_dir(self) -> Path:
        return self.run_dir / ADAPTER_BEST_DIR

    def after_eval(self, step: int, loss: float | None, model: Any, tokenizer: Any, final: bool = False) -> bool:
        """Record one check (its progress line is already written); True: stop training now."""
        if loss is None:
            return False
        points = eval_points(read_progress(self.run_dir))
        best = best_of(points)
        if best is None:
            return False
        _, best_step, best_loss = best
        if best_step == step and final:
            shutil.rmtree(self.best_dir, ignore_errors=True)   # the last adapter is the best one
        elif best_step == step:
            def write(folder: Path) -> None:
                model.save_pretrained(str(folder))
                tokenizer.save_pretrained(str(folder))
            save_folder_atomically(self.best_dir, write)
            log.info("Step %d has the lowest held-out loss so far (%.4f): saved to %s", step, best_loss,
                     ADAPTER_BEST_DIR)
        if best_step == step:
            kept = ADAPTER_DIR if final else ADAPTER_BEST_DIR
        else:
            kept = ADAPTER_BEST_DIR if (self.best_dir / "adapter_config.json").is_file() else ADAPTER_DIR
        stop = not final and should_stop(points, self.checks)
        if stop:
            self.stopped_early_at = step
        self._record(best_step, best_loss, kept, points)
        if stop:
            log.info("Stopping early at step %d: held-out loss above its best (step %d) for %d checks",
                     step, best_step, self.checks)
            if self.status is not None:
                self.status.update(message=f"Stopping early: the held-out loss rose for {self.checks} checks",
                                   stopped_early_at=step)
        return stop

    def _record(self, step: int, loss: float, adapter: str, points: list[tuple[int, float]]) -> None:
        path = self.run_dir / EVAL_FILE
        ev = st.read_json(path, {}) or {}
        if not isinstance(ev, dict):
            ev = {}
        ev["best"] = {"step": step, "loss": loss, "adapter": adapter, "checks": len(points)}
        if self.stopped_early_at is not None:
            ev["stopped_early_at"] = self.stopped_early_at
        st.write_json_atomic(path, ev)
        if self.status is not None:
            self.status.update(best_step=step, best_eval_loss=loss)
