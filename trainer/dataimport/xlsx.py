"""Excel .xlsx: the first sheet or a named one, read row by row (openpyxl
read_only), each cell as the text Excel shows (xlsxcells). Merged cells give
every row they cover the value of their top-left cell; a formula never
calculated is named, not read as an empty cell."""
from __future__ import annotations

import warnings
import zipfile
from pathlib import Path
from typing import Any, Iterator

from trainer.dataimport.problems import DataImportError
from trainer.dataimport.records import SAMPLE_RECORDS, HeaderFinder, Record, Source, column_letter
from trainer.dataimport.shapes import CellProblem
from trainer.dataimport.xlsxcells import display, merged_ranges

_RESAVE = "Open it in Excel and use Save As > Excel Workbook (.xlsx), or save the sheet as CSV."
MAX_MERGE_NOTES = 5


def _load(path: Path, data_only: bool = True):
    try:
        import openpyxl
    except ImportError:  # pragma: no cover - openpyxl is a dependency
        raise DataImportError("Reading .xlsx files needs the openpyxl package.",
                              "Install it with: pip install openpyxl, or save the sheet as CSV.") from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return openpyxl.load_workbook(path, read_only=True, data_only=data_only)
    except zipfile.BadZipFile:
        raise DataImportError(f"{path.name} is not a readable Excel workbook (the file is damaged "
                              "or not really .xlsx).", _RESAVE) from None
    except Exception as exc:  # noqa: BLE001 - openpyxl raises many kinds on odd files
        raise DataImportError(f"{path.name} could not be opened as an Excel workbook "
                              f"({type(exc).__name__}).", _RESAVE) from None


def _pick_sheet(path: Path, names: list[str], sheet: str | None) -> str:
    if not names:
        raise DataImportError(f"{path.name} has no sheets.", _RESAVE)
    if sheet is None:
        return names[0]
    if sheet in names:
        return sheet
    for name in names:
        if name.strip().lower() == str(sheet).strip().lower():
            return name
    raise DataImportError(f"{path.name} has no sheet named '{sheet}'.",
                          "Its sheets are: " + ", ".join(f"'{n}'" for n in names) + ".")


def open_xlsx(path: Path, sheet: str | None) -> Source:
    wb = _load(path)
    try:
        names = list(wb.sheetnames)
    finally:
        wb.close()
    source = Source(path, "xlsx", sheets=names, sheet=_pick_sheet(path, names, sheet), lenient=True)
    for _, record, _ in iter_xlsx(source):
        if record is not None:
            source.sample.append(record)
        if len(source.sample) >= SAMPLE_RECORDS:
            break
    if not source.columns:
        raise DataImportError(f"The sheet '{source.sheet}' in {path.name} is empty.",
                              "Put the column names (for example Prompt, Reply) in the first row and "
                              "one example per row below, or pick another sheet.")
    return source


class _Formulas:
    """The same sheet read with formulas (data_only=False), opened only when a
    cell turns out empty, and walked forward alongside the values."""

    def __init__(self, source: Source):
        self.source, self.wb, self.rows, self.n, self.row = source, None, None, 0, ()

    def at(self, n: int, col: int) -> str | None:
        if self.wb is None:
            self.wb = _load(self.source.path, data_only=False)
            self.rows = self.wb[self.source.sheet].iter_rows(values_only=True)
        while self.n < n:
            self.row = next(self.rows, ())
            self.n += 1
        value = self.row[col] if col < len(self.row) else None
        return value if isinstance(value, str) and value.startswith("=") else None

    def close(self) -> None:
        if self.wb is not None:
            self.wb.close()


def _no_value(formula: str, where: str) -> CellProblem:
    shown = formula if len(formula) <= 40 else formula[:37] + "..."
    return CellProblem("formula_no_value", f"the cell {where} holds a formula ({shown}) with no saved result "
                       "(the workbook was never calculated); open it in Excel, let it calculate, and save it again")


def iter_xlsx(source: Source) -> Iterator[Record]:
    wb = _load(source.path)
    formulas = _Formulas(source)
    try:
        try:
            ws = wb[source.sheet]
            rows = ws.iter_rows()
            merges = merged_ranges(source.path, getattr(ws, "_worksheet_path", None))
        except Exception as exc:  # noqa: BLE001
            raise DataImportError(f"The sheet '{source.sheet}' in {source.name} could not be read "
                                  f"({type(exc).__name__}).", _RESAVE) from None
        header = HeaderFinder(source)
        merged = _Merges(source, merges)
        n = 0
        while True:
            try:
                cells = next(rows)
            except StopIteration:
                header.finish()
                return
            except Exception as exc:  # noqa: BLE001
                raise DataImportError(f"{source.name} stopped being readable after row {n} "
                                      f"({type(exc).__name__}).", _RESAVE) from None
            n += 1
            values, blank = [], []
            for i, cell in enumerate(cells or ()):
                values.append(display(cell.value, getattr(cell, "number_format", None),
                                      getattr(cell, "data_type", None), f"{column_letter(i)}{n}"))
                if cell.value is None and getattr(cell, "coordinate", None):
                    blank.append(i)  # a cell that is there but has no value: perhaps a formula never calculated
            values = merged.fill(n, values, note=header.columns is not None)  # no note for title or header
            for i in blank:
                formula = formulas.at(n, i) if values[i] is None else None
                if formula:
                    values[i] = _no_value(formula, f"{column_letter(i)}{n}")
            for pos, row in header.feed(n, values):
                record: dict[str, Any] = {c: (row[i] if i < len(row) else None)
                                          for i, c in enumerate(header.columns)}
                yield pos, record, None
    finally:
        formulas.close()
        wb.close()


class _Merges:
    """Gives each cell of a merged range the value of its top-left cell."""

    def __init__(self, source: Source, ranges: list[tuple[int, int, int, int]]):
        self.source, self.ranges = source, ranges
        self.values: dict[tuple[int, int], Any] = {}
        self.by_row: dict[int, list[tuple[int, int, int, int]]] = {}
        for rng in ranges:
            for r in range(rng[0], rng[2] + 1):
                self.by_row.setdefault(r, []).append(rng)
        self.noted = 0

    def fill(self, n: int, values: list, note: bool = True) -> list:
        for r1, c1, r2, c2 in self.by_row.get(n, ()):
            if n == r1:
                top = values[c1 - 1] if c1 - 1 < len(values) else None
                self.values[(r1, c1)] = top
                if note and top is not None and self.noted < MAX_MERGE_NOTES:
                    self.noted += 1
                    span = f"{column_letter(c1 - 1)}{r1}:{column_letter(c2 - 1)}{r2}"
                    self.source.note("merged_cells", f"{self.source.name}: the cells {span} are merged; every "
                                     f"row and column they cover gets the value of {column_letter(c1 - 1)}{r1}, "
                                     "as Excel shows it.", r1)
            top = self.values.get((r1, c1))
            if len(values) < c2:
                values = values + [None] * (c2 - len(values))
            for c in range(c1, c2 + 1):
                values[c - 1] = top
        return values
