"""The shipped example dataset imports cleanly and keeps its promise: short
replies, all in the same voice."""
from __future__ import annotations

from trainer.dataimport import create_run, inspect_file
from trainer.run.resources import resource
from dihelpers import run_chats


def test_pirate_example_imports_without_problems(tmp_path):
    path = resource("examples", "pirate_assistant.csv")
    report = inspect_file(path, preview_rows=300)
    assert (report.format, report.shape, report.columns) == ("csv", "question_answer", ["Question", "Answer"])
    assert report.ok and report.problems_total == 0
    assert report.counts.rows == report.counts.usable == 200
    replies = [chat[-1]["content"] for chat in report.preview]
    assert all(r.startswith("Arr") for r in replies)
    assert max(len(r.split()) for r in replies) <= 40  # short: well under 60 tokens
    run = create_run(path, runs_dir=tmp_path, name="pirate")
    assert (len(run_chats(run, "train")), len(run_chats(run, "eval"))) == (180, 20)
