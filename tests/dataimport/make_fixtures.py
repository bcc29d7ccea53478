"""Writes the small fixture files in fixtures/ (run once; the files are committed).

    python tests/dataimport/make_fixtures.py
"""
from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent / "fixtures"


def w(name: str, text: str, encoding: str = "utf-8") -> None:
    (HERE / name).write_bytes(text.encode(encoding))


def jl(name: str, rows: list) -> None:
    w(name, "".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows))


def main() -> None:
    HERE.mkdir(exist_ok=True)
    # ----- one per format and shape --------------------------------------
    w("qa.csv", 'Question,Answer\nWhat is the capital of France?,Paris.\n'
                '"Two lines, please","First line\nSecond line"\nHow many legs has a spider?,Eight.\n')
    w("prompt_completion_bom.csv", "\ufeffprompt;completion\nSay hi;Hi!\nSay bye;Bye!\n")
    w("table.tsv", "Customer says\tWe reply\tSystem\nWhere is my order?\tIt ships today.\tBe brief.\n"
                   "Can I return it?\tYes, within 30 days.\t\n")
    w("unicode_text.txt", "Frage\tAntwort\nWie spät ist es?\tZeit für Kaffee.\nGrüß dich\tServus!\n", "utf-16")
    w("excel_windows.csv", "Question;Answer\nCafé?\tOui;Un café, s’il vous plaît – 2 €\nNaïve?;Très\n"
      .replace("\t", " "), "cp1252")
    w("alpaca.json", json.dumps([
        {"instruction": "Translate to French", "input": "cat", "output": "chat"},
        {"instruction": "Name a primary colour", "input": "", "output": "Red"},
    ], indent=2))
    jl("messages.jsonl", [
        {"messages": [{"role": "system", "content": "You are terse."},
                      {"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi."}]},
        {"messages": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"},
                      {"role": "user", "content": "And 3+3?"}, {"role": "assistant", "content": "6"}]},
    ])
    w("sharegpt.json", json.dumps([
        {"conversations": [{"from": "human", "value": "Who are you?"}, {"from": "gpt", "value": "A helper."}]},
        {"conversations": [{"from": "system", "value": "Rhyme."}, {"from": "human", "value": "Day?"},
                           {"from": "gpt", "value": "Hooray!"}]},
    ]))
    jl("question_answer.jsonl", [{"question": "Sky colour?", "answer": "Blue"},
                                 {"question": "Grass colour?", "answer": "Green"}])
    w("wrapped.json", json.dumps({"version": 2, "data": [{"prompt": "a", "completion": "b"},
                                                         {"prompt": "c", "completion": "d"}]}))
    import openpyxl

    wb = openpyxl.Workbook()
    notes = wb.active
    notes.title = "Notes"
    notes.append(["These are my notes"])
    ans = wb.create_sheet("Answers")
    ans.append(["Ask", "Reply", None])
    ans.append(["How old is the moon?", "About 4.5 billion years.", None])
    ans.append(["Lucky number?", 7, None])
    ans.append([None, None, None])
    ans.append(["Best day?", "Friday", None])
    wb.save(HERE / "workbook.xlsx")

    # ----- one per problem -----------------------------------------------
    jl("bad_json_line.jsonl", [{"prompt": "one", "completion": "1"}, {"prompt": "two", "completion": "2"},
                               '{"prompt": "three", "completion": "3"', {"prompt": "four", "completion": "4"}])
    jl("missing_column.jsonl", [{"prompt": "one", "completion": "1"}, {"prompt": "two"},
                                {"prompt": "three", "completion": "3"}])
    w("empty_reply.csv", "Question,Answer\nFirst?,Yes\nSecond?,\nThird?,No\n")
    jl("not_text.jsonl", [{"prompt": "one", "completion": "1"}, {"prompt": "two", "completion": 2},
                          {"prompt": ["three"], "completion": "3"}])
    jl("roles_order.jsonl", [
        {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]},
        {"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "again"},
                      {"role": "assistant", "content": "b"}]},
        {"messages": [{"role": "user", "content": "only a question"}]},
        {"messages": [{"role": "user", "content": "x"}, {"role": "wizard", "content": "y"}]},
    ])
    w("too_long.csv", "prompt,completion\nshort,fine\nlong," + "word " * 100 + "\n")
    w("duplicates.csv", "prompt,completion\nHi,Hello\nBye,Goodbye\nHi,Hello\n")
    w("empty.csv", "")
    w("header_only.csv", "Question,Answer\n")
    w("no_usable.csv", "Question,Answer\nOne?,\nTwo?,\n")
    (HERE / "binary.csv").write_bytes(bytes(range(256)) * 4)
    (HERE / "old_excel.xls").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 200)
    jl("many_errors.jsonl", [{"prompt": f"p{i}", "completion": ""} for i in range(250)]
       + [{"prompt": "ok", "completion": "fine"}])
    w("one_column.csv", "Notes\nbuy milk\ncall mum\n")


if __name__ == "__main__":
    main()
