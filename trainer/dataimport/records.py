"""What the readers share: the Source a file was opened as, the records they
stream, and how a header row is found (column names, a title row above it).

delimited.py, xlsx.py and jsonfiles.py import this; readers.py imports them.
No reader imports another, so there is no import circle.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from trainer.dataimport.problems import WARNING, Problem

SAMPLE_RECORDS = 100
_SURROGATE = re.compile("[\ud800-\udfff]")
FIELD_LIMIT = 16 * 1024 * 1024

Record = tuple  # (position, record dict or None, shapes.RowError or None)


@dataclass
class Source:
    path: Path
    format: str
    columns: list[str] = field(default_factory=list)
    sheets: list[str] = field(default_factory=list)
    sheet: str | None = None
    encoding: str | None = None
    encoding_guessed: bool = False  # not UTF-8 or marked UTF-16: a charset detector chose it
    delimiter: str | None = None
    sep_line: bool = False         # the file starts with Excel's "sep=;" line
    lenient: bool = False          # spreadsheet cells: numbers and dates count as text
    header_row: int | None = None  # the row the column names were taken from
    sample: list[dict[str, Any]] = field(default_factory=list)
    notes: list[Problem] = field(default_factory=list)  # whole-file warnings found while reading
    _items: list[Any] | None = None  # the examples inside a single wrapping JSON object

    @property
    def name(self) -> str:
        return self.path.name

    def note(self, kind: str, message: str, row: int | None = None) -> None:
        """A warning about the whole file (kept once, however often the file is read)."""
        if not any(n.kind == kind and n.row == row for n in self.notes):
            self.notes.append(Problem(WARNING, message, row, None, self.name, kind))


def column_letter(i: int) -> str:
    letters = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        letters = chr(65 + r) + letters
    return letters


def header_names(cells: list) -> list[str]:
    """Column names from a header row: blanks become 'Column C', repeats get ' (2)'."""
    while cells and (cells[-1] is None or not str(cells[-1]).strip()):
        cells = cells[:-1]
    names: list[str] = []
    for i, cell in enumerate(cells):
        name = str(cell).strip().lstrip("\ufeff") if cell is not None else ""
        name = _SURROGATE.sub("\ufffd", name)  # bytes that did not decode
        name = name or f"Column {column_letter(i)}"
        base, k = name, 2
        while name in names:
            name, k = f"{base} ({k})", k + 1
        names.append(name)
    return names


def filled(value: Any) -> bool:
    return value is not None and (not isinstance(value, str) or bool(value.strip()))


def _looks_like_names(cells: list) -> bool:
    """At least two filled cells, all of them words (not numbers)."""
    values = [c for c in cells if filled(c)]
    if len(values) < 2:
        return False
    for v in values:
        if not isinstance(v, str):
            return False
        try:
            float(v.replace(",", "."))
            return False
        except ValueError:
            pass
    return True


class HeaderFinder:
    """Feeds rows until the header is known. A first row with a single filled
    cell followed by a row that looks like column names is a title: it is
    skipped with a note, and the next row gives the names.

    feed(n, cells) returns the data rows to handle now: [] while still
    looking, and the held-back row once it turns out to be data."""

    def __init__(self, source: Source, where: Callable[[int], str] = lambda n: f"row {n}"):
        self.source, self.where = source, where
        self.columns: list[str] | None = None
        self.width = 0  # cells in the header row, named or blank
        self._title: tuple[int, list] | None = None

    def feed(self, n: int, cells: list) -> list[tuple[int, list]]:
        if self.columns is not None:
            return [(n, cells)]
        if not any(filled(c) for c in cells):
            return []
        if self._title is None and _first_filled(cells) == 0 and len({str(c).strip() for c in cells if filled(c)}) == 1:
            # one value, in the first cell (or merged across the row from it): perhaps a title
            self._title = (n, cells)
            return []
        if self._title is not None:
            t_n, t_cells = self._title
            if _looks_like_names(cells):
                title = str(t_cells[0]).strip()
                self.source.note("title_row", f"{self.source.name}: {self.where(t_n)} ('{_short(title)}') looks like a "
                                 f"title above the column names; it was skipped and the column names were taken "
                                 f"from {self.where(n)}. If that is wrong, delete the title row.", t_n)
                self._set(n, cells)
                return []
            self._set(t_n, t_cells)
            return [(n, cells)]
        self._set(n, cells)
        return []

    def finish(self) -> None:
        """The file ended: a held-back single cell was the header after all."""
        if self.columns is None and self._title is not None:
            self._set(*self._title)

    def _set(self, n: int, cells: list) -> None:
        self.columns = header_names(cells)
        self.width = len(cells)
        self.source.columns = self.columns
        self.source.header_row = n
        self._title = None


def _first_filled(cells: list) -> int:
    return next(i for i, c in enumerate(cells) if filled(c))


def _short(text: str, n: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n - 3] + "..."
