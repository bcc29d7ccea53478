"""Excel cells as the text Excel shows: dates and numbers through the cell's
number format, error values and uncalculated formulas named, and the ranges
of merged cells (openpyxl's read-only mode does not give them)."""
from __future__ import annotations

import datetime as _dt
import re
import zipfile
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from typing import Any

from trainer.dataimport.shapes import CellProblem

ISO_DATE_FORMATS = {"general", "mm-dd-yy", "m/d/yyyy", "d/m/yyyy", "yyyy-mm-dd", "yyyy-mm-dd h:mm:ss"}
_TOKEN = re.compile(r'"[^"]*"|_.|\*.|\\.|\[[^\]]*\]|yyyy|yy|mmmmm|mmmm|mmm|mm|m|dddd|ddd|dd|d|hh|h|ss|s|am/pm|a/p|\.0+|.',
                    re.IGNORECASE)
_DATE_PARTS = {"yyyy": "%Y", "yy": "%y", "mmmm": "%B", "mmm": "%b", "dddd": "%A", "ddd": "%a", "dd": "%d"}
_MERGE = re.compile(rb'<(?:\w+:)?mergeCell\s[^>]*?ref="([A-Z]+)(\d+):([A-Z]+)(\d+)"')


def _col_index(letters: bytes | str) -> int:
    n = 0
    for ch in letters.decode() if isinstance(letters, bytes) else letters:
        n = n * 26 + ord(ch) - 64
    return n


def merged_ranges(path, sheet_path: str | None) -> list[tuple[int, int, int, int]]:
    """(min_row, min_col, max_row, max_col) of each merged range of a sheet,
    scanned from its XML without parsing the whole sheet into memory."""
    if not sheet_path:
        return []
    out, tail = [], b""
    with zipfile.ZipFile(path) as zf, zf.open(sheet_path.lstrip("/")) as fh:
        while True:
            chunk = fh.read(1 << 20)
            if not chunk:
                break
            data = tail + chunk
            for m in _MERGE.finditer(data):
                r1, r2 = int(m.group(2)), int(m.group(4))
                c1, c2 = _col_index(m.group(1)), _col_index(m.group(3))
                if (r1, c1) != (r2, c2):
                    out.append((r1, c1, r2, c2))
            cut = data.rfind(b"<")
            tail = data[cut:] if cut >= 0 and len(data) - cut < 300 else b""
    return sorted(set(out))


def display(value: Any, number_format: str | None, data_type: str | None, where: str) -> Any:
    """The text Excel shows in a cell (None for an empty cell)."""
    if value is None:
        return None
    if data_type == "e":
        return CellProblem("cell_error", f"the cell {where} shows the error {value}; fix its formula in Excel "
                           "and save the workbook again")
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    sections = _sections(number_format or "General")
    fmt = sections[0]
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return _date_text(value, fmt)
    if isinstance(value, _dt.timedelta):
        total = int(value.total_seconds())
        return f"{total // 3600}:{total % 3600 // 60:02d}:{total % 60:02d}"
    if isinstance(value, (int, float)):
        if value < 0 and len(sections) > 1 and sections[1]:
            return _number_text(-value, sections[1])  # the negative section writes its own sign: -0.00, (0.00)
        return _number_text(value, fmt)
    return str(value)


def _sections(fmt: str) -> list[str]:
    """A format's parts: 'positive;negative;zero;text'."""
    parts, quoted, start = [], False, 0
    for i, ch in enumerate(fmt):
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch == ";":
            parts.append(fmt[start:i])
            start = i + 1
    return parts + [fmt[start:]]


