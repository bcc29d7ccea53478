"""progress.jsonl: one JSON object per logging step, append-only.

Standard library only. The writer flushes each line; the reader returns only
complete lines and keeps its place, so a follower reads just the new bytes.
Every line is checked (trainer/run/checks.py): a line that is not JSON, or
whose numbers are not numbers, is left out and named in `problems`.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from trainer.run.checks import clean_progress
from trainer.run.files import PROGRESS_FILE

MAX_PROBLEMS = 20  # the first few bad lines are named; the rest counted
READ_LIMIT = 16 << 20   # bytes per read_new call: a huge file is read in pieces
MAX_LINE = 1 << 20      # a line longer than this is damage, not a record


class ProgressWriter:
    def __init__(self, run_dir: str | Path):
        self.path = Path(run_dir) / PROGRESS_FILE

    def log(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, separators=(",", ":")) + "\n"
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()


class ProgressReader:
    """Reads new complete records since the last call.

    A partial last line (the trainer is mid-write) is kept back until its
    newline arrives. A file that shrank (a run restarted from scratch) is read
    again from the start; `reset` tells the caller to drop what it had.
    """

    def __init__(self, path: str | Path):
        path = Path(path)
        self.path = path / PROGRESS_FILE if path.is_dir() else path
        self.offset = 0
        self._partial = b""
        self.reset = False
        self.lines = 0                 # complete lines read so far
        self.bad_lines = 0
        self.problems: list[str] = []  # "line 3: loss is 'abc', not a number"

    def read_new(self, limit: int = READ_LIMIT) -> list[dict[str, Any]]:
        """New complete records, reading at most `limit` bytes (the rest next time)."""
        self.reset = False
        try:
            size = os.path.getsize(self.path)
        except OSError:
            return []
        if size < self.offset:
            self.offset, self._partial, self.reset = 0, b"", True
            self.lines, self.bad_lines, self.problems = 0, 0, []
        if size == self.offset:
            return []
        with open(self.path, "rb") as fh:
            fh.seek(self.offset)
            chunk = fh.read(min(size - self.offset, limit))
        self.offset += len(chunk)
        data = self._partial + chunk
        lines = data.split(b"\n")
        self._partial = lines.pop()  # b"" when the chunk ended with a newline
        records = []
        for line in lines:
            self.lines += 1
            record, problem = _parse(line)
            if problem:
                self._note(self.lines, problem)
            elif record is not None:
                records.append(record)
        if len(self._partial) > MAX_LINE:
            self._note(self.lines + 1, "longer than 1 MB, not a progress record")
            self._partial = b""
        return records

    def _note(self, line: int, problem: str) -> None:
        self.bad_lines += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(f"line {line}: {problem}")

    def problem_text(self) -> str | None:
        """The bad lines in one phrase, or None when every line was good."""
        if not self.bad_lines:
            return None
        more = self.bad_lines - len(self.problems)
        return "; ".join(self.problems) + (f" (and {more} more bad lines)" if more > 0 else "")


def _parse(line: bytes) -> tuple[dict[str, Any] | None, str | None]:
    line = line.strip()
    if not line:
        return None, None
    try:
        record = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError:
        return None, "not text"
    except (ValueError, RecursionError):
        return None, "not valid JSON"
    return clean_progress(record)


def read_progress(run_dir: str | Path) -> list[dict[str, Any]]:
    """Every complete, well-formed record in a run's progress file."""
    reader = ProgressReader(run_dir)
    records = reader.read_new()
    while True:
        more = reader.read_new()
        if not more and reader.offset >= _size(reader.path):
            return records
        records += more


def trim_progress(run_dir: str | Path, step: int) -> None:
    """Keep the lines up to `step` (a resumed run repeats the steps after its checkpoint)."""
    keep = [r for r in read_progress(run_dir) if r.get("step", 0) <= step]
    path = Path(run_dir) / PROGRESS_FILE
    tmp = path.with_name(PROGRESS_FILE + ".tmp")
    tmp.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in keep), encoding="utf-8")
    os.replace(tmp, path)


def _size(path: Path) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
