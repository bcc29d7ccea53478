"""inspect_file: what is in a file, the proposed mapping, the first chats,
counts, length statistics and every problem (capped), in one streaming pass."""
from __future__ import annotations

import hashlib
import math
import random
from array import array
from contextlib import closing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from trainer.dataimport.encoding import describe
from trainer.dataimport.problems import ERROR, WARNING, DataImportError, Problem, ProblemLog, where_label
from trainer.dataimport.readers import Source, iter_records, open_source
from trainer.dataimport.shapes import (CHAT_SHAPES, SHAPE_WORDS, SHAPES, Mapping, RowError, detect_mapping,
                                       is_empty_record, mapping_is_guess, record_to_chat)

Chat = list[dict[str, str]]
RESERVOIR = 10_000
PROGRESS_EVERY = 10_000
TABLE_FORMATS = ("csv", "tsv", "xlsx")


@dataclass
class Counts:
    rows: int = 0          # rows / lines / items read (not the header)
    usable: int = 0        # examples that will be trained on
    empty: int = 0         # rows with nothing in them (skipped quietly)
    duplicates: int = 0    # exact repeats of an earlier example (skipped, warned)
    too_long: int = 0      # usable but longer than max_length (warned; the end is cut)
    skipped: int = 0       # rows with an error (skipped)


@dataclass
class LengthStats:
    unit: str = "characters"   # "tokens" when a tokenizer was given
    count: int = 0
    min: int = 0
    max: int = 0
    mean: float = 0.0
    median: int = 0
    p95: int = 0
    longest_row: int | None = None


@dataclass
class Report:
    path: str
    format: str
    columns: list[str]
    shape: str
    mapping: Mapping
    sheets: list[str] = field(default_factory=list)
    sheet: str | None = None
    encoding: str | None = None      # the Python codec the text was read with ("utf-8", "cp932", ...)
    encoding_guessed: bool = False   # True when a charset detector chose it (no BOM, not UTF-8)
    delimiter: str | None = None
    header_row: int | None = None    # the row the column names came from (tables; 2+ after a title row)
    mapping_guessed: bool = False    # prompt/reply picked by the columns' contents, not their names
    preview: list[Chat] = field(default_factory=list)
    counts: Counts = field(default_factory=Counts)
    lengths: LengthStats = field(default_factory=LengthStats)
    problems: list[Problem] = field(default_factory=list)
    problems_total: int = 0
    problems_by_kind: dict[str, int] = field(default_factory=dict)
    blocking: int = 0          # problems that stop the import (problems.blocks), counted past the cap
    max_length: int = 1024
    complete: bool = True      # False when `limit` stopped the scan early

    @property
    def file(self) -> str:
        return Path(self.path).name

    @property
    def shape_words(self) -> str:
        return SHAPE_WORDS.get(self.shape, self.shape)

    @property
    def encoding_words(self) -> str:
        """The encoding for people: 'UTF-8', 'Shift-JIS (Japanese)', ... ('' for Excel)."""
        return describe(self.encoding)

    @property
    def delimiter_words(self) -> str:
        from trainer.dataimport.delimited import DELIMITER_WORDS
        return DELIMITER_WORDS.get(self.delimiter, repr(self.delimiter)) if self.delimiter else ""

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == ERROR]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == WARNING]

    @property
    def ok(self) -> bool:
        """At least one usable example and nothing that stops the import (a
        whole-file error, or rows that would be lost: problems.BLOCKING)."""
        return self.counts.usable > 0 and self.blocking == 0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(file=self.file, ok=self.ok, shape_words=self.shape_words, encoding_words=self.encoding_words,
                    delimiter_words=self.delimiter_words)
        return data


class Seen:
    """Which examples were seen: an open-addressing table of 8-byte hashes and
    4-byte rows, at most half full (about 24-48 bytes per example)."""

    def __init__(self) -> None:
        self._size, self._used = 1024, 0
        self._keys, self._rows = array("q", bytes(8 * 1024)), array("i", bytes(4 * 1024))

    def add(self, key: int, row: int) -> int | None:
        """Remember key at row; if it was already there, the first row."""
        key = key or 1
        mask, keys = self._size - 1, self._keys
        i = key & mask
        while keys[i]:
            if keys[i] == key:
                return self._rows[i]
            i = (i + 1) & mask
        keys[i], self._rows[i] = key, row
        self._used += 1
        if self._used * 2 > self._size:
            self._grow()
        return None

    def _grow(self) -> None:
        old_keys, old_rows = self._keys, self._rows
        self._size *= 2
        self._keys, self._rows = array("q", bytes(8 * self._size)), array("i", bytes(4 * self._size))
        self._used = 0
        for k, r in zip(old_keys, old_rows):
            if k:
                self.add(k, r)