def _date_text(value: Any, fmt: str) -> str:
    if isinstance(value, _dt.datetime) and value.time() == _dt.time(0):
        value = value.date()  # a date without a time is shown as a date
    if fmt.lower() in ISO_DATE_FORMATS or not re.search(r"[ymdhs]", _strip_literals(fmt), re.IGNORECASE):
        return _iso(value)
    tokens = _TOKEN.findall(fmt)
    if isinstance(value, _dt.date) and not isinstance(value, _dt.datetime):
        # keep only the date part of a date-and-time format
        lowered = [t.lower() for t in tokens]
        cut = next((i for i, t in enumerate(lowered) if t in ("h", "hh")), len(tokens))
        tokens = tokens[:cut]
        while tokens and not re.fullmatch(r"[a-z]+", tokens[-1].lower()):
            tokens.pop()
        value = _dt.datetime.combine(value, _dt.time(0))
    elif isinstance(value, _dt.time):
        value = _dt.datetime.combine(_dt.date(1900, 1, 1), value)
    twelve = any(t.lower() in ("am/pm", "a/p") for t in tokens)
    out = []
    for i, tok in enumerate(tokens):
        low = tok.lower()
        if low in ("m", "mm") and _is_minute(tokens, i):
            out.append(f"{value.minute:02d}" if low == "mm" else str(value.minute))
        elif low == "m":
            out.append(str(value.month))
        elif low == "mm":
            out.append(f"{value.month:02d}")
        elif low == "mmmmm":
            out.append(value.strftime("%B")[:1])
        elif low == "d":
            out.append(str(value.day))
        elif low in _DATE_PARTS:
            out.append(value.strftime(_DATE_PARTS[low]))
        elif low in ("h", "hh"):
            hour = (value.hour % 12 or 12) if twelve else value.hour
            out.append(f"{hour:02d}" if low == "hh" else str(hour))
        elif low in ("s", "ss"):
            out.append(f"{value.second:02d}" if low == "ss" else str(value.second))
        elif low in ("am/pm", "a/p"):
            mark = "AM" if value.hour < 12 else "PM"
            out.append(mark if low == "am/pm" else mark[0])
        else:
            out.append(_literal(tok))
    return "".join(out).strip()


def _is_minute(tokens: list[str], i: int) -> bool:
    before = [t.lower() for t in tokens[:i] if re.fullmatch(r"[a-z]+", t.lower())]
    after = [t.lower() for t in tokens[i + 1:] if re.fullmatch(r"[a-z]+", t.lower())]
    return bool(before and before[-1] in ("h", "hh")) or bool(after and after[0] in ("s", "ss"))


def _literal(tok: str) -> str:
    if tok.startswith('"'):
        return tok[1:-1]
    if tok.startswith("\\"):
        return tok[1:]
    if tok.startswith("["):
        m = re.match(r"\[\$([^-\]]*)", tok)
        return m.group(1) if m else ""
    if tok.startswith((".0", "_", "*")):
        return ""
    return "" if tok == "@" else tok


def _strip_literals(fmt: str) -> str:
    return re.sub(r'"[^"]*"|\\.|\[[^\]]*\]', "", fmt)


def _iso(value: Any) -> str:
    if isinstance(value, _dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M" + (":%S" if value.second else ""))
    if isinstance(value, _dt.time):
        return value.strftime("%H:%M" + (":%S" if value.second else ""))
    return value.isoformat()


def _number_text(value: float, fmt: str) -> str:
    core = _strip_literals(fmt)
    if fmt.lower() in ("general", "@", "") or not re.search(r"[0#?]", core):
        return _general(value)
    if re.search(r"e[+-]", core, re.IGNORECASE):
        decimals = len(re.search(r"\.([0#]*)", core).group(1)) if "." in core else 0
        return f"{value:.{decimals}E}"
    if "/" in core:  # a fraction such as # ?/? or # ??/??
        whole, frac = divmod(Fraction(value).limit_denominator(10 ** max(1, core.count("?") // 2)), 1)
        return (f"{whole} {frac}" if whole else str(frac)) if frac else str(whole)
    percent = "%" in core
    digits = core[re.search(r"[0#?.]", core).start():]
    int_part, _, dec_part = re.match(r"([0#?,]*)\.?([0#?]*)", digits).group(0).partition(".")
    shown = Decimal(repr(value)) * (100 if percent else 1)
    shown = shown.quantize(Decimal(1).scaleb(-len(dec_part)), rounding=ROUND_HALF_UP)
    number = f"{abs(shown):{',' if ',' in int_part else ''}.{len(dec_part)}f}"
    pad = int_part.count("0") + (number.count(",") if "," in int_part else 0)
    number = number.split(".")[0].rjust(pad, "0") + ("." + number.split(".")[1] if dec_part else "")
    prefix, suffix = _affixes(fmt)
    sign = "-" if shown < 0 else ""
    return f"{sign}{prefix}{number}{'%' if percent and '%' not in suffix else ''}{suffix}"


def _affixes(fmt: str) -> tuple[str, str]:
    """Literal text (quoted, escaped, currency [$€-407]) before and after the digits."""
    tokens = _TOKEN.findall(fmt)
    first = next((i for i, t in enumerate(tokens) if t in "0#?"), len(tokens))
    last = max((i for i, t in enumerate(tokens) if t in "0#?"), default=-1)
    def keep(ts: list[str]) -> str:
        return "".join(_literal(t) for t in ts if t not in (",", ".", "%"))
    return keep(tokens[:first]), keep(tokens[last + 1:])


def _general(value: float) -> str:
    if isinstance(value, int) or float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    text = f"{value:.15g}"
    return text
