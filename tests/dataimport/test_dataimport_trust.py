"""Awkward files from issue 9: each one imports exactly what a person sees in
Excel or a text editor, or is refused with a message naming the row or cell
and the fix. Every file is built here (no binary fixtures)."""
from __future__ import annotations

import datetime as dt
import json

import pytest

from dihelpers import A, U, run_chats
from trainer.cli import main
from trainer.dataimport import DataImportError, create_run, inspect_file


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


def kinds(report):
    return [(p.kind, p.row, p.column) for p in report.problems]


# ----- CSV structure ---------------------------------------------------------

def test_unclosed_quote_names_the_row_and_refuses(tmp_path):
    rows = "".join(f"q{i},r{i}\n" for i in range(4, 12))
    path = write(tmp_path, "quote.csv", 'prompt,reply\nq1,r1\nq2,r2\n"q3,r3\n' + rows)
    r = inspect_file(path)
    assert kinds(r) == [("unclosed_quote", 4, None)]
    assert "lines 4-12" in r.problems[0].message and "closing quote" in r.problems[0].message
    assert not r.ok and r.blocking == 1
    with pytest.raises(DataImportError) as info:
        create_run(path, runs_dir=tmp_path / "runs")
    assert "quote.csv row 4: a double quote" in str(info.value)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_quote_closed_lines_later_names_where_it_closes(tmp_path):
    path = write(tmp_path, "q.csv", 'prompt,reply\nq1,r1\n"q2,r2\nq3,r3\nq4,"r4"\nq5,r5\n')
    r = inspect_file(path)
    assert kinds(r) == [("unclosed_quote", 3, None)]
    assert "only closes on line 5" in r.problems[0].message and "lines 3-5" in r.problems[0].message
    assert not r.ok


def test_unquoted_comma_in_a_reply_is_not_cut(tmp_path):
    path = write(tmp_path, "commas.csv", "prompt,reply\nHello,Hi there, how are you?\nBye,See you\n")
    r = inspect_file(path)
    assert kinds(r) == [("extra_cells", 2, None)]
    assert "a comma inside unquoted text" in r.problems[0].message and "'how are you?'" in r.problems[0].message
    assert not r.ok
    assert main(["new", "--data", str(path), "--runs-dir", str(tmp_path / "runs")]) == 2


def test_blank_trailing_cells_and_unnamed_columns_are_fine(tmp_path):
    path = write(tmp_path, "t.csv", "prompt,reply,\nHello,Hi,note\nBye,See you,,,\n")
    r = inspect_file(path, preview_rows=5)
    assert r.ok and r.problems == []
    assert r.preview == [[U("Hello"), A("Hi")], [U("Bye"), A("See you")]]


def test_quotes_done_right_are_read_exactly(tmp_path):
    path = write(tmp_path, "ok.csv", 'prompt,reply\nq1,"He said ""hi"", then left"\nq2,say "hi" there\n'
                                     'q3,"two\nlines, with a comma"\n')
    r = inspect_file(path, preview_rows=5)
    assert r.problems == [] and r.ok
    assert [c[1]["content"] for c in r.preview] == ['He said "hi", then left', 'say "hi" there',
                                                    "two\nlines, with a comma"]


def test_json_lines_named_csv_is_read_as_json_lines(tmp_path):
    text = "".join(json.dumps({"prompt": f"p{i}", "completion": f"c{i}"}) + "\n" for i in range(3))
    r = inspect_file(write(tmp_path, "data.csv", text), preview_rows=5)
    assert r.format == "jsonl" and r.ok
    assert r.preview[0] == [U("p0"), A("c0")]
    assert kinds(r) == [("format_from_content", None, None)]
    assert r.problems[0].severity == "warning" and "named .csv but holds JSON Lines" in r.problems[0].message


def test_a_json_array_named_txt_is_read_as_json(tmp_path):
    r = inspect_file(write(tmp_path, "data.txt", json.dumps([{"question": "a", "answer": "b"}], indent=2)))
    assert r.format == "json" and r.preview == [[U("a"), A("b")]]


# ----- encodings -------------------------------------------------------------

JA = "質問,回答\n今日は何曜日ですか？,月曜日です。\nお名前は？,ドラゴンです。\n東京の天気は？,晴れです。\n"
JA_CHATS = [[U("今日は何曜日ですか？"), A("月曜日です。")], [U("お名前は？"), A("ドラゴンです。")],
            [U("東京の天気は？"), A("晴れです。")]]


