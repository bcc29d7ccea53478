"""`dragonfarm new` and `dragonfarm inspect`, in-process through trainer.cli.main."""
from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

import pytest

from dihelpers import A, U, fixture, run_chats
from trainer.cli import main
from trainer.run.config import TrainConfig
from trainer.dataimport import create_run, eval_count, split_indices

GOOD = [("qa.csv", []), ("prompt_completion_bom.csv", []), ("table.tsv", []), ("unicode_text.txt", []),
        ("excel_windows.csv", []), ("alpaca.json", []), ("messages.jsonl", []), ("sharegpt.json", []),
        ("question_answer.jsonl", []), ("wrapped.json", []), ("workbook.xlsx", ["--sheet", "Answers"]),
        ("bad_json_line.jsonl", []), ("missing_column.jsonl", []), ("empty_reply.csv", []),
        ("not_text.jsonl", []), ("roles_order.jsonl", []), ("too_long.csv", ["--max-length", "64"]),
        ("duplicates.csv", []), ("many_errors.jsonl", []), ("one_column.csv", ["--reply-column", "Notes",
                                                                               "--prompt-column", "Notes"])]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def new(tmp_path, *args) -> Path:
    code = main(["new", "--runs-dir", str(tmp_path / "runs"), "--quiet", *args])
    assert code == 0
    return Path(sorted((tmp_path / "runs").iterdir(), key=lambda p: p.stat().st_mtime_ns)[-1])


@pytest.mark.parametrize("name,extra", GOOD, ids=[g[0] for g in GOOD])
def test_new_makes_a_run_folder_the_trainer_accepts(tmp_path, capsys, name, extra):
    before = sha(fixture(name))
    code = main(["new", "--data", str(fixture(name)), "--runs-dir", str(tmp_path / "runs"), "--quiet", *extra])
    assert code == 0
    run = Path(capsys.readouterr().out.strip())
    assert run.parent == tmp_path / "runs" and run.name == Path(name).stem
    config = TrainConfig.load(run)
    assert config.name == run.name and config.model == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert dt.datetime.fromisoformat(config.created_at).tzinfo is not None
    lines = (run / config.train_file).read_text(encoding="utf-8").splitlines()
    if config.eval_file:
        lines += (run / config.eval_file).read_text(encoding="utf-8").splitlines()
    assert lines
    for line in lines:
        chat = json.loads(line)["messages"]
        assert all(set(m) == {"role", "content"} and isinstance(m["content"], str) for m in chat)
        assert {m["role"] for m in chat} <= {"system", "user", "assistant"}
        assert any(m["role"] == "assistant" for m in chat)
    from trainer.engine.encode import read_chats  # the trainer's own reader accepts the files too

    trainer_view = read_chats(run / config.train_file) + (read_chats(run / config.eval_file) if config.eval_file else [])
    assert trainer_view == [json.loads(line)["messages"] for line in lines]
    record = json.loads((run / "data" / "import.json").read_text(encoding="utf-8"))
    assert record["source"]["file"] == name and record["source"]["sha256"] == before
    assert record["counts"]["usable"] == len(lines) == record["split"]["train"] + record["split"]["eval"]
    assert sha(fixture(name)) == before  # the person's file is never changed


def test_never_overwrites_a_run_folder(tmp_path):
    first = create_run(fixture("qa.csv"), runs_dir=tmp_path, name="my run")
    second = create_run(fixture("duplicates.csv"), runs_dir=tmp_path, name="my run")
    assert (first.name, second.name) == ("my-run", "my-run-2")
    assert run_chats(first)[0] == [U("What is the capital of France?"), A("Paris.")]
    assert TrainConfig.load(second).name == "my-run-2"


def test_nothing_usable_is_refused_and_makes_no_folder(tmp_path, capsys):
    code = main(["new", "--data", str(fixture("no_usable.csv")), "--runs-dir", str(tmp_path / "runs")])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("dragonfarm: no_usable.csv has no usable examples: every row has a problem")
    assert "  - no_usable.csv row 2: the reply (column 'Answer') is empty" in err
    assert not any((tmp_path / "runs").glob("*/config.json"))


def test_bad_settings_are_refused_before_any_folder(tmp_path, capsys):
    code = main(["new", "--data", str(fixture("qa.csv")), "--runs-dir", str(tmp_path / "runs"), "--lora-r", "0"])
    assert code == 2 and "lora_r: 0 is out of range" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_settings_and_mapping_flags_reach_the_run(tmp_path):
    run = new(tmp_path, "--data", str(fixture("table.tsv")), "--name", "support", "--epochs", "2",
              "--learning-rate", "0.001", "--max-length", "256", "--batch-size", "2", "--lora-r", "8",
              "--max-steps", "30", "--prompt-column", "Customer says", "--reply-column", "We reply",
              "--system-column", "", "--system", "Be polite.", "--model", "SmolLM2-135M-Instruct")
    c = TrainConfig.load(run)
    assert (c.name, c.epochs, c.learning_rate, c.max_length, c.batch_size, c.lora_r, c.max_steps) == \
        ("support", 2.0, 0.001, 256, 2, 8, 30)
    assert c.model == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert run_chats(run)[0][0] == {"role": "system", "content": "Be polite."}
    mapping = json.loads((run / "data" / "import.json").read_text())["mapping"]
    assert mapping["system_prompt"] == "Be polite." and mapping["system_column"] is None


