"""Which text encoding a file uses, checked rather than assumed, and its name
in words for people.

A byte-order mark decides; UTF-8 that decodes is UTF-8; anything else is
handed to charset-normalizer (a maintained detector that weighs how
plausible each candidate's text is), so Shift-JIS Japanese is not read as
Windows-1252 and UTF-16 without a byte-order mark is not called binary.
"""
from __future__ import annotations

import codecs

# Near-ties of Windows-1252 for Western text (DOS code pages and Latin-1 variants).
_WESTERN = {"cp1252", "latin_1", "iso8859_15", "cp775", "cp850", "cp437", "cp858", "ascii"}
# Excel on Windows writes the Microsoft supersets; read with those.
_SUPERSET = {"shift_jis": "cp932", "shift_jis_2004": "cp932", "shift_jisx0213": "cp932",
             "euc_kr": "cp949", "gb2312": "gb18030", "gbk": "gb18030", "big5": "cp950",
             "euc_jis_2004": "euc_jp", "euc_jisx0213": "euc_jp", "utf_16_le": "utf-16-le",
             "utf_16_be": "utf-16-be", "utf_16": "utf-16", "utf_8": "utf-8", "utf_32": "utf-32"}

_WORDS = {
    "utf-8": "UTF-8", "utf-8-sig": "UTF-8 (with a byte-order mark)",
    "utf-16": "UTF-16 (with a byte-order mark)", "utf-16-le": "UTF-16 little-endian (no byte-order mark)",
    "utf-16-be": "UTF-16 big-endian (no byte-order mark)", "utf-32": "UTF-32",
    "cp1252": "Windows-1252 (Western European)", "cp1250": "Windows-1250 (Central European)",
    "cp1251": "Windows-1251 (Cyrillic)", "cp1253": "Windows-1253 (Greek)", "cp1254": "Windows-1254 (Turkish)",
    "cp1255": "Windows-1255 (Hebrew)", "cp1256": "Windows-1256 (Arabic)", "cp1257": "Windows-1257 (Baltic)",
    "cp1258": "Windows-1258 (Vietnamese)", "koi8_r": "KOI8-R (Russian)", "koi8_u": "KOI8-U (Ukrainian)",
    "mac_cyrillic": "Mac Cyrillic", "cp932": "Shift-JIS (Japanese)", "euc_jp": "EUC-JP (Japanese)",
    "iso2022_jp": "ISO-2022-JP (Japanese)", "cp949": "EUC-KR (Korean)", "gb18030": "GB18030 (Chinese, simplified)",
    "cp950": "Big5 (Chinese, traditional)", "big5hkscs": "Big5-HKSCS (Chinese, Hong Kong)",
    "cp874": "Windows-874 (Thai)", "tis_620": "TIS-620 (Thai)", "iso8859_7": "ISO-8859-7 (Greek)",
    "iso8859_8": "ISO-8859-8 (Hebrew)", "iso8859_5": "ISO-8859-5 (Cyrillic)",
}


def describe(encoding: str | None) -> str:
    """An encoding in words: 'Shift-JIS (Japanese)', 'UTF-8', ..."""
    if not encoding:
        return ""
    key = codecs.lookup(encoding).name if _known(encoding) else encoding
    return _WORDS.get(encoding) or _WORDS.get(key.replace("-", "_")) or _WORDS.get(key) or encoding.upper()


def _known(encoding: str) -> bool:
    try:
        codecs.lookup(encoding)
        return True
    except LookupError:
        return False


def _cut_utf8(head: bytes) -> bool:
    """Valid UTF-8 but for a character cut in two at the end of the sample."""
    try:
        head.decode("utf-8")
        return True
    except UnicodeDecodeError as exc:
        return exc.start >= len(head) - 3 and exc.reason == "unexpected end of data"


def _utf16_by_zeros(head: bytes) -> str | None:
    n = len(head) // 2
    if n >= 2:
        even, odd = head[0:2 * n:2].count(0), head[1:2 * n:2].count(0)
        if odd * 2 >= n and even == 0:
            return "utf-16-le"
        if even * 2 >= n and odd == 0:
            return "utf-16-be"
    return None


def sniff(head: bytes) -> tuple[str, bool]:
    """(encoding, guessed) for the first bytes of a file. guessed is True when
    neither a byte-order mark nor valid UTF-8 decided it."""
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8-sig", False
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16", False
    by_zeros = _utf16_by_zeros(head)
    if by_zeros:
        return by_zeros, False
    if _cut_utf8(head):
        return "utf-8", False
    if _mostly_utf8(head):
        return "utf-8", True
    return _detect(head), True


def _mostly_utf8(head: bytes) -> bool:
    """UTF-8 but for a few stray bytes (a word pasted from an older file): many characters
    that only UTF-8 writes this way, few bytes that fit no character. Read as UTF-8, with
    the stray bytes read as Windows-1252, rather than garbling every accent in the file."""
    # not final: a character cut in two by the sample's end is left out, not counted as stray
    text = codecs.getincrementaldecoder("utf-8")(errors="replace").decode(head, final=False)
    stray = text.count("\ufffd")
    multibyte = sum(1 for ch in text if ch > "\x7f") - stray
    return 0 < stray and multibyte >= max(4, 4 * stray)


def _latin(name: str) -> bool:
    """A single-byte encoding for Latin-script languages."""
    return name in _WESTERN or name in _LATIN or (name.startswith(("iso8859_", "mac_")) and name not in _NOT_LATIN)


_LATIN = {"cp1250", "cp1254", "cp1257", "cp1258", "cp852", "cp857", "cp860", "cp861", "cp863", "cp865",
          "hp_roman8", "latin_1"}
_NOT_LATIN = {"iso8859_5", "iso8859_6", "iso8859_7", "iso8859_8", "iso8859_11", "mac_cyrillic", "mac_greek",
              "mac_arabic", "mac_farsi"}


def _detect(head: bytes) -> str:
    try:
        from charset_normalizer import from_bytes
    except ImportError:  # pragma: no cover - charset-normalizer is a dependency
        return "cp1252"
    sample = head[:32 * 1024]
    best = from_bytes(sample).best()
    if best is None:
        return "cp1252"
    name = best.encoding
    if _latin(name):
        # The detector often cannot tell the Latin code pages apart (the same
        # text either way, or an equally plausible one): Windows-1252, what
        # Excel writes on Western Windows, unless it reads clearly worse.
        if name in _WESTERN or "cp1252" in best.could_be_from_charset:
            return "cp1252"
        western = from_bytes(sample, cp_isolation=["cp1252"]).best()
        if western is not None and western.chaos <= best.chaos and western.coherence >= best.coherence - 0.01:
            return "cp1252"
        return name
    name = _SUPERSET.get(name, name)
    return name if _known(name) else "cp1252"