def chat_key(chat: Chat) -> int:
    text = "\x1e".join(m["role"] + "\x1f" + m["content"] for m in chat)
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big", signed=True)


def length_function(tokenizer: Any) -> Callable[[str], int] | None:
    """Tokens per text from an object with encode(text) -> list, or a callable."""
    if tokenizer is None:
        return None
    encode = getattr(tokenizer, "encode", None)
    fn = encode if callable(encode) else tokenizer if callable(tokenizer) else None
    if fn is None:
        raise TypeError("tokenizer must have encode(text) -> list, or be a callable text -> list")
    return lambda text: len(fn(text))


def estimate_tokens(chat: Chat) -> int:
    """About four characters per token, plus a few tokens of chat template per message."""
    return sum(math.ceil(len(m["content"]) / 4) + 4 for m in chat)


@dataclass
class ScanResult:
    counts: Counts
    lengths: LengthStats
    log: ProblemLog
    preview: list[Chat]
    complete: bool = True


def scan(source: Source, mapping: Mapping, *, max_length: int = 1024, tokenizer: Any = None,
         preview_rows: int = 5, limit: int | None = None,
         on_example: Callable[[int, int, Chat], None] | None = None,
         progress: Callable[[int], None] | None = None) -> ScanResult:
    """One pass over the file: every row is checked; usable examples go to
    on_example(index, position, chat) in order (index counts usable examples).
    progress(rows read) is called every 10,000 rows and at the end; an
    exception raised there stops the scan (a way to cancel)."""
    tok_len = length_function(tokenizer)
    counts, log, preview = Counts(), ProblemLog(), []
    label = where_label(source.format)
    stats = _Stats("tokens" if tok_len else "characters")
    seen = Seen()
    mapping_problem = _mapping_problem(source, mapping)
    if mapping_problem:
        log.add(mapping_problem)
    notes_logged = 0

    def add_notes() -> None:  # whole-file warnings; readers find some only as they go
        nonlocal notes_logged
        for note in source.notes[notes_logged:]:
            log.add(note)
        notes_logged = len(source.notes)

    def problem(severity: str, pos: int, err: RowError) -> None:
        log.add(Problem(severity, f"{source.name} {label} {pos}: {err.text}", pos, err.column, source.name, err.kind))

    complete = True
    add_notes()
    with closing(iter_records(source)) as records:
        for pos, record, err in records:
            if len(source.notes) > notes_logged:
                add_notes()
            if limit is not None and counts.rows >= limit:
                complete = False
                break
            counts.rows += 1
            if progress is not None and counts.rows % PROGRESS_EVERY == 0:
                progress(counts.rows)
            if err is not None:
                counts.skipped += 1
                problem(ERROR, pos, err)
                continue
            if is_empty_record(record):
                counts.empty += 1
                continue
            if mapping_problem:
                continue
            try:
                chat = record_to_chat(record, mapping, source.lenient)
            except RowError as exc:
                counts.skipped += 1
                problem(ERROR, pos, exc)
                continue
            first = seen.add(chat_key(chat), pos)
            if first is not None:
                counts.duplicates += 1
                problem(WARNING, pos, RowError("duplicate", None, f"the same example as {label} {first}; "
                                               "it is used once (delete one copy, or change it)"))
                continue
            tokens = sum(tok_len(m["content"]) + 4 for m in chat) if tok_len else estimate_tokens(chat)
            stats.add(tokens if tok_len else sum(len(m["content"]) for m in chat), pos)
            if tokens > max_length:
                counts.too_long += 1
                about = "" if tok_len else "about "
                problem(WARNING, pos, RowError("too_long", None, f"{about}{tokens:,} tokens long, more than the "
                                               f"max length of {max_length:,}; the end will be cut off in training "
                                               "(shorten it, or raise the max length)"))
            if on_example:
                on_example(counts.usable, pos, chat)
            counts.usable += 1
            if len(preview) < preview_rows:
                preview.append(chat)
    add_notes()
    if progress is not None:
        progress(counts.rows)
    if counts.rows == counts.empty and not mapping_problem:
        under = " under the header row" if source.format in TABLE_FORMATS else ""
        log.add(Problem(ERROR, f"{source.name} has no examples{under}; add one example per row",
                        None, None, source.name, "no_rows"))
    elif counts.usable == 0 and not mapping_problem:
        log.add(Problem(ERROR, f"{source.name} has no usable examples: every row has a problem (see the list); "
                        "fix the rows, or choose other columns", None, None, source.name, "no_usable"))
    return ScanResult(counts, stats.result(), log, preview, complete)


