"""Everything a run needs, checked before any of its output is touched.

`prepare` finds the checkpoint (on resume), the model and its tokenizer, and
reads and encodes the examples. Only when all of that worked does the loop
set the old results aside (a fresh start) or trim progress (a resume). When a
run fails before it has saved anything new, `keep_what_was_there` puts the
old results and the old state back (a usable "cancelled" or "done" run stays
so) and records why the new attempt failed.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from trainer.engine.checkpoint import latest_checkpoint, old_format_checkpoint, restore_previous
from trainer.engine.encode import EncodeStats, encode_file, read_chats
from trainer.run import status as st
from trainer.run.config import TrainConfig
from trainer.run.errors import UserError

log = logging.getLogger("dragonfarm.engine")


@dataclass
class Prepared:
    folder: Path
    tokenizer: Any
    train_examples: list[Any]
    train_stats: EncodeStats
    eval_examples: list[Any] = field(default_factory=list)
    eval_stats: EncodeStats | None = None
    eval_chats: list[Any] = field(default_factory=list)
    checkpoint: Path | None = None


def prepare(run_dir: Path, cfg: TrainConfig, resume: bool, message: Callable[[str], None]) -> Prepared:
    from trainer.engine.models import load_tokenizer, resolve_model_path

    ckpt = None
    if resume:
        ckpt = latest_checkpoint(run_dir)
        if ckpt is None and old_format_checkpoint(run_dir):
            raise UserError("This run's checkpoints were saved by an older DragonFarm in a format that is no "
                            "longer loaded, because such files can run code.",
                            "Start the run again from the beginning; its adapter is kept until the new one exists.")
        if ckpt is None:
            raise UserError("There is no checkpoint to resume from: the run stopped before its first save.",
                            "Start the run again from the beginning.")
    train_path = run_dir / cfg.train_file
    if not train_path.is_file():
        raise UserError(f"The training examples ({cfg.train_file}) are missing from the run folder.",
                        "Import your examples again (New run), or put the file back.")
    message("Getting the model")
    folder = resolve_model_path(cfg.model, on_progress=message)
    tokenizer = load_tokenizer(folder)
    message("Reading your examples")
    train_examples, train_stats = _readable(encode_file, tokenizer, train_path, cfg.max_length)
    out = Prepared(folder, tokenizer, train_examples, train_stats, checkpoint=ckpt)
    eval_path = run_dir / cfg.eval_file if cfg.eval_file else None
    if eval_path is not None and eval_path.is_file():
        out.eval_examples, out.eval_stats = _readable(encode_file, tokenizer, eval_path, cfg.max_length, "held-out")
        out.eval_chats = _readable(read_chats, eval_path) if out.eval_examples else []
    return out


def _readable(read: Callable[..., Any], tokenizer_or_path: Any, *args: Any) -> Any:
    path = args[0] if args else tokenizer_or_path
    try:
        return read(tokenizer_or_path, *args)
    except UnicodeDecodeError as exc:
        raise UserError(f"{Path(path).name} is not a text file DragonFarm can read (not UTF-8 text).",
                        "Import your examples again.") from exc
    except (IsADirectoryError, PermissionError) as exc:
        raise UserError(f"{Path(path).name} cannot be read: {exc.strerror}.", "Import your examples again.") from exc


def keep_what_was_there(run_dir: Path, status: st.StatusWriter, before: dict[str, Any] | None,
                        touched: bool, resume: bool, error: str) -> bool:
    """After a failure: if nothing new was saved, the run goes back to how it was. True when it did."""
    restored = restore_previous(run_dir) if touched and not resume else not touched
    if not restored or not isinstance(before, dict) or before.get("state") not in st.FINAL_STATES + (st.TRAINING, st.SAVING):
        return False
    what = "resume" if resume else "start again"
    kept = dict(before)
    if kept.get("state") in (st.TRAINING, st.SAVING):  # the trainer that wrote it is gone
        kept["state"] = st.INTERRUPTED
    kept.update(error=f"Could not {what}: {error}", message=f"Could not {what}: {error}",
                error_detail=status.data.get("error_detail"), pid=status.data.get("pid"),
                host=status.data.get("host"))
    with status._lock:  # noqa: SLF001 - the writer keeps its own copy; replace it whole
        status.data.clear()
        status.data.update(kept)
    status.write()
    log.info("The run was left as it was before (%s)", kept["state"])
    return True
