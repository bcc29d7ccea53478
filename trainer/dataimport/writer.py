"""create_run: a complete run folder (config.json, data/*.jsonl, data/import.json)
from a data file, in two streaming passes (check, then write).

data/import.json (written once, for audit and reproduction):
  source     {file (name only), sha256, size_bytes, format, sheet, encoding, encoding_guessed,
              delimiter, header_row}
  mapping    Mapping.to_dict(): shape, prompt/reply/input/system columns, system_prompt, messages_column
  counts     {rows, usable, empty, duplicates, too_long, skipped} of the source file
  split      {train, eval, eval_fraction (null with an eval file), seed,
              eval_source: null or {file, sha256, format, mapping, counts, warnings}}
  warnings   the problems found (Problem.to_dict(), at most 200); warnings_total counts all
  imported_at  ISO time (UTC), the same as config.json's created_at
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re
import shutil
from pathlib import Path
from typing import Any, Callable

from trainer.run.config import DEFAULT_EVAL_FRACTION, DEFAULT_MODEL, DEFAULT_SEED, TrainConfig
from trainer.run.files import EVAL_DATA, IMPORT_FILE, TRAIN_DATA
from trainer.dataimport.preview import Chat, ScanResult, resolve_mapping, scan
from trainer.dataimport.problems import ERROR, DataImportError, blocks
from trainer.dataimport.readers import open_source
from trainer.dataimport.shapes import Mapping
from trainer.dataimport.split import STRATIFY_MAX, eval_count, split_indices

_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


def run_name_for(data_path: str | Path, name: str | None = None) -> str:
    """A folder-safe run name: the given name, else the data file's name."""
    raw = (name or "").strip() or Path(data_path).stem or "run"
    slug = re.sub(r"[^\w.-]+", "-", raw).strip("-._")[:60].strip("-._") or "run"
    return f"run-{slug}" if slug.lower() in _RESERVED else slug


def free_run_dir(runs_dir: Path, base: str) -> Path:
    """Make and return a new, empty folder: base, else base-2, base-3, ..."""
    runs_dir.mkdir(parents=True, exist_ok=True)
    for i in range(1, 10_000):
        candidate = runs_dir / (base if i == 1 else f"{base}-{i}")
        try:
            candidate.mkdir()
            return candidate
        except FileExistsError:
            continue
    raise DataImportError(f"There are too many runs named {base} in {runs_dir}.", "Choose another name.")


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _refuse(result: ScanResult, name: str) -> DataImportError:
    errors = [p for p in result.log.items if p.severity == ERROR]
    whole = [p for p in errors if p.row is None]
    misread = [p for p in errors if blocks(p) and p.row is not None]
    if whole:
        head = whole[0].message
    elif misread:
        head = (f"{name} cannot be imported as it is: rows would be lost or cut "
                f"({result.log.blocking:,} place{'s' if result.log.blocking != 1 else ''} to fix)")
    else:
        head = f"{name} has no usable examples"
    listed = [p.message for p in (misread or [p for p in errors if p.row is not None])][:5]
    more = result.log.total - len(listed) - len(whole)
    text = "\n".join(f"  - {m}" for m in listed) + (f"\n  ... and {more} more" if more > 0 and listed else "")
    fix = "Run `dragonfarm inspect` on the file to see every problem, fix them, and try again."
    return DataImportError(head + "." + ("\n" + text if listed else ""), fix)


_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def _write_line(fh, chat: Chat) -> None:
    """One JSON line; the few characters str.splitlines() treats as line ends are escaped."""
    fh.write(json.dumps({"messages": chat}, ensure_ascii=False).translate(_LINE_BREAKS) + "\n")


