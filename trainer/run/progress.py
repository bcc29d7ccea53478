"""progress.jsonl: one JSON object per logging step, append-only.

Standard library only. The writer flushes each line; the reader returns only
complete lines and keeps its place, so a follower reads just the new bytes.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from trainer.run.files import PROGRESS_FILE


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

    def read_new(self) -> list[dict[str, Any]]:
        self.reset = False
        try:
            size = os.path.getsize(self.path)
        except OSError:
            return []
        if size < self.offset:
            self.offset, self._partial, self.reset = 0, b"", True
        if size == self.offset:
            return []
        with open(self.path, "rb") as fh:
            fh.seek(self.offset)
            chunk = fh.read(size - self.offset)
        self.offset += len(chunk)
        data = self._partial + chunk
        lines = data.split(b"\n")
        self._partial = lines.pop()  # b"" when the chunk ended with a newline
        return [r for r in (_parse(line) for line in lines) if r is not None]


def _parse(line: bytes) -> dict[str, Any] | None:
    line = line.strip()
    if not line:
        return None
    try:
        record = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def read_progress(run_dir: str | Path) -> list[dict[str, Any]]:
    """Every complete record in a run's progress file."""
    return ProgressReader(run_dir).read_new()
