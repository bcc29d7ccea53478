"""CSV and TSV: delimiter sniffing and streaming rows as {column: text}."""
from __future__ import annotations

import csv
import io
from typing import Iterator

from trainer.dataimport.problems import DataImportError
from trainer.dataimport.readers import ERRORS, FIELD_LIMIT, SAMPLE_RECORDS, Record, Source
from trainer.dataimport.shapes import RowError

DELIMITERS = (",", ";", "\t", "|")
_MAX_BAD_IN_A_ROW = 1000


def sniff_delimiter(sample: str, prefer_tab: bool = False) -> str:
    """The delimiter that splits the first lines into the same number (> 1)
    of fields most often; ties go to the usual one (tab for .tsv files)."""
    cut = sample.rfind("\n")
    sample = sample[:cut] if cut > 0 else sample
    order = ("\t",) + tuple(d for d in DELIMITERS if d != "\t") if prefer_tab else DELIMITERS
    best, best_score = order[0], 0
    for delim in order:
        try:
            rows = [r for r in _take_rows(csv.reader(io.StringIO(sample), delimiter=delim), 30) if r]
        except csv.Error:
            continue
        if not rows or len(rows[0]) < 2:
            continue
        width = len(rows[0])
        score = sum(1 for r in rows if len(r) == width)
        if score > best_score:
            best, best_score = delim, score
    return best


def _take_rows(reader, n: int) -> list[list[str]]:
    out = []
    for row in reader:
        out.append(row)
        if len(out) >= n:
            break
    return out


def header_names(cells: list) -> list[str]:
    """Column names from a header row: blanks become 'Column C', repeats get ' (2)'."""
    while cells and (cells[-1] is None or not str(cells[-1]).strip()):
        cells = cells[:-1]
    names: list[str] = []
    for i, cell in enumerate(cells):
        name = str(cell).strip().lstrip("\ufeff") if cell is not None else ""
        name = name or f"Column {column_letter(i)}"
        base, k = name, 2
        while name in names:
            name, k = f"{base} ({k})", k + 1
        names.append(name)
    return names


def column_letter(i: int) -> str:
    letters = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        letters = chr(65 + r) + letters
    return letters


def open_delimited(source: Source, head_text: str) -> Source:
    csv.field_size_limit(max(csv.field_size_limit(), FIELD_LIMIT))
    source.delimiter = sniff_delimiter(head_text.lstrip("\ufeff"), prefer_tab=source.format == "tsv")
    if source.delimiter == "\t":
        source.format = "tsv"
    elif source.format == "tsv":
        source.format = "csv"
    sample = []
    for _pos, record, _err in iter_delimited(source):
        if record is not None:
            sample.append(record)
        if len(sample) >= SAMPLE_RECORDS:
            break
    source.sample = sample
    if not source.columns:
        raise DataImportError(f"{source.name} has no header row with column names.",
                              "Put the column names (for example Prompt, Reply) in the first row.")
    return source


def iter_delimited(source: Source) -> Iterator[Record]:
    with open(source.path, encoding=source.encoding, errors=ERRORS, newline="") as fh:
        reader = csv.reader(fh, delimiter=source.delimiter or ",")
        columns, bad_run, n = None, 0, 0
        while True:
            try:
                cells = next(reader)
                bad_run = 0
            except StopIteration:
                return
            except csv.Error as exc:
                n += 1
                bad_run += 1
                if bad_run > _MAX_BAD_IN_A_ROW:
                    raise DataImportError(f"{source.name} could not be read as a table ({exc}).",
                                          "Open it in a spreadsheet and save it again as CSV.") from None
                if columns is not None:
                    yield n, None, RowError("bad_row", None, f"this row could not be read ({exc}); fix or delete it")
                continue
            n += 1
            if columns is None:
                if any(c.strip() for c in cells):
                    columns = header_names(cells)
                    source.columns = columns
                continue
            record = {col: (cells[i] if i < len(cells) else None) for i, col in enumerate(columns)}
            yield n, record, None