def create_run(data_path: str | Path, *, runs_dir: str | Path, name: str | None = None,
               model: str = DEFAULT_MODEL, mapping: Mapping | dict | None = None, sheet: str | None = None,
               eval_fraction: float = DEFAULT_EVAL_FRACTION, eval_file: str | Path | None = None,
               seed: int = DEFAULT_SEED,
               config_overrides: dict[str, Any] | None = None, tokenizer: Any = None,
               progress: Callable[[str, int], None] | None = None) -> Path:
    """Import data_path into a new run folder under runs_dir and return it.

    eval_file: a separate held-out file (same mapping rules) instead of a split.
    config_overrides: TrainConfig fields (epochs, learning_rate, max_length, ...);
    None values are ignored. progress(phase, rows) reports "checking" then
    "writing" every 10,000 rows; raise in it to cancel (the folder is removed).
    Raises DataImportError (nothing usable) or ConfigError (bad settings)
    before any folder is made."""
    def phase(name: str):
        return (lambda rows: progress(name, rows)) if progress else None

    overrides = {k: v for k, v in (config_overrides or {}).items() if v is not None}
    created = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
    config = TrainConfig(model=model, seed=seed, created_at=created).with_overrides(**overrides)
    data_path = Path(data_path)
    source = open_source(data_path, sheet)
    m = resolve_mapping(source, mapping)
    replies: list[str] = []   # for a split stratified by topic (small sets only)

    def reply_of(index: int, pos: int, chat: Chat) -> None:
        if index <= STRATIFY_MAX:
            replies.append(" ".join(t["content"] for t in chat if t["role"] == "assistant"))
    checked = scan(source, m, max_length=config.max_length, tokenizer=tokenizer, preview_rows=0,
                   on_example=reply_of, progress=phase("checking"))
    if checked.counts.usable == 0 or checked.log.blocking:
        raise _refuse(checked, source.name)
    eval_source = eval_m = None
    if eval_file is not None:
        eval_source = open_source(eval_file)
        eval_m = resolve_mapping(eval_source, mapping)
        eval_checked = scan(eval_source, eval_m, max_length=config.max_length, tokenizer=tokenizer, preview_rows=0)
        if eval_checked.counts.usable == 0 or eval_checked.log.blocking:
            raise _refuse(eval_checked, eval_source.name)
        held = set()
    else:
        usable = checked.counts.usable
        held = split_indices(usable, eval_count(usable, eval_fraction), seed, replies)
    digest = sha256_of(data_path)

    run_dir = free_run_dir(Path(runs_dir), run_name_for(data_path, name))
    try:
        (run_dir / "data").mkdir()
        n_train = n_eval = 0
        with open(run_dir / TRAIN_DATA, "w", encoding="utf-8", newline="\n") as train, \
                open(run_dir / EVAL_DATA, "w", encoding="utf-8", newline="\n") as ev:
            def put(index: int, pos: int, chat: Chat) -> None:
                nonlocal n_train, n_eval
                if index in held:
                    _write_line(ev, chat)
                    n_eval += 1
                else:
                    _write_line(train, chat)
                    n_train += 1
            written = scan(source, m, max_length=config.max_length, tokenizer=tokenizer, preview_rows=0,
                           on_example=put, progress=phase("writing"))
            if written.counts.usable != checked.counts.usable:
                raise DataImportError(f"{source.name} changed while it was being imported.",
                                      "Close it in other programs, save it, and try again.")
            eval_info = None
            if eval_source is not None:
                def put_eval(index: int, pos: int, chat: Chat) -> None:
                    nonlocal n_eval
                    _write_line(ev, chat)
                    n_eval += 1
                ev_written = scan(eval_source, eval_m, max_length=config.max_length, tokenizer=tokenizer,
                                  preview_rows=0, on_example=put_eval)
                eval_info = {"file": eval_source.name, "sha256": sha256_of(eval_source.path),
                             "format": eval_source.format, "mapping": eval_m.to_dict(),
                             "counts": vars(ev_written.counts),
                             "warnings": [p.to_dict() for p in ev_written.log.items]}
        config = config.with_overrides(name=run_dir.name, eval_file=EVAL_DATA if n_eval else "")
        if not n_eval:
            (run_dir / EVAL_DATA).unlink()
        record = {
            "source": {"file": source.name, "sha256": digest, "size_bytes": data_path.stat().st_size,
                       "format": source.format, "sheet": source.sheet, "encoding": source.encoding,
                       "encoding_guessed": source.encoding_guessed, "delimiter": source.delimiter,
                       "header_row": source.header_row},
            "mapping": m.to_dict(),
            "counts": vars(written.counts),
            "split": {"train": n_train, "eval": n_eval, "eval_fraction": None if eval_source else eval_fraction,
                      "seed": seed, "eval_source": eval_info},
            "warnings": [p.to_dict() for p in written.log.items],
            "warnings_total": written.log.total,
            "imported_at": created,
        }
        text = json.dumps(record, indent=2, ensure_ascii=False) + "\n"
        (run_dir / IMPORT_FILE).write_bytes(text.encode("utf-8", "replace"))
        config.save(run_dir)
    except BaseException:
        shutil.rmtree(run_dir, ignore_errors=True)  # only the folder made above
        raise
    return run_dir
