"""JSON files: a top-level array streamed item by item (so a big file never
sits in memory whole), a single wrapping object, and JSON Lines."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from trainer.dataimport.problems import DataImportError
from trainer.dataimport.shapes import RowError

CHUNK = 1 << 20
OBJECT_LIMIT = 200 * 1024 * 1024  # a single wrapping {...} is parsed whole
_SAVE_AS = "Save it as CSV (.csv), Excel (.xlsx) or JSON Lines (.jsonl) and try again."
_FIX_JSON = ("Fix the file there (a missing comma, quote or bracket is the usual cause), or save it as "
             "JSON Lines (.jsonl) so one bad line does not stop the rest.")
_WS = " \t\r\n\ufeff"


def not_object(item: Any) -> RowError:
    return RowError("not_object", None, f"this is {type(item).__name__}, not an example object {{...}}; "
                    "write it as {\"prompt\": ..., \"completion\": ...} or {\"messages\": [...]}")


def is_json_lines(path: Path, encoding: str, errors: str) -> bool:
    """Is the first non-blank line a whole JSON value, with more lines after it?
    Tells JSON Lines from one object or array (on one line or over many)."""
    with open(path, encoding=encoding, errors=errors) as fh:
        first = ""
        for line in fh:
            if line.strip():
                first = line
                break
        rest = any(line.strip() for line in fh) if first else False
    try:
        json.loads(first)
    except (ValueError, RecursionError):
        return False  # a pretty-printed value over several lines
    return rest


def load_wrapped_items(path: Path, encoding: str, errors: str) -> list[Any]:
    """A file holding one object: the list of examples inside it, or the object as one chat."""
    if path.stat().st_size > OBJECT_LIMIT:
        raise DataImportError(f"{path.name} is too large to read as one JSON object.",
                              "Write the examples as a list [{...}, {...}] or as JSON Lines (.jsonl).")
    try:
        with open(path, encoding=encoding, errors=errors) as fh:
            data = json.load(fh)
    except json.JSONDecodeError as exc:
        raise DataImportError(f"{path.name} is not valid JSON: {exc.msg} at line {exc.lineno}, "
                              f"column {exc.colno}.", _FIX_JSON) from None
    except (RecursionError, ValueError) as exc:
        raise DataImportError(f"{path.name} could not be read as JSON ({exc}).", _SAVE_AS) from None
    if isinstance(data, dict):
        lists = [v for v in data.values() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)]
        if len(lists) == 1 and not _is_chat(lists[0]):
            return lists[0]
        if any(isinstance(v, list) and _is_chat(v) for v in data.values()):
            return [data]  # one chat on its own
    raise DataImportError(f"{path.name} holds one JSON object, not a list of examples.",
                          "Write the examples as a list: [{...}, {...}], or one per line as JSON Lines.")


def _is_chat(items: list) -> bool:
    return bool(items) and isinstance(items[0], dict) and ("role" in items[0] or "from" in items[0])


def iter_json_array(path: Path, encoding: str, errors: str) -> Iterator[tuple[int, Any]]:
    """(item number, value) for each item of a top-level JSON array, read in chunks."""
    decoder = json.JSONDecoder()
    with open(path, encoding=encoding, errors=errors) as fh:
        buf, pos, eof, lines_before, col_before = "", 0, False, 0, 0

        def more(need_all: bool = False) -> bool:
            nonlocal buf, pos, eof, lines_before, col_before
            if eof:
                return False
            chunk = fh.read(max(CHUNK, len(buf) - pos) if need_all else CHUNK)
            if not chunk:
                eof = True
                return False
            lines_before += buf.count("\n", 0, pos)
            last = buf.rfind("\n", 0, pos)
            col_before = pos - last - 1 if last >= 0 else col_before + pos  # columns of the line before buf
            buf, pos = buf[pos:] + chunk, 0
            return True

        def skip_ws() -> str:
            nonlocal pos
            while True:
                while pos < len(buf) and buf[pos] in _WS:
                    pos += 1
                if pos < len(buf):
                    return buf[pos]
                if not more():
                    return ""

        def fail(msg: str, at: int) -> DataImportError:
            line = lines_before + buf.count("\n", 0, at) + 1
            start = buf.rfind("\n", 0, at) + 1
            col = at - start + 1 + (col_before if start == 0 else 0)
            return DataImportError(f"{path.name} is not valid JSON: {msg} at line {line}, column {col}.", _FIX_JSON)

        if skip_ws() != "[":
            raise fail("the file should start with '['", pos)
        pos += 1
        n = 0
        if skip_ws() == "]":
            return
        while True:
            n += 1
            while True:
                try:
                    value, end = decoder.raw_decode(buf, pos)
                except json.JSONDecodeError as exc:
                    if more(need_all=True):
                        continue
                    raise fail(exc.msg, exc.pos) from None
                except (ValueError, RecursionError) as exc:
                    raise fail(f"item {n} could not be read ({exc})", pos) from None
                if isinstance(value, (int, float)) and not buf[end:].strip("0123456789+-.eE") \
                        and more(need_all=True):
                    continue  # a number perhaps cut short by the chunk's end: read on, decode again
                break
            pos = end
            yield n, value
            sep = skip_ws()
            if sep == "]":
                return
            if sep != ",":
                raise fail("expected ',' or ']' after an item" if sep else "the file ends before the closing ']'",
                           pos)
            pos += 1
            if skip_ws() == "]":
                raise fail("a comma before the closing ']'", pos)


def iter_json_lines(path: Path, encoding: str, errors: str) -> Iterator[tuple[int, Any, RowError | None]]:
    with open(path, encoding=encoding, errors=errors, newline=None) as fh:
        for n, line in enumerate(fh, 1):
            line = line.strip().lstrip("\ufeff")
            if not line:
                yield n, {}, None
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                yield n, None, RowError("bad_json", None, f"not valid JSON ({exc.msg} at column {exc.colno}); "
                                        "fix the line or delete it")
                continue
            except (ValueError, RecursionError) as exc:  # e.g. a number too long to read
                yield n, None, RowError("bad_json", None, f"not valid JSON ({type(exc).__name__}); "
                                        "fix the line or delete it")
                continue
            yield (n, item, None) if isinstance(item, dict) else (n, None, not_object(item))