@pytest.mark.parametrize("encoding,codec,words,guessed", [
    ("shift_jis", "cp932", "Shift-JIS (Japanese)", True),
    ("utf-16-le", "utf-16-le", "UTF-16 little-endian (no byte-order mark)", True),
    ("utf-16-be", "utf-16-be", "UTF-16 big-endian (no byte-order mark)", True),
    ("utf-16", "utf-16", "UTF-16 (with a byte-order mark)", False),
    ("utf-8", "utf-8", "UTF-8", False),
])
def test_japanese_in_any_encoding_reads_as_written(tmp_path, encoding, codec, words, guessed):
    r = inspect_file(write(tmp_path, "ja.csv", JA.encode(encoding)), preview_rows=5)
    assert (r.encoding, r.encoding_words, r.encoding_guessed) == (codec, words, guessed)
    assert r.columns == ["質問", "回答"] and r.preview == JA_CHATS and r.ok
    assert r.to_dict()["encoding_words"] == words


@pytest.mark.parametrize("encoding,words,text", [
    ("cp1252", "Windows-1252 (Western European)", "Frage;Antwort\nOù est la gare?;À gauche, après le pont.\n"
                                                  "Wie spät ist es?;Zeit für Kaffee, Grüße – 2 €\n"),
    ("cp1250", "Windows-1250 (Central European)", "Pytanie;Odpowiedź\nGdzie jest dworzec?;Prosto. Dziękuję.\n"
                                                  "Jak się masz?;Świetnie, łódź płynie.\n"),
    ("cp1251", "Windows-1251 (Cyrillic)", "Вопрос;Ответ\nКак дела?;Хорошо, спасибо.\nГде мой заказ?;Он в пути.\n"),
    ("cp949", "EUC-KR (Korean)", "질문;답변\n안녕하세요?;네, 반갑습니다.\n오늘 날씨는?;맑아요.\n"),
    ("gb18030", "GB18030 (Chinese, simplified)", "问题;回答\n你好吗？;我很好，谢谢。\n今天天气怎么样？;晴天。\n"),
])
def test_legacy_encodings_are_detected_not_assumed(tmp_path, encoding, words, text):
    r = inspect_file(write(tmp_path, "legacy.csv", text.encode(encoding)), preview_rows=5)
    assert (r.encoding, r.encoding_words, r.encoding_guessed) == (encoding, words, True)
    lines = [line.split(";") for line in text.splitlines()]
    assert r.columns == lines[0] and r.preview == [[U(q), A(a)] for q, a in lines[1:]]


def test_a_nul_byte_past_the_first_64_kb_is_named_not_trained_on(tmp_path):
    body = "".join(f"question {i},answer {i}\n" for i in range(5000))
    assert len(body) > 64 * 1024
    path = write(tmp_path, "nul.csv", "prompt,reply\n" + body + "late,bad\x00value\n")
    r = inspect_file(path)
    assert kinds(r) == [("control_chars", 5002, "reply")]
    assert "NUL character" in r.problems[0].message
    run = create_run(path, runs_dir=tmp_path / "runs", eval_fraction=0)
    assert not any("\x00" in m["content"] for chat in run_chats(run) for m in chat)
    assert len(run_chats(run)) == 5000


def test_bytes_from_another_encoding_late_in_the_file_are_named(tmp_path):
    body = "".join(f"question {i},answer {i}\n" for i in range(5000)).encode()
    path = write(tmp_path, "mixed.csv", b"prompt,reply\n" + body + "caf\xe9,latin-1 here\n".encode("latin-1"))
    r = inspect_file(path)
    assert r.encoding == "utf-8"
    assert kinds(r) == [("bad_bytes", 5002, "prompt")]
    assert "not UTF-8 text" in r.problems[0].message


def test_a_bad_cell_in_a_column_not_used_does_not_matter(tmp_path):
    path = write(tmp_path, "x.csv", "prompt,reply,notes\nhi,hello,odd\x07note\n")
    assert inspect_file(path).problems == []


# ----- which columns ---------------------------------------------------------

