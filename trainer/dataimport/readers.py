"""Reading the files people have: CSV/TSV, Excel .xlsx, JSON arrays, JSON Lines.

A Source knows the file's format, encoding, delimiter, sheet and columns;
iter_records streams (position, record, error) so a large file never has to
fit in memory. Whole-file problems raise DataImportError.
"""
from __future__ import annotations

import codecs
import json
from pathlib import Path
from typing import Any, Iterator

from trainer.dataimport.delimited import iter_delimited, open_delimited
from trainer.dataimport.encoding import sniff
from trainer.dataimport.jsonfiles import is_json_lines, iter_json_array, iter_json_lines, load_wrapped_items, not_object
from trainer.dataimport.problems import DataImportError
from trainer.dataimport.records import FIELD_LIMIT, SAMPLE_RECORDS, Record, Source  # noqa: F401 - re-exported
from trainer.dataimport.xlsx import iter_xlsx, open_xlsx

HEAD_BYTES = 64 * 1024
OLE_SCAN_BYTES = 64 * 1024 * 1024

_EXT_FORMAT = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".txt": "text", ".xlsx": "xlsx",
               ".xlsm": "xlsx", ".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl"}
_SAVE_AS = "Save it as CSV (.csv), Excel (.xlsx) or JSON Lines (.jsonl) and try again."
_UNSUPPORTED = {".xls": "an old Excel .xls workbook", ".ods": "an OpenDocument spreadsheet",
                ".numbers": "an Apple Numbers file", ".docx": "a Word document", ".doc": "a Word document",
                ".pdf": "a PDF", ".parquet": "a Parquet file", ".zip": "a zip archive",
                ".arrow": "an Arrow file", ".xlsb": "a binary Excel workbook"}
OLE_MAGIC = b"\xd0\xcf\x11\xe0"
_MAGIC = ((OLE_MAGIC, "an old Office file (.xls or .doc)"), (b"%PDF", "a PDF"),
          (b"PAR1", "a Parquet file"), (b"\x89PNG", "a picture"), (b"\xff\xd8\xff", "a picture"),
          (b"\x1f\x8b", "a compressed (gzip) file"), (b"SQLite format", "a database"))
# Stream names in an OLE compound file's directory (UTF-16LE): an encrypted
# (password-protected) Office Open XML file, or an old binary workbook.
_OLE_ENCRYPTED = "EncryptionInfo".encode("utf-16-le")
_OLE_OLD_BOOK = ("Workbook".encode("utf-16-le"), "Book".encode("utf-16-le") + b"\x00\x00")
PASSWORD_FIX = ("Open it in Excel, remove the password (File > Info > Protect Workbook > Encrypt with "
                "Password, clear it) and save it again.")


def _fallback(exc: UnicodeError) -> tuple[str, int]:
    """Bytes that do not fit the chosen encoding are read as Windows-1252
    (Latin-1 for its five undefined bytes), so decoding never fails."""
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    out = []
    for b in exc.object[exc.start:exc.end]:
        try:
            out.append(bytes([b]).decode("cp1252"))
        except UnicodeDecodeError:
            out.append(chr(b))
    return "".join(out), exc.end


codecs.register_error("dragonfarm-fallback", _fallback)
ERRORS = "dragonfarm-fallback"


def sniff_encoding(head: bytes) -> str:
    return sniff(head)[0]


