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