def _big_csv(path: Path, n: int) -> Path:
    path.write_text("prompt,completion\n" + "".join(f"q{i},a{i}\n" for i in range(n)), encoding="utf-8")
    return path


def test_held_out_split_is_seeded_and_disjoint(tmp_path):
    data = _big_csv(tmp_path / "fifty.csv", 50)
    a = create_run(data, runs_dir=tmp_path / "runs", seed=1)
    b = create_run(data, runs_dir=tmp_path / "runs", seed=1)
    c = create_run(data, runs_dir=tmp_path / "runs", seed=2)
    assert len(run_chats(a, "eval")) == 5 and len(run_chats(a, "train")) == 45
    assert run_chats(a, "eval") == run_chats(b, "eval") != run_chats(c, "eval")
    held = [chat[0]["content"] for chat in run_chats(a, "eval")]
    assert held == [f"q{i}" for i in sorted(split_indices(50, 5, 1))]
    assert not set(held) & {chat[0]["content"] for chat in run_chats(a, "train")}


def test_a_separate_eval_file(tmp_path):
    run = create_run(fixture("qa.csv"), runs_dir=tmp_path, eval_file=fixture("question_answer.jsonl"))
    assert len(run_chats(run, "train")) == 3
    assert run_chats(run, "eval") == [[U("Sky colour?"), A("Blue")], [U("Grass colour?"), A("Green")]]
    record = json.loads((run / "data" / "import.json").read_text())
    assert record["split"]["eval_source"]["file"] == "question_answer.jsonl"


def test_too_few_examples_hold_nothing_out(tmp_path):
    run = create_run(fixture("qa.csv"), runs_dir=tmp_path)
    assert TrainConfig.load(run).eval_file == "" and not (run / "data" / "eval.jsonl").exists()


@pytest.mark.parametrize("usable,fraction,expected", [
    (0, 0.1, 0), (4, 0.1, 0), (19, 0.1, 0), (20, 0.1, 2), (20, 0.01, 1), (50, 0.1, 5), (150, 0.1, 15),
    (151, 0.1, 15), (10, 0.5, 0), (100, 0.0, 0), (1_000_000, 0.1, 500), (20, 0.5, 10)])
def test_eval_count(usable, fraction, expected):
    assert eval_count(usable, fraction) == expected


def test_eval_fraction_out_of_range(tmp_path, capsys):
    code = main(["new", "--data", str(fixture("qa.csv")), "--runs-dir", str(tmp_path), "--eval-fraction", "0.9"])
    assert code == 2
    assert "The held-out fraction 0.9 is out of range." in capsys.readouterr().err


def test_inspect_prints_a_readable_report(capsys):
    assert main(["inspect", str(fixture("empty_reply.csv"))]) == 0
    out = capsys.readouterr().out
    assert "File:        empty_reply.csv (CSV, comma-separated, UTF-8)" in out
    assert "Looks like:  question and answer" in out
    assert "  prompt     <- column 'Question'\n  reply      <- column 'Answer'" in out
    assert "  -- Example 1 --\n    User:      First?\n    Assistant: Yes" in out
    assert "Counts:      3 rows, 2 usable examples, 1 with errors (skipped)" in out
    assert ("  error   empty_reply.csv row 3: the reply (column 'Answer') is empty; write the reply or delete the row"
            in out)
    assert out.rstrip().endswith("dragonfarm new --data " + str(fixture("empty_reply.csv"))
                                 + " --model HuggingFaceTB/SmolLM2-135M-Instruct")


def test_inspect_of_an_unusable_file_says_what_to_do(capsys):
    assert main(["inspect", str(fixture("one_column.csv"))]) == 2
    assert "Not ready yet: fix the errors above" in capsys.readouterr().out


def test_inspect_json_and_whole_file_errors(capsys):
    assert main(["inspect", "--json", str(fixture("workbook.xlsx")), "--sheet", "Answers"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] and data["sheets"] == ["Notes", "Answers"] and data["counts"]["usable"] == 3
    assert main(["inspect", str(fixture("empty.csv"))]) == 2
    assert capsys.readouterr().err == ("dragonfarm: empty.csv is empty.\n"
                                       "Add your examples to it (a header row, then one example per row).\n")


def test_lengths_in_the_models_tokens(smollm2_dir, capsys):
    """With --tokenizer, lengths are SmolLM2 tokens (+4 per message for its chat template)."""
    assert main(["inspect", "--json", str(fixture("qa.csv")), "--tokenizer", str(smollm2_dir)]) == 0
    lengths = json.loads(capsys.readouterr().out)["lengths"]
    assert (lengths["unit"], lengths["min"], lengths["max"], lengths["count"]) == ("tokens", 17, 17, 3)
