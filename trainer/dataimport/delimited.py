"""CSV and TSV: delimiter sniffing and streaming rows as {column: text}.

Rows are read strictly: a quote that is never closed, or that closes in the
middle of a cell, would make the following lines run together into one cell,
so the row is reported (unclosed_quote) instead of swallowing the rows after
it. A row with more cells than there are column names (a comma inside
unquoted text) is reported (extra_cells) rather than cut. Bytes that do not
fit the file's encoding and control characters such as NUL are named, never
passed on into the training text.
"""
from __future__ import annotations

import codecs
import csv
import io
import re
from typing import Iterator

from trainer.dataimport.encoding import describe
from trainer.dataimport.problems import DataImportError
from trainer.dataimport.records import FIELD_LIMIT, SAMPLE_RECORDS, HeaderFinder, Record, Source
from trainer.dataimport.records import column_letter, header_names  # noqa: F401 - re-exported
from trainer.dataimport.shapes import CellProblem, RowError

DELIMITERS = (",", ";", "\t", "|")
DELIMITER_WORDS = {",": "comma", ";": "semicolon", "\t": "tab", "|": "bar (|)"}
_MAX_BAD_IN_A_ROW = 1000
_UNDECODABLE = re.compile("[\udc00-\udcff]")


def _escape(exc: UnicodeError) -> tuple[str, int]:
    """Like surrogateescape, for every byte (a cut UTF-16 pair has bytes under 128):
    each byte that does not decode becomes U+DC00 + byte, found later by _UNDECODABLE."""
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    return "".join(chr(0xDC00 + b) for b in exc.object[exc.start:exc.end]), exc.end


codecs.register_error("dragonfarm-escape", _escape)
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SEP_LINE = re.compile(r"sep=([,;\t|])\r?\n")
_CONTROL_WORDS = {"\x00": "a NUL character (a zero byte)", "\x1a": "an end-of-file mark (Ctrl+Z)"}


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


def open_delimited(source: Source, head_text: str) -> Source:
    csv.field_size_limit(max(csv.field_size_limit(), FIELD_LIMIT))
    sep = _SEP_LINE.match(head_text.lstrip("\ufeff"))
    if sep:  # Excel's "sep=;" first line names the delimiter
        source.delimiter, source.sep_line = sep.group(1), True
    else:
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


def _quote_error(exc: csv.Error, first: int, last: int) -> RowError | None:
    text = str(exc)
    if "unexpected end of data" in text:
        lines = f"lines {first}-{last}" if last > first else f"line {first}"
        return RowError("unclosed_quote", None, f"a double quote (\") starts a quoted cell here that is never "
                        f"closed, so the rest of the file ({lines}) would be read as one cell; add the closing "
                        "quote, or remove the stray one")
    if "expected after" in text:
        if last > first:
            return RowError("unclosed_quote", None, f"a double quote (\") starts a quoted cell here that only "
                            f"closes on line {last} of the file, so lines {first}-{last} run together into one "
                            "cell; add the missing closing quote, write a quote inside quoted text as two (\"\"), "
                            "or remove the stray quote")
        return RowError("unclosed_quote", None, "a double quote (\") inside quoted text ends the cell early; "
                        "write a quote inside quoted text as two (\"\"), or remove the quotes around the cell")
    return None


def iter_delimited(source: Source) -> Iterator[Record]:
    delimiter = source.delimiter or ","
    with open(source.path, encoding=source.encoding, errors="dragonfarm-escape", newline="") as fh:
        # skipinitialspace: in 'a, "b, c"' the quotes after ", " still quote.
        reader = csv.reader(fh, delimiter=delimiter, strict=True, skipinitialspace=True)
        header = HeaderFinder(source)
        bad_run, n = 0, 0
        if source.sep_line:
            next(reader, None)
        while True:
            first = reader.line_num + 1
            try:
                cells = next(reader)
                bad_run = 0
            except StopIteration:
                header.finish()
                return
            except csv.Error as exc:
                n += 1
                bad_run += 1
                if bad_run > _MAX_BAD_IN_A_ROW:
                    raise DataImportError(f"{source.name} could not be read as a table ({exc}).",
                                          "Open it in a spreadsheet and save it again as CSV.") from None
                err = _quote_error(exc, first, reader.line_num) or \
                    RowError("bad_row", None, f"this row could not be read ({exc}); fix or delete it")
                if header.columns is not None:
                    yield n, None, err
                elif err.kind == "unclosed_quote":
                    raise DataImportError(f"{source.name}: the column names (line {first}) have a double quote "
                                          "(\") that is not closed.", "Fix the quotes in the first row.") from None
                continue
            n += 1
            for pos, row in header.feed(n, cells):
                yield pos, *_record(source, header.columns, header.width, row, delimiter)


def _record(source: Source, columns: list[str], width: int, cells: list[str], delimiter: str):
    extra = [c for c in cells[max(width, len(columns)):] if c.strip()]
    if extra:
        word = DELIMITER_WORDS.get(delimiter, repr(delimiter))
        return None, RowError("extra_cells", None, f"this row has {len(cells)} cells but there are only "
                              f"{len(columns)} column names: a {word} inside unquoted text splits it (the cut-off "
                              f"part starts '{_short(extra[0])}'); put the text of that cell in double quotes "
                              f"(\"...\"), or save the file again from your spreadsheet program")
    record = {}
    for i, col in enumerate(columns):
        value = cells[i] if i < len(cells) else None
        record[col] = (_bad_text(value, col, source) or value) if value else value
    return record, None


def _bad_text(value: str, column: str, source: Source) -> CellProblem | None:
    """A cell that is not clean text; it matters only if its column is used."""
    if _UNDECODABLE.search(value):
        return CellProblem("bad_bytes", f"the text in '{column}' has bytes that are not "
                           f"{describe(source.encoding)} text (the file mixes encodings); save the file again as "
                           "UTF-8 (in Excel: CSV UTF-8), or retype the odd characters")
    found = _CONTROL.search(value)
    if found:
        ch = found.group()
        what = _CONTROL_WORDS.get(ch, f"a control character (code {ord(ch)})")
        return CellProblem("control_chars", f"the text in '{column}' holds {what}, which is not text and "
                           "usually means the file is damaged; delete it from the row, or save the file again")
    return None


def _short(text: str, n: int = 30) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n - 3] + "..."