@pytest.mark.parametrize("header,row", [
    ("id,Frage,Antwort", "1,Wie spät ist es?,Zeit für Kaffee."),
    ("Nummer,Frage,Antwort", "A-0001,Wie spät ist es?,Zeit für Kaffee."),
    ("ticket_id,Frage,Antwort", "8f14e45f-ceea-467a-9575-7a1b2c3d4e5f,Wie spät ist es?,Zeit für Kaffee."),
])
def test_an_id_column_first_is_not_the_prompt(tmp_path, header, row):
    r = inspect_file(write(tmp_path, "ids.csv", f"{header}\n{row}\n"))
    assert (r.mapping.prompt_column, r.mapping.reply_column) == ("Frage", "Antwort")
    assert r.mapping_guessed and r.preview == [[U("Wie spät ist es?"), A("Zeit für Kaffee.")]]


def test_numbers_as_replies_still_pair_up(tmp_path):
    r = inspect_file(write(tmp_path, "sums.csv", "Aufgabe,Ergebnis\n2+2,4\n3+3,6\n"))
    assert (r.mapping.prompt_column, r.mapping.reply_column) == ("Aufgabe", "Ergebnis") and r.ok


def test_new_and_inspect_print_the_mapping_and_encoding(tmp_path, capsys):
    path = write(tmp_path, "ids.csv", "id,Frage,Antwort\n1,Wie spät ist es?,Zeit für Kaffee.\n")
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "File:        ids.csv (CSV, comma-separated, UTF-8)" in out
    assert "  prompt     <- column 'Frage'\n  reply      <- column 'Antwort'" in out
    assert "chosen by what the columns hold" in out
    assert main(["new", "--data", str(path), "--runs-dir", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert "read ids.csv as CSV, comma-separated, UTF-8" in out
    assert "    prompt     <- column 'Frage'\n    reply      <- column 'Antwort'" in out
    sj = write(tmp_path, "ja.csv", JA.encode("shift_jis"))
    assert main(["inspect", str(sj)]) == 0
    assert "Encoding:    Shift-JIS (Japanese), guessed" in capsys.readouterr().out
    assert main(["new", "--data", str(sj), "--runs-dir", str(tmp_path / "runs")]) == 0
    assert "Shift-JIS (Japanese) (encoding guessed: check the examples)" in capsys.readouterr().out


def test_inspect_does_not_say_looks_good_when_rows_are_left_out(tmp_path, capsys):
    path = write(tmp_path, "e.csv", "Question,Answer\nOne?,Yes\nTwo?,\n")
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Looks good" not in out and "Usable, but 1 row with errors will be left out" in out


# ----- Excel -----------------------------------------------------------------

def workbook(tmp_path, rows, name="book.xlsx", setup=None):
    import openpyxl

    wb = openpyxl.Workbook()
    for row in rows:
        wb.active.append(row)
    if setup:
        setup(wb.active)
    path = tmp_path / name
    wb.save(path)
    return path


def test_excel_dates_and_numbers_read_as_excel_shows_them(tmp_path):
    def formats(ws):
        ws["B3"].number_format = "dd.mm.yyyy"
        ws["B4"].number_format = "d mmm yyyy h:mm AM/PM"
        ws["B5"].number_format = "0.0%"
        ws["B6"].number_format = "#,##0.00"
        ws["B7"].number_format = '"$"#,##0'
        ws["B8"].number_format = "h:mm"

    path = workbook(tmp_path, [["Question", "Answer"], ["Launch?", dt.datetime(2026, 7, 14)],
                               ["Launch in Europe?", dt.datetime(2026, 7, 14)],
                               ["When exactly?", dt.datetime(2026, 7, 14, 15, 5)], ["Share?", 0.125],
                               ["Total?", 1234.5], ["Price?", 1999], ["Time?", dt.time(9, 30)],
                               ["Pi?", 3.14159], ["Sum?", 0.1 + 0.2], ["Yes?", True]], setup=formats)
    r = inspect_file(path, preview_rows=20)
    assert [c[1]["content"] for c in r.preview] == [
        "2026-07-14", "14.07.2026", "14 Jul 2026 3:05 PM", "12.5%", "1,234.50", "$1,999", "9:30", "3.14159",
        "0.3", "TRUE"]


def test_excel_merged_cells_give_their_value_to_each_row(tmp_path):
    def merge(ws):
        ws.merge_cells("A2:A3")

    path = workbook(tmp_path, [["Question", "Answer"], ["Opening hours?", "9 to 5"], [None, "Nine to five"],
                               ["Closed on?", "Sundays"]], setup=merge)
    r = inspect_file(path, preview_rows=5)
    assert r.preview == [[U("Opening hours?"), A("9 to 5")], [U("Opening hours?"), A("Nine to five")],
                         [U("Closed on?"), A("Sundays")]]
    assert kinds(r) == [("merged_cells", 2, None)] and "A2:A3 are merged" in r.problems[0].message and r.ok


def test_excel_formula_without_a_saved_result_is_named(tmp_path):
    path = workbook(tmp_path, [["Question", "Answer"], ["Two?", "=1+1"], ["Three?", "3"]])
    r = inspect_file(path)
    assert kinds(r) == [("formula_no_value", 2, "Answer")]
    assert r.problems[0].message == (
        "book.xlsx row 2: the cell B2 holds a formula (=1+1) with no saved result (the workbook was never "
        "calculated); open it in Excel, let it calculate, and save it again")


def test_excel_formula_with_a_saved_result_uses_the_result(tmp_path):
    import zipfile

    path = workbook(tmp_path, [["Question", "Answer"], ["Two?", "=1+1"]])
    # What Excel writes after calculating: the formula and its cached value.
    patched = tmp_path / "calc.xlsx"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(patched, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "xl/worksheets/sheet1.xml":
                data = data.replace(b"<f>1+1</f><v></v>", b"<f>1+1</f><v>2</v>").replace(
                    b"<f>1+1</f><v />", b"<f>1+1</f><v>2</v>")
                assert b"<v>2</v>" in data
            dst.writestr(item, data)
    r = inspect_file(patched)
    assert r.preview == [[U("Two?"), A("2")]] and r.problems == []


def test_excel_error_value_is_named(tmp_path):
    r = inspect_file(workbook(tmp_path, [["Question", "Answer"], ["Divide?", "#DIV/0!"], ["Ok?", "ok"]]))
    assert kinds(r) == [("cell_error", 2, "Answer")] and "the cell B2 shows the error #DIV/0!" in r.problems[0].message


def test_a_title_row_above_the_header_is_skipped_with_a_note(tmp_path):
    path = workbook(tmp_path, [["My support answers"], [], ["Question", "Answer"], ["Hi?", "Hello"]])
    r = inspect_file(path)
    assert r.columns == ["Question", "Answer"] and r.header_row == 3 and r.preview == [[U("Hi?"), A("Hello")]]
    assert kinds(r) == [("title_row", 1, None)] and "row 1 ('My support answers') looks like a title" in r.problems[0].message
    csv_r = inspect_file(write(tmp_path, "t.csv", "Export 2026-07-14,,\nQuestion,Answer\nHi?,Hello\n"))
    assert csv_r.columns == ["Question", "Answer"] and csv_r.header_row == 2 and csv_r.ok


def test_one_column_files_keep_their_header(tmp_path):
    r = inspect_file(write(tmp_path, "n.csv", "Notes\nbuy milk\ncall mum\n"))
    assert r.columns == ["Notes"] and r.header_row == 1 and r.counts.rows == 2


def test_password_protected_workbook_says_how_to_remove_the_password(tmp_path):
    # An encrypted .xlsx is an OLE compound file holding an EncryptionInfo stream.
    data = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504) + "EncryptionInfo".encode("utf-16-le") + bytes(100)
    with pytest.raises(DataImportError) as info:
        inspect_file(write(tmp_path, "locked.xlsx", data))
    assert str(info.value).startswith("locked.xlsx: this workbook is protected with a password")
    assert "remove the password (File > Info > Protect Workbook" in str(info.value)
    old = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504) + "Workbook".encode("utf-16-le") + bytes(100)
    with pytest.raises(DataImportError) as info:
        inspect_file(write(tmp_path, "old.xlsx", old))
    assert "an old Excel .xls workbook with an .xlsx name" in str(info.value)


def test_a_nul_escaped_in_json_is_named_too(tmp_path):
    path = write(tmp_path, "n.jsonl", '{"prompt": "a", "completion": "b\\u0000c"}\n{"prompt": "x", "completion": "y"}\n')
    r = inspect_file(path)
    assert kinds(r) == [("control_chars", 1, "completion")] and r.counts.usable == 1


def test_an_empty_but_formatted_excel_cell_is_just_empty(tmp_path):
    def style(ws):
        ws["B3"].number_format = "0.00"  # a formatted cell with nothing in it

    r = inspect_file(workbook(tmp_path, [["Question", "Answer"], ["One?", "1"], ["Two?"]], setup=style))
    assert kinds(r) == [("empty_reply", 3, "Answer")]


@pytest.mark.parametrize("value,number_format,shown", [
    (2.5, "0", "3"), (1234567, "#,##0", "1,234,567"), (0.1234, "0.00%", "12.34%"), (42, "0000", "0042"),
    (1234.5, '#,##0.00 "kr"', "1,234.50 kr"), (1234.5, '_("$"* #,##0.00_)', "$1,234.50"),
    (-5, "#,##0;(#,##0)", "(5)"), (-5, "0.00", "-5.00"), (2.25, "# ??/??", "2 1/4"), (12345.678, "0.00E+00", "1.23E+04"),
    (0.1 + 0.2, "General", "0.3"), (dt.datetime(2026, 7, 14), "mm-dd-yy", "2026-07-14"),
    (dt.datetime(2026, 7, 14), "mmmm d, yyyy", "July 14, 2026"), (dt.datetime(2026, 7, 14), "d-mmm-yy", "14-Jul-26"),
    (dt.datetime(2026, 7, 14, 9, 5, 7), "yyyy-mm-dd hh:mm:ss", "2026-07-14 09:05:07"),
    (dt.datetime(2026, 7, 14, 18, 0), "m/d/yy h:mm", "7/14/26 18:00"), (dt.time(9, 30), "h:mm:ss AM/PM", "9:30:00 AM"),
])
def test_excel_number_formats(value, number_format, shown):
    from trainer.dataimport.xlsxcells import display

    assert display(value, number_format, "n", "A1") == shown


def test_excel_sep_line_and_quotes_after_a_space(tmp_path):
    r = inspect_file(write(tmp_path, "sep.csv", 'sep=;\nQuestion;Answer\nHi?;Hello, you\n'))
    assert (r.delimiter, r.columns, r.preview) == (";", ["Question", "Answer"], [[U("Hi?"), A("Hello, you")]])
    r = inspect_file(write(tmp_path, "spaced.csv", 'prompt, reply\nHi?, "Hello, you"\n'))
    assert r.problems == [] and r.preview == [[U("Hi?"), A("Hello, you")]]


def test_a_utf16_file_cut_in_the_middle_of_a_character(tmp_path):
    data = "prompt\tcompletion\nHi\tHello\nBye\tSee you\n".encode("utf-16-le") + b"x"
    r = inspect_file(write(tmp_path, "cut.tsv", data), preview_rows=5)
    assert r.encoding == "utf-16-le" and r.preview == [[U("Hi"), A("Hello")], [U("Bye"), A("See you")]]
    assert kinds(r) == [("bad_bytes", 4, "prompt")]


def test_a_table_whose_first_name_has_braces_stays_a_table(tmp_path):
    r = inspect_file(write(tmp_path, "b.csv", "{prompt},reply\nHi,Hello}\n"))
    assert r.format == "csv" and r.columns == ["{prompt}", "reply"] and r.ok


def test_a_title_merged_across_the_columns_is_a_title_too(tmp_path):
    def merge(ws):
        ws.merge_cells("A1:C1")

    path = workbook(tmp_path, [["Support answers, July"], ["Question", "Answer", "Notes"], ["Hi?", "Hello", ""]],
                    setup=merge)
    r = inspect_file(path)
    assert r.columns == ["Question", "Answer", "Notes"] and r.header_row == 2 and r.ok
    assert [p.kind for p in r.problems] == ["title_row"]


def test_utf8_with_a_stray_byte_keeps_every_other_accent(tmp_path):
    """One word pasted from a Windows-1252 file into a UTF-8 file used to make the whole file
    read as Windows-1252, garbling every accent in every row ("cafÃ©"). Now the file reads as
    UTF-8 (said to be a guess) and only the stray byte is read as Windows-1252."""
    rows = [{"messages": [{"role": "user", "content": f"Où est le café numéro {i}?"},
                          {"role": "assistant", "content": f"À gauche, après le pont {i}. Grüße – 2 €"}]}
            for i in range(30)]
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")
    data = data.replace("numéro 1?".encode(), b"num\xe9ro 1?", 1)  # the stray byte, in the second row
    r = inspect_file(write(tmp_path, "chats.jsonl", data), preview_rows=3)
    assert (r.encoding, r.encoding_guessed) == ("utf-8", True)
    assert r.preview == [[U(f"Où est le café numéro {i}?"), A(f"À gauche, après le pont {i}. Grüße – 2 €")]
                         for i in range(3)]
