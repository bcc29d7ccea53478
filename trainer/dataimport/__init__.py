"""Data import: from the files people have to a DragonFarm run folder.

Torch-free (standard library + openpyxl). The app's wizard and the
`dragonfarm inspect` / `dragonfarm new` commands call exactly this, so both
make exactly the same run folder.

    from trainer.dataimport import inspect_file, create_run, Mapping, DataImportError

    report = inspect_file("examples.xlsx", sheet="Answers")
    report.format, report.shape, report.columns, report.mapping   # what was found
    report.preview          # first chats: [[{"role": ..., "content": ...}, ...], ...]
    report.counts           # rows, usable, empty, duplicates, too_long, skipped
    report.lengths          # min/mean/median/p95/max, unit "tokens" or "characters"
    report.problems         # Problem(severity, message, row, column, file, kind), capped
    report.ok               # at least one usable example and nothing blocking (report.blocking == 0)
    report.encoding, report.encoding_words, report.encoding_guessed
                            # "cp932", "Shift-JIS (Japanese)", True: a detector chose it (show it, ask to check)
    report.delimiter_words  # "comma", "semicolon", "tab", ... for text tables
    report.header_row       # the row the column names came from (3 after a title row and a blank)
    report.mapping_guessed  # prompt/reply chosen by what the columns hold, not their names: say so

    # The user overrides the proposal. A Mapping whose shape is None lays its
    # non-None fields over the detected mapping ("" clears a field):
    report = inspect_file("examples.csv", mapping=Mapping(prompt_column="Q", reply_column="A",
                                                           system_prompt="You are ..."))
    # A Mapping with its shape set (report.mapping, edited) is used exactly as it is:
    edited = dataclasses.replace(report.mapping, system_column=None)
    run_dir = create_run("examples.csv", runs_dir=settings.runs_dir(), name="my-run",
                         model="Qwen/Qwen2.5-0.5B-Instruct",
                         mapping=edited, config_overrides={"epochs": 3})

Big files: inspect_file(path, limit=1000) gives a quick first look (report.complete
is False); inspect_file(..., progress=fn) calls fn(rows_read) every 10,000 rows
and create_run(..., progress=fn) calls fn("checking"|"writing", rows_read); an
exception raised in fn cancels (create_run then removes its half-made folder).

Rows are never lost or changed silently: a CSV quote that would swallow the
rows after it and a delimiter that would cut a cell are errors that block the
import (problems.BLOCKING); cells that are not clean text (NUL, bytes outside
the encoding, Excel error values, formulas with no saved result) are row
errors naming the cell; Excel cells read as Excel shows them.

inspect_file raises DataImportError only when the file cannot be read at all
(missing, empty, binary, unsupported, a broken .xlsx, a sheet that is not
there). Row problems and an incomplete mapping are in report.problems, with
report.ok False when nothing can be used. create_run raises DataImportError
when there is nothing usable, and config.ConfigError for bad settings; it
never changes the person's file and never overwrites a run folder (a taken
name gets -2, -3, ...).

The run folder gets config.json (trainer.run.config.TrainConfig), data/train.jsonl,
data/eval.jsonl (one {"messages": [{"role", "content"}, ...]} per line) and
data/import.json (source name and sha256, mapping, counts, split, warnings).
"""
from __future__ import annotations

from trainer.dataimport.problems import MAX_PROBLEMS, DataImportError, Problem
from trainer.dataimport.shapes import SHAPE_WORDS, SHAPES, Mapping
from trainer.dataimport.preview import Counts, LengthStats, Report, inspect_file
from trainer.dataimport.split import eval_count, split_indices, split_sentence
from trainer.dataimport.writer import create_run, run_name_for

FORMATS = ("csv", "tsv", "xlsx", "json", "jsonl")

__all__ = [
    "inspect_file", "create_run", "Report", "Mapping", "Problem", "Counts", "LengthStats",
    "DataImportError", "SHAPES", "SHAPE_WORDS", "FORMATS", "MAX_PROBLEMS",
    "eval_count", "split_indices", "split_sentence", "run_name_for",
]