def looks_binary(text: str) -> bool:
    if "\x00" in text:
        return True
    bad = sum(1 for ch in text if ch < " " and ch not in "\t\n\r\f\x1a")
    return bad > max(8, len(text) // 20)


def _ole_kind(path: Path) -> str:
    """'encrypted', 'old' (a binary .xls) or '' for an OLE compound file."""
    with open(path, "rb") as fh:
        data = fh.read(OLE_SCAN_BYTES)
    if _OLE_ENCRYPTED in data:
        return "encrypted"
    return "old" if any(name in data for name in _OLE_OLD_BOOK) else ""


def _refuse_ole(path: Path) -> DataImportError:
    kind = _ole_kind(path)
    if kind == "old":
        return DataImportError(f"{path.name} is an old Excel .xls workbook with an .xlsx name.",
                               "Open it in Excel and use Save As > Excel Workbook (.xlsx).")
    return DataImportError(f"{path.name}: this workbook is protected with a password, so DragonFarm cannot "
                           "read it.", PASSWORD_FIX)


def open_source(path: str | Path, sheet: str | None = None) -> Source:
    """Check the file, find its format, encoding, sheet and columns."""
    path = Path(path)
    if not path.exists():
        raise DataImportError(f"{path.name}: the file was not found.", f"Check the path: {path}")
    if path.is_dir():
        raise DataImportError(f"{path.name} is a folder, not a data file.", "Choose a .csv, .xlsx, .json or .jsonl file.")
    try:
        with open(path, "rb") as fh:
            head = fh.read(HEAD_BYTES)
    except OSError as exc:
        raise DataImportError(f"{path.name} could not be read ({exc.strerror or exc}).",
                              "Close it in other programs and check you may read it.") from None
    ext = path.suffix.lower()
    if not head.strip(b" \t\r\n\x00" + codecs.BOM_UTF8) or head in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        raise DataImportError(f"{path.name} is empty.", "Add your examples to it (a header row, then one example per row).")
    if ext in _UNSUPPORTED:
        raise DataImportError(f"{path.name} is {_UNSUPPORTED[ext]}, which DragonFarm cannot read.", _SAVE_AS)
    fmt = _EXT_FORMAT.get(ext)
    if head.startswith(b"PK\x03\x04"):
        if fmt not in (None, "xlsx"):
            raise DataImportError(f"{path.name} is a zip archive or Office file, not {ext} text.", _SAVE_AS)
        fmt = "xlsx"
    elif fmt == "xlsx" and head.startswith(OLE_MAGIC):
        raise _refuse_ole(path)
    elif fmt == "xlsx":
        raise DataImportError(f"{path.name} is not a real Excel workbook.",
                              "Open it in Excel and use Save As > Excel Workbook (.xlsx).")
    if fmt == "xlsx":
        return open_xlsx(path, sheet)
    for magic, what in _MAGIC:
        if head.startswith(magic):
            raise DataImportError(f"{path.name} is {what}, not a table of examples.", _SAVE_AS)
    if fmt is None and ext not in ("",):
        raise DataImportError(f"{path.name}: DragonFarm does not read {ext} files.", _SAVE_AS)
    encoding, guessed = sniff(head)
    text = head.decode(encoding, ERRORS)
    if looks_binary(text):
        raise DataImportError(f"{path.name} is not a text file (it looks like binary data).", _SAVE_AS)
    stripped = text.lstrip("\ufeff \t\r\n")
    if not stripped:
        raise DataImportError(f"{path.name} is empty.", "Add your examples to it (a header row, then one example per row).")
    if fmt == "jsonl" and stripped[:1] == "[" and not is_json_lines(path, encoding, ERRORS):
        fmt = "json"  # a JSON array saved as .jsonl
    named = fmt
    if fmt in (None, "text", "csv", "tsv") and stripped[:1] in "[{":
        fmt = _json_inside(path, encoding, stripped) or ("csv" if fmt in (None, "text") else fmt)
    elif fmt in (None, "text"):
        fmt = "csv"
    source = Source(path, fmt, encoding=encoding, encoding_guessed=guessed)
    if named in ("csv", "tsv") and fmt in ("json", "jsonl"):
        what = "JSON Lines" if fmt == "jsonl" else "JSON"
        source.note("format_from_content", f"{path.name} is named {ext} but holds {what} (it starts with "
                    f"'{stripped[:1]}'), so it was read as {what}; rename it to .{fmt} to say so.")
    if fmt in ("csv", "tsv"):
        return open_delimited(source, text)
    if fmt == "json" and stripped[:1] == "{":
        source.format = "jsonl" if is_json_lines(path, encoding, ERRORS) else "json"
        if source.format == "json":
            source._items = load_wrapped_items(path, encoding, ERRORS)
    elif fmt == "json" and stripped[:1] != "[":
        raise DataImportError(f"{path.name} does not start like JSON ('[' or '{{').",
                              "If it is a table, save it as .csv; if it is JSON, check the start of the file.")
    source.sample = [r for _, r, _ in _take(iter_records(source), SAMPLE_RECORDS) if isinstance(r, dict)]
    source.columns = _union_keys(source.sample)
    return source


def _take(it: Iterator, n: int) -> list:
    out = []
    for item in it:
        out.append(item)
        if len(out) >= n:
            break
    if hasattr(it, "close"):
        it.close()
    return out


def _union_keys(records: list[dict[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for r in records:
        for k in r:
            seen.setdefault(str(k), None)
    return list(seen)


def iter_records(source: Source) -> Iterator[Record]:
    """(position, record, error) for every row; position is the spreadsheet
    row, the JSON Lines line or the JSON array item (1-based)."""
    if source.format in ("csv", "tsv"):
        yield from iter_delimited(source)
    elif source.format == "xlsx":
        yield from iter_xlsx(source)
    elif source.format == "json":
        items = enumerate(source._items, 1) if source._items is not None else \
            iter_json_array(source.path, source.encoding, ERRORS)
        for i, item in items:
            yield (i, item, None) if isinstance(item, dict) else (i, None, not_object(item))
    else:
        yield from iter_json_lines(source.path, source.encoding, ERRORS)



def _json_inside(path: Path, encoding: str, stripped: str) -> str | None:
    """'jsonl' or 'json' when a text file that is not named so holds JSON."""
    if is_json_lines(path, encoding, ERRORS):
        first = stripped.splitlines()[0].strip() if stripped else ""
        try:
            return "jsonl" if isinstance(json.loads(first), (dict, list)) else None
        except ValueError:
            return None
    if stripped[:1] == "[" and stripped[1:].lstrip()[:1] in ("{", "]"):
        return "json"
    if stripped[:1] == "{" and path.stat().st_size <= HEAD_BYTES:
        try:
            return "json" if isinstance(json.loads(stripped), dict) else None
        except ValueError:
            return None
    return None
