"""Excel .xlsx: the first sheet or a named one, read row by row (openpyxl read_only)."""
from __future__ import annotations

import warnings
import zipfile
from pathlib import Path
from typing import Any, Iterator

from trainer.dataimport.delimited import header_names
from trainer.dataimport.problems import DataImportError
from trainer.dataimport.readers import SAMPLE_RECORDS, Record, Source

_RESAVE = "Open it in Excel and use Save As > Excel Workbook (.xlsx), or save the sheet as CSV."


def _load(path: Path):
    try:
        import openpyxl
    except ImportError:  # pragma: no cover - openpyxl is a dependency
        raise DataImportError("Reading .xlsx files needs the openpyxl package.",
                              "Install it with: pip install openpyxl, or save the sheet as CSV.") from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return openpyxl.load_workbook(path, read_only=True, data_only=True)
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


def iter_xlsx(source: Source) -> Iterator[Record]:
    wb = _load(source.path)
    try:
        try:
            ws = wb[source.sheet]
            rows = ws.iter_rows(values_only=True)
        except Exception as exc:  # noqa: BLE001
            raise DataImportError(f"The sheet '{source.sheet}' in {source.name} could not be read "
                                  f"({type(exc).__name__}).", _RESAVE) from None
        columns: list[str] | None = None
        n = 0
        while True:
            try:
                cells = next(rows)
            except StopIteration:
                return
            except Exception as exc:  # noqa: BLE001
                raise DataImportError(f"{source.name} stopped being readable after row {n} "
                                      f"({type(exc).__name__}).", _RESAVE) from None
            n += 1
            cells = list(cells or ())
            if columns is None:
                if any(_filled(c) for c in cells):
                    columns = header_names(cells)
                    source.columns = columns
                continue
            record: dict[str, Any] = {c: (cells[i] if i < len(cells) else None) for i, c in enumerate(columns)}
            yield n, record, None
    finally:
        wb.close()


def _filled(value: Any) -> bool:
    return value is not None and (not isinstance(value, str) or bool(value.strip()))
