"""Problems found while importing, and the one error for whole-file problems.

Every row problem names the file, where it is (row, line or item) and the
column, and says how to fix it, in words a person who does not program can
act on.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from trainer.run.errors import UserError

ERROR = "error"
WARNING = "warning"

# The report keeps this many problems; problems_total counts them all.
MAX_PROBLEMS = 200


class DataImportError(UserError):
    """The whole file cannot be used (empty, binary, unsupported, unreadable,
    no usable rows). `str(error)` is a plain message with the fix."""


@dataclass
class Problem:
    severity: str            # "error" (row skipped) or "warning" (row used)
    message: str             # whole sentence: where, what, and how to fix it
    row: int | None = None   # spreadsheet row / JSON Lines line / JSON item (1-based)
    column: str | None = None
    file: str = ""
    # kind, a short id. Row errors (row skipped): bad_json, bad_row, not_object, missing_column,
    # not_text, empty_prompt, empty_reply, roles_order, bad_role. Row warnings (row counted):
    # duplicate (used once), too_long (kept, cut in training). Whole file (row None):
    # no_mapping, missing_column, no_rows, no_usable.
    kind: str = ""
    # The end of `message` that names command-line flags (e.g. "on the command
    # line use --prompt-column and --reply-column"), so an app can put the
    # names of its own controls there instead.
    cli_hint: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return f"{self.severity}: {self.message}"


class ProblemLog:
    """Collects problems: keeps the first MAX_PROBLEMS, counts all of them."""

    def __init__(self, cap: int = MAX_PROBLEMS):
        self.cap = cap
        self.items: list[Problem] = []
        self.total = 0
        self.by_kind: dict[str, int] = {}

    def add(self, problem: Problem) -> None:
        self.total += 1
        self.by_kind[problem.kind] = self.by_kind.get(problem.kind, 0) + 1
        if len(self.items) < self.cap:
            self.items.append(problem)


def where_label(fmt: str) -> str:
    """What a position is called for a file format: row, line or item."""
    return {"jsonl": "line", "json": "item"}.get(fmt, "row")
