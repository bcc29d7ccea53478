"""One fixture per format and shape: the exact chats each one produces."""
from __future__ import annotations

import pytest

from dihelpers import A, S, U, fixture
from trainer.dataimport import Mapping, inspect_file

CASES = [
    ("qa.csv", "csv", "question_answer", ["Question", "Answer"], [
        [U("What is the capital of France?"), A("Paris.")],
        [U("Two lines, please"), A("First line\nSecond line")],
        [U("How many legs has a spider?"), A("Eight.")]]),
    ("prompt_completion_bom.csv", "csv", "prompt_completion", ["prompt", "completion"], [
        [U("Say hi"), A("Hi!")], [U("Say bye"), A("Bye!")]]),
    ("table.tsv", "tsv", "columns", ["Customer says", "We reply", "System"], [
        [S("Be brief."), U("Where is my order?"), A("It ships today.")],
        [U("Can I return it?"), A("Yes, within 30 days.")]]),
    ("unicode_text.txt", "tsv", "columns", ["Frage", "Antwort"], [
        [U("Wie spät ist es?"), A("Zeit für Kaffee.")], [U("Grüß dich"), A("Servus!")]]),
    ("excel_windows.csv", "csv", "question_answer", ["Question", "Answer"], [
        [U("Café? Oui"), A("Un café, s’il vous plaît – 2 €")], [U("Naïve?"), A("Très")]]),
    ("alpaca.json", "json", "alpaca", ["instruction", "input", "output"], [
        [U("Translate to French\n\ncat"), A("chat")], [U("Name a primary colour"), A("Red")]]),
    ("messages.jsonl", "jsonl", "messages", ["messages"], [
        [S("You are terse."), U("Hello"), A("Hi.")],
        [U("2+2?"), A("4"), U("And 3+3?"), A("6")]]),
    ("sharegpt.json", "json", "sharegpt", ["conversations"], [
        [U("Who are you?"), A("A helper.")], [S("Rhyme."), U("Day?"), A("Hooray!")]]),
    ("question_answer.jsonl", "jsonl", "question_answer", ["question", "answer"], [
        [U("Sky colour?"), A("Blue")], [U("Grass colour?"), A("Green")]]),
    ("wrapped.json", "json", "prompt_completion", ["prompt", "completion"], [
        [U("a"), A("b")], [U("c"), A("d")]]),
]


@pytest.mark.parametrize("name,fmt,shape,columns,expected", CASES, ids=[c[0] for c in CASES])
def test_reads_every_format_and_shape(name, fmt, shape, columns, expected):
    report = inspect_file(fixture(name), preview_rows=10)
    assert (report.format, report.shape, report.columns) == (fmt, shape, columns)
    assert report.preview == expected
    assert report.counts.rows == report.counts.usable == len(expected)
    assert report.problems == [] and report.ok


def test_encodings_and_delimiters_are_found():
    assert inspect_file(fixture("prompt_completion_bom.csv")).encoding == "utf-8-sig"
    assert inspect_file(fixture("prompt_completion_bom.csv")).delimiter == ";"
    assert inspect_file(fixture("unicode_text.txt")).encoding == "utf-16"
    assert inspect_file(fixture("excel_windows.csv")).encoding == "cp1252"


def test_xlsx_first_sheet_and_named_sheet():
    first = inspect_file(fixture("workbook.xlsx"))
    assert first.sheets == ["Notes", "Answers"] and first.sheet == "Notes" and not first.ok
    assert first.problems[0].message == (
        "Choose the column that holds the prompts (the columns of the sheet 'Notes' are 'These are my notes'); "
        "on the command line use --prompt-column and --reply-column; or pick another sheet ('Answers') with --sheet")
    named = inspect_file(fixture("workbook.xlsx"), sheet="answers")  # case does not matter
    assert named.sheet == "Answers" and named.columns == ["Ask", "Reply"] and named.format == "xlsx"
    assert named.preview == [[U("How old is the moon?"), A("About 4.5 billion years.")],
                             [U("Lucky number?"), A("7")], [U("Best day?"), A("Friday")]]
    assert (named.counts.rows, named.counts.empty, named.counts.usable) == (4, 1, 3)


def test_user_mapping_overrides_detection():
    m = Mapping(prompt_column="We reply", reply_column="Customer says", system_column=None,
                system_prompt="Speak like a pirate.")
    report = inspect_file(fixture("table.tsv"), mapping=m)
    assert report.mapping.system_column == "System"  # still detected; the user left it None
    report = inspect_file(fixture("table.tsv"), mapping={"prompt_column": "We reply", "reply_column": "Customer says",
                                                         "system_column": "", "system_prompt": "Arr."})
    assert report.preview[0] == [S("Arr."), U("It ships today."), A("Where is my order?")]


def test_one_system_prompt_for_chat_files_without_their_own():
    report = inspect_file(fixture("messages.jsonl"), mapping=Mapping(system_prompt="Be kind."))
    assert report.preview[0][0] == S("You are terse.")
    assert report.preview[1][0] == S("Be kind.")


def test_mapping_round_trips_through_a_dict():
    m = Mapping("alpaca", "instruction", "output", "input", None, "Hi", None)
    assert Mapping.from_dict(m.to_dict()) == m
    assert Mapping.from_dict({"prompt_column": "Q", "unknown": 1}) == Mapping(prompt_column="Q")


def test_length_stats_in_characters_and_with_a_tokenizer():
    report = inspect_file(fixture("qa.csv"))
    assert report.lengths.unit == "characters"
    # 30 + 6, 17 + 22 and 27 + 6 characters of content
    assert (report.lengths.min, report.lengths.max, report.lengths.median, report.lengths.count) == (33, 39, 36, 3)
    assert report.lengths.longest_row == 3
    chars = inspect_file(fixture("qa.csv"), tokenizer=lambda text: list(text))
    # a callable "tokenizer": one token per character, + 4 template tokens per message
    assert chars.lengths.unit == "tokens"
    assert (chars.lengths.min, chars.lengths.max, chars.lengths.longest_row) == (41, 47, 3)


class WordTokenizer:
    def encode(self, text):
        return text.split()


def test_tokenizer_object_with_encode_counts_too_long_rows():
    report = inspect_file(fixture("too_long.csv"), tokenizer=WordTokenizer(), max_length=50)
    assert report.counts.too_long == 1
    assert report.problems[0].message == ("too_long.csv row 3: 109 tokens long, more than the max length of 50; "
                                          "the end will be cut off in training (shorten it, or raise the max length)")
