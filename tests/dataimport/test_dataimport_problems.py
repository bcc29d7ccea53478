"""One fixture per problem: the exact message, with its row or line number."""
from __future__ import annotations

import pytest

from dihelpers import A, U, fixture
from trainer.dataimport import MAX_PROBLEMS, DataImportError, inspect_file
from trainer.run.errors import UserError


def messages(report):
    return [(p.severity, p.row, p.column, p.message) for p in report.problems]


def test_malformed_json_line():
    r = inspect_file(fixture("bad_json_line.jsonl"))
    assert messages(r) == [("error", 3, None, "bad_json_line.jsonl line 3: not valid JSON (Expecting ',' delimiter "
                                              "at column 38); fix the line or delete it")]
    assert (r.counts.rows, r.counts.usable, r.counts.skipped) == (4, 3, 1)
    assert r.preview[2] == [U("four"), A("4")]  # the bad line hides nothing after it


def test_missing_column():
    r = inspect_file(fixture("missing_column.jsonl"))
    assert messages(r) == [("error", 2, "completion", "missing_column.jsonl line 2: the column 'completion' is "
                                                      "missing; add it to this row")]


def test_missing_column_in_a_table_is_a_whole_file_problem():
    r = inspect_file(fixture("qa.csv"), mapping={"reply_column": "Reply"})
    assert not r.ok and r.counts.usable == 0 and r.problems_by_kind == {"missing_column": 1}
    assert r.problems[0].message == "qa.csv has no column 'Reply' (the columns are 'Question', 'Answer'); choose one of those"


def test_empty_reply():
    r = inspect_file(fixture("empty_reply.csv"))
    assert messages(r) == [("error", 3, "Answer", "empty_reply.csv row 3: the reply (column 'Answer') is empty; "
                                                  "write the reply or delete the row")]
    assert r.preview == [[U("First?"), A("Yes")], [U("Third?"), A("No")]]


def test_content_that_is_not_text():
    r = inspect_file(fixture("not_text.jsonl"))
    assert messages(r) == [
        ("error", 2, "completion", "not_text.jsonl line 2: the value in 'completion' is a number, not text; "
                                   "put the text in quotes or fix the value"),
        ("error", 3, "prompt", "not_text.jsonl line 3: the value in 'prompt' is a list, not text; "
                               "put the text in quotes or fix the value")]


def test_roles_out_of_order():
    r = inspect_file(fixture("roles_order.jsonl"))
    assert [(p.row, p.kind, p.message.split(": ", 1)[1]) for p in r.problems] == [
        (2, "roles_order", "message 2 is 'user' after a 'user' message; messages must go "
                           "(system,) user, assistant, user, assistant..."),
        (3, "empty_reply", "there is no assistant reply; add one or delete the example"),
        (4, "bad_role", "message 2 has the role 'wizard'; use system, user or assistant")]
    assert r.counts.usable == 1


def test_too_long_is_a_counted_warning_and_the_row_is_kept():
    r = inspect_file(fixture("too_long.csv"), max_length=64)
    # no tokenizer: ceil(chars / 4) + 4 per message = (1 + 4) + (ceil(499 / 4) + 4) = 134
    assert messages(r) == [("warning", 3, None, "too_long.csv row 3: about 134 tokens long, more than the max "
                                                "length of 64; the end will be cut off in training (shorten it, "
                                                "or raise the max length)")]
    assert (r.counts.usable, r.counts.too_long) == (2, 1) and r.ok


def test_duplicates_are_warned_and_used_once():
    r = inspect_file(fixture("duplicates.csv"))
    assert messages(r) == [("warning", 4, None, "duplicates.csv row 4: the same example as row 2; it is used once "
                                                "(delete one copy, or change it)")]
    assert (r.counts.rows, r.counts.usable, r.counts.duplicates) == (3, 2, 1)


@pytest.mark.parametrize("name,message", [
    ("empty.csv", "empty.csv is empty.\nAdd your examples to it (a header row, then one example per row)."),
    ("binary.csv", "binary.csv is not a text file (it looks like binary data).\n"
                   "Save it as CSV (.csv), Excel (.xlsx) or JSON Lines (.jsonl) and try again."),
    ("old_excel.xls", "old_excel.xls is an old Excel .xls workbook, which DragonFarm cannot read.\n"
                      "Save it as CSV (.csv), Excel (.xlsx) or JSON Lines (.jsonl) and try again."),
    ("missing.csv", None),
])
def test_whole_file_problems_raise_one_clear_error(name, message):
    with pytest.raises(DataImportError) as info:
        inspect_file(fixture(name))
    assert isinstance(info.value, UserError)
    if message:
        assert str(info.value) == message
    else:
        assert str(info.value).startswith("missing.csv: the file was not found.")


def test_a_file_with_only_a_header():
    r = inspect_file(fixture("header_only.csv"))
    assert not r.ok and messages(r) == [
        ("error", None, None, "header_only.csv has no examples under the header row; add one example per row")]


def test_no_usable_rows_lists_every_row_then_the_file():
    r = inspect_file(fixture("no_usable.csv"))
    assert not r.ok
    assert [(p.row, p.kind) for p in r.problems] == [(2, "empty_reply"), (3, "empty_reply"), (None, "no_usable")]
    assert r.problems[-1].message == ("no_usable.csv has no usable examples: every row has a problem (see the list); "
                                      "fix the rows, or choose other columns")


def test_many_problems_are_capped_and_counted():
    r = inspect_file(fixture("many_errors.jsonl"))
    assert len(r.problems) == MAX_PROBLEMS == 200
    assert r.problems_total == 250 and r.counts.skipped == 250 and r.counts.usable == 1
    assert [p.row for p in r.problems[:3]] == [1, 2, 3] and r.problems[-1].row == 200


def test_bad_sheet_name_lists_the_sheets():
    with pytest.raises(DataImportError) as info:
        inspect_file(fixture("workbook.xlsx"), sheet="Nope")
    assert str(info.value) == "workbook.xlsx has no sheet named 'Nope'.\nIts sheets are: 'Notes', 'Answers'."


def test_a_one_column_table_asks_for_the_reply_column():
    r = inspect_file(fixture("one_column.csv"))
    assert not r.ok and r.counts.rows == 2
    assert r.problems[0].message == ("Choose the column that holds the replies (the columns are 'Notes'); "
                                     "on the command line use --prompt-column and --reply-column")
