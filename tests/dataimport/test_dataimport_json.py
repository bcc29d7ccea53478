"""JSON arrays are read item by item in chunks; the result must equal json.load."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from trainer.dataimport import DataImportError, inspect_file
from trainer.dataimport import jsonfiles
from trainer.dataimport.jsonfiles import iter_json_array


@pytest.fixture
def tiny_chunks(monkeypatch):
    monkeypatch.setattr(jsonfiles, "CHUNK", 5)


values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                      | st.text(max_size=12),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                      max_leaves=10)


@settings(max_examples=80, deadline=2000)
@given(items=st.lists(values, max_size=6), indent=st.sampled_from([None, 2]))
def test_streamed_items_equal_json_load(tmp_path_factory, items, indent):
    path = tmp_path_factory.mktemp("j") / "a.json"
    path.write_text(json.dumps(items, indent=indent), encoding="utf-8")
    old = jsonfiles.CHUNK
    jsonfiles.CHUNK = 3
    try:
        assert [v for _, v in iter_json_array(path, "utf-8", "strict")] == items
    finally:
        jsonfiles.CHUNK = old


@pytest.mark.parametrize("text,message", [
    ('[\n  {"prompt": "a", "completion": "b"},\n  {"prompt": "c" "completion": "d"}\n]',
     "is not valid JSON: Expecting ',' delimiter at line 3, column 18."),
    ('[\n  {"prompt": "a", "completion": "b"},\n]', "is not valid JSON: a comma before the closing ']' at line 3, column 1."),
    ('[\n  {"prompt": "a", "completion": "b"}', "is not valid JSON: the file ends before the closing ']' at line 2, column 37."),
    ('[{"prompt": "a", "completion": "b"} {"prompt": "c"}]',
     "is not valid JSON: expected ',' or ']' after an item at line 1, column 37."),
])
def test_broken_json_array_names_the_line(tmp_path, tiny_chunks, text, message):
    path = tmp_path / "broken.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataImportError) as info:
        inspect_file(path)
    assert str(info.value).startswith("broken.json " + message)


def test_items_that_are_not_objects_are_row_problems(tmp_path, tiny_chunks):
    path = tmp_path / "mixed.json"
    path.write_text('[{"prompt": "a", "completion": "b"}, 42, "text", {"prompt": "c", "completion": "d"}]')
    r = inspect_file(path)
    assert r.counts.usable == 2 and [(p.row, p.kind) for p in r.problems] == [(2, "not_object"), (3, "not_object")]
    assert r.problems[0].message.startswith("mixed.json item 2: this is int, not an example object")


@pytest.mark.parametrize("indent", [None, 2])
def test_a_json_array_saved_as_jsonl_is_read_as_an_array(tmp_path, indent):
    path = tmp_path / "array.jsonl"
    path.write_text(json.dumps([{"prompt": "a", "completion": "b"}, {"prompt": "c", "completion": "d"}],
                               indent=indent), encoding="utf-8")
    r = inspect_file(path)
    assert r.format == "json" and r.counts.usable == 2 and r.problems == []