def _mapping_problem(source: Source, m: Mapping) -> Problem | None:
    cols = ", ".join(f"'{c}'" for c in source.columns) or "none"
    if m.shape in CHAT_SHAPES:
        missing = [] if m.messages_column else ["messages"]
    else:
        if not m.prompt_column or not m.reply_column:
            which = "prompts" if not m.prompt_column else "replies"
            others = [f"'{n}'" for n in source.sheets if n != source.sheet]
            where = f" of the sheet '{source.sheet}'" if source.sheet else ""
            hint = f"; or pick another sheet ({', '.join(others)}) with --sheet" if others else ""
            cli = f"on the command line use --prompt-column and --reply-column{hint}"
            return Problem(ERROR, f"Choose the column that holds the {which} (the columns{where} are {cols}); {cli}",
                           None, None, source.name, "no_mapping", cli)
        missing = [c for c in m.columns_used() if c not in source.columns] if source.format in TABLE_FORMATS else []
    if missing:
        return Problem(ERROR, f"{source.name} has no column '{missing[0]}' (the columns are {cols}); "
                       "choose one of those", None, missing[0], source.name, "missing_column")
    return None


class _Stats:
    def __init__(self, unit: str):
        self.unit, self.n, self.total = unit, 0, 0
        self.lo, self.hi, self.hi_row = 0, 0, None
        self.sample: list[int] = []
        self.rng = random.Random(0)

    def add(self, value: int, row: int) -> None:
        self.n += 1
        self.total += value
        self.lo = value if self.n == 1 else min(self.lo, value)
        if self.n == 1 or value > self.hi:
            self.hi, self.hi_row = value, row
        if len(self.sample) < RESERVOIR:
            self.sample.append(value)
        else:
            j = self.rng.randrange(self.n)
            if j < RESERVOIR:
                self.sample[j] = value

    def result(self) -> LengthStats:
        if not self.n:
            return LengthStats(self.unit)
        s = sorted(self.sample)
        pick = lambda q: s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))]  # noqa: E731
        return LengthStats(self.unit, self.n, self.lo, self.hi, round(self.total / self.n, 1),
                           pick(0.5), pick(0.95), self.hi_row)


def resolve_mapping(source: Source, mapping: Mapping | dict | None) -> Mapping:
    """A mapping with its shape set (such as an edited report.mapping) is used
    as it is; otherwise its non-None fields are laid over the detected one."""
    if isinstance(mapping, dict):
        mapping = Mapping.from_dict(mapping)
    if mapping is not None and mapping.shape:
        if mapping.shape not in SHAPES:
            raise DataImportError(f"'{mapping.shape}' is not a shape DragonFarm knows.",
                                  "Use one of: " + ", ".join(SHAPES) + ".")
        return Mapping.from_dict({k: (v if v != "" else None) for k, v in mapping.to_dict().items()})
    detected = detect_mapping(source.columns, source.sample)
    return detected if mapping is None else mapping.merged_over(detected)


def guessed_by_contents(source: Source, asked: Mapping | dict | None, m: Mapping) -> bool:
    """Were the prompt and reply columns picked by what is in them (not their
    names, nor the user)?"""
    if isinstance(asked, dict):
        asked = Mapping.from_dict(asked)
    if asked is not None and (asked.shape or (asked.prompt_column and asked.reply_column)):
        return False
    return mapping_is_guess(source.columns, m)


def inspect_file(path: str | Path, *, sheet: str | None = None, mapping: Mapping | dict | None = None,
                 max_length: int = 1024, tokenizer: Any = None, preview_rows: int = 5,
                 limit: int | None = None, progress: Callable[[int], None] | None = None) -> Report:
    """Read a data file and report what an import would make of it.

    mapping: the user's choices (Mapping or dict). With shape None, its None
    fields are detected; with shape set (an edited report.mapping) it is used as is.
    tokenizer: encode(text)->list or a callable, for lengths in tokens.
    limit: stop after this many rows (a quick first look; report.complete is False).
    progress: called with the rows read so far, every 10,000 rows; raise in it to cancel.
    Raises DataImportError when the file cannot be read at all."""
    source = open_source(path, sheet)
    m = resolve_mapping(source, mapping)
    result = scan(source, m, max_length=max_length, tokenizer=tokenizer, preview_rows=preview_rows, limit=limit,
                  progress=progress)
    return Report(path=str(path), format=source.format, columns=list(source.columns), shape=m.shape or "columns",
                  mapping=m, sheets=list(source.sheets), sheet=source.sheet, encoding=source.encoding,
                  encoding_guessed=source.encoding_guessed, delimiter=source.delimiter,
                  header_row=source.header_row, mapping_guessed=guessed_by_contents(source, mapping, m),
                  blocking=result.log.blocking, preview=result.preview, counts=result.counts,
                  lengths=result.lengths, problems=result.log.items, problems_total=result.log.total,
                  problems_by_kind=dict(result.log.by_kind), max_length=max_length, complete=result.complete)
