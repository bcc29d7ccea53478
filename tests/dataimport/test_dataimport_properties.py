"""Property tests: given arbitrary bytes or arbitrary rows, the import either
works or raises DataImportError, never another exception, and never hangs."""
from __future__ import annotations

import csv
import io
import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from trainer.dataimport import DataImportError, create_run, inspect_file
from trainer.dataimport.problems import blocks

SETTINGS = settings(max_examples=60, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
EXTENSIONS = ["csv", "tsv", "txt", "json", "jsonl", "xlsx", ""]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)
keys = st.sampled_from(["prompt", "completion", "question", "answer", "instruction", "input", "output",
                        "messages", "conversations", "role", "content", "from", "value", "system", "x"])
records = st.dictionaries(keys, json_values | st.lists(st.dictionaries(keys, json_values, max_size=3), max_size=4),
                          max_size=5)


def _check(data: bytes, ext: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / (f"data.{ext}" if ext else "data")
        path.write_bytes(data)
        try:
            report = inspect_file(path)
        except DataImportError as exc:
            assert str(exc)
            return
        assert report.counts.usable <= report.counts.rows
        assert report.ok == (report.counts.usable > 0 and not any(blocks(p) for p in report.problems))
        if report.ok:
            run = create_run(path, runs_dir=Path(tmp) / "runs")
            for line in (run / "data" / "train.jsonl").read_text(encoding="utf-8").splitlines():
                assert any(m["role"] == "assistant" for m in json.loads(line)["messages"])
        assert path.read_bytes() == data


@SETTINGS
@given(data=st.binary(max_size=600), ext=st.sampled_from(EXTENSIONS))
def test_arbitrary_bytes(data, ext):
    _check(data, ext)


@SETTINGS
@given(text=st.text(max_size=300), ext=st.sampled_from(["csv", "tsv", "txt", "jsonl", "json"]),
       encoding=st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "cp1252"]))
def test_arbitrary_text_in_any_encoding(text, ext, encoding):
    _check(text.encode(encoding, "replace"), ext)


@SETTINGS
@given(rows=st.lists(st.lists(st.text(max_size=15), max_size=4), max_size=8),
       delimiter=st.sampled_from([",", ";", "\t", "|"]))
def test_arbitrary_table_rows(rows, delimiter):
    buffer = io.StringIO()
    csv.writer(buffer, delimiter=delimiter).writerows([["prompt", "completion"], *rows])
    _check(buffer.getvalue().encode("utf-8"), "csv")


@SETTINGS
@given(items=st.lists(records, max_size=6), as_lines=st.booleans())
def test_arbitrary_json_records(items, as_lines):
    text = "\n".join(json.dumps(i) for i in items) if as_lines else json.dumps(items)
    _check(text.encode("utf-8"), "jsonl" if as_lines else "json")


@settings(max_examples=20, deadline=5000, suppress_health_check=[HealthCheck.too_slow])
@given(cells=st.lists(st.lists(st.one_of(st.none(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                                         st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs")),
                                                 max_size=12)),
                               min_size=1, max_size=3), max_size=6))
def test_arbitrary_spreadsheet_cells(cells):
    import openpyxl

    wb = openpyxl.Workbook()
    for row in cells:
        wb.active.append(row)
    buffer = io.BytesIO()
    wb.save(buffer)
    _check(buffer.getvalue(), "xlsx")


# Cells with the characters that break hand-made CSV in every position:
# delimiters, quotes, line breaks (\n, \r\n, lone \r), tabs and any other text.
awkward_cells = st.lists(st.sampled_from([",", ";", "\t", "|", '"', "'", "\n", "\r\n", "\r", " ", "a", "Z", "é",
                                          "日本", "\u2028", "=", "{", "["]) | st.characters(
    blacklist_categories=("Cs", "Cc")), min_size=1, max_size=12).map("".join).filter(lambda t: t.strip())


@settings(max_examples=80, deadline=3000, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(awkward_cells, awkward_cells), min_size=1, max_size=8, unique=True),
       delimiter=st.sampled_from([",", ";", "\t", "|"]), with_id=st.booleans(),
       style=st.sampled_from([(csv.QUOTE_MINIMAL, "\r\n"), (csv.QUOTE_ALL, "\n"), (csv.QUOTE_NONNUMERIC, "\r\n")]))
def test_rows_written_by_csv_writer_read_back_exactly(rows, delimiter, with_id, style):
    """Whatever a spreadsheet program's CSV writer makes of a cell, the import
    gives back exactly that text (but for the spaces around it), in order,
    with no problem reported."""
    buffer = io.StringIO()
    # Excel's line end (\r\n) with minimal quoting; or every cell quoted, as other programs do.
    writer = csv.writer(buffer, delimiter=delimiter, quoting=style[0], lineterminator=style[1])
    writer.writerow((["id"] if with_id else []) + ["prompt", "completion"])
    writer.writerows([([str(i)] if with_id else []) + list(row) for i, row in enumerate(rows, 1)])
    expected = [[{"role": "user", "content": p.strip()}, {"role": "assistant", "content": r.strip()}]
                for p, r in rows]
    unique = list({json.dumps(chat): chat for chat in expected}.values())  # stripping may make two rows equal
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.csv"
        path.write_bytes(buffer.getvalue().encode("utf-8"))
        report = inspect_file(path, preview_rows=len(rows))
        assert report.delimiter == delimiter and report.encoding == "utf-8"
        assert [p for p in report.problems if p.kind != "duplicate"] == []
        assert report.preview == unique and report.ok
        run = create_run(path, runs_dir=Path(tmp) / "runs", eval_fraction=0)
        lines = (run / "data" / "train.jsonl").read_text(encoding="utf-8").split("\n")
        assert [json.loads(line)["messages"] for line in lines if line] == unique
