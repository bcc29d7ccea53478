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

# Row errors that mean rows would be lost or cut without it showing: the
# file cannot be imported until they are fixed.
BLOCKING = frozenset({"unclosed_quote", "extra_cells"})

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
    # not_text, empty_prompt, empty_reply, roles_order, bad_role, bad_bytes, control_chars,
    # cell_error, formula_no_value; and the two that mean the table itself is misread, which
    # stop the import until fixed (BLOCKING): unclosed_quote, extra_cells. Row warnings (row
    # counted): duplicate (used once), too_long (kept, cut in training). Whole file: errors
    # no_mapping, missing_column, no_rows, no_usable (row None); warnings format_from_content,
    # title_row, merged_cells (row set where there is one).
    kind: str = ""
    # The end of `message` that names command-line flags (e.g. "on the command
    # line use --prompt-column and --reply-column"), so an app can put the
    # names of its own controls there instead.
    cli_hint: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return f"{self.severity}: {self.message}"


def blocks(problem: Problem) -> bool:
    """Does this problem stop the import (not just skip its row)?"""
    return problem.severity == ERROR and (problem.row is None or problem.kind in BLOCKING)


class ProblemLog:
    """Collects problems: keeps the first MAX_PROBLEMS, counts all of them."""

    def __init__(self, cap: int = MAX_PROBLEMS):
        self.cap = cap
        self.items: list[Problem] = []
        self.total = 0
        self.by_kind: dict[str, int] = {}
        self.blocking = 0

    def add(self, problem: Problem) -> None:
        self.total += 1
        self.by_kind[problem.kind] = self.by_kind.get(problem.kind, 0) + 1
        self.blocking += blocks(problem)
        if len(self.items) < self.cap:
            self.items.append(problem)


def where_label(fmt: str) -> str:
    """What a position is called for a file format: row, line or item."""
    return {"jsonl": "line", "json": "item"}.get(fmt, "row")
