"""A damaged run file is named, never allowed to break the list or the CLI.

Each case crafts one bad file in an otherwise good, finished run beside two
good runs; the readers, `dragonfarm list` and `dragonfarm status` must show
"damaged: FILE, WHAT" for it and the other runs as before. No torch.
"""
from __future__ import annotations

import json
import math
import time

import pytest
from dfhelpers import example_chats, write_run

from trainer.cli import main
from trainer.run import status as st
from trainer.run.checks import clean_progress, clean_status
from trainer.run.progress import ProgressReader
from trainer.run.reader import Run, list_runs

MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"


def _done_status(**extra) -> dict:
    now = time.time()
    return {"state": "done", "pid": 4242, "host": "elsewhere", "started_at": now - 60, "updated_at": now,
            "heartbeat_at": now, "step": 6, "total_steps": 6, **extra}


def _good_run(folder, name):
    run = write_run(folder / name, MODEL, example_chats(4), example_chats(2, 100))
    st.write_json_atomic(run / "status.json", _done_status())
    (run / "progress.jsonl").write_text("".join(
        json.dumps({"step": i, "epoch": i / 6, "loss": 2.0 - i / 10, "tokens_per_second": 100.0}) + "\n"
        for i in range(1, 7)))
    st.write_json_atomic(run / "eval.json", {"before": {"loss": 2.0, "perplexity": 7.4, "examples": 2},
                                             "after": {"loss": 1.5, "perplexity": 4.5, "examples": 2}})
    st.write_json_atomic(run / "samples.json", {"samples": [{"messages": [{"role": "user", "content": "hi"}],
                                                             "prompt": "hi", "reference": "Hello.", "base": "Hm",
                                                             "finetuned": "Hello."}]})
    return run


# (file, bytes to write, words the damage must contain)
CASES = {
    "eval-list": ("eval.json", b"[1, 2]", "eval.json, a list, not an object"),
    "eval-string-loss": ("eval.json", b'{"after": {"loss": "low"}}', "eval.json, after loss is 'low', not a number"),
    "status-huge-pid": ("status.json", json.dumps(_done_status(pid=10**30)).encode(), "status.json, pid is"),
    "status-string-step": ("status.json", json.dumps(_done_status(step="five")).encode(),
                           "status.json, step is 'five', not a count"),
    "status-truncated": ("status.json", json.dumps(_done_status()).encode()[:25],
                         "status.json, not complete JSON (cut short or damaged)"),
    "status-binary": ("status.json", bytes(range(256)) * 4, "status.json, not text (binary or damaged)"),
    "status-empty": ("status.json", b"", "status.json, empty"),
    "status-list": ("status.json", b"[]", "status.json, a list, not an object"),
    "status-unknown-state": ("status.json", json.dumps(_done_status(state="exploded")).encode(),
                             "status.json, state 'exploded' is not a state DragonFarm knows"),
    "status-deep": ("status.json", b"[" * 100_000 + b"]" * 100_000, "status.json, not complete JSON"),
    "progress-loss-abc": ("progress.jsonl", b'{"step": 1, "loss": "abc"}\n',
                          "progress.jsonl, line 1: loss is 'abc', not a number"),
    "progress-nested": ("progress.jsonl", b'{"step": {"a": 1}, "loss": {"x": [1]}}\n',
                        "progress.jsonl, line 1: step is {'a': 1}, not a whole number"),
    "progress-not-json": ("progress.jsonl", b'{"step": 1, "loss": 1.0}\n{oops\n',
                          "progress.jsonl, line 2: not valid JSON"),
    "progress-list-line": ("progress.jsonl", b"[1, 2]\n", "progress.jsonl, line 1: not a JSON object"),
    "samples-wrong-shape": ("samples.json", b'{"samples": [1, "x", {"messages": 5}]}',
                            "samples.json, sample 1 is 1, not an object"),
    "samples-not-list": ("samples.json", b'{"samples": {"a": 1}}', "samples.json, samples is not a list"),
    "config-unknown-key": ("config.json", None, "config.json, bogus: unknown setting; remove it"),
}


@pytest.fixture
def three_runs(tmp_path):
    folder = tmp_path / "runs"
    return folder, [_good_run(folder, name) for name in ("a-first", "b-middle", "c-last")]


@pytest.mark.parametrize("case", sorted(CASES))
def test_one_damaged_file_is_named_and_the_other_runs_stay(three_runs, case, capsys):
    folder, runs = three_runs
    name, data, words = CASES[case]
    bad = runs[1]
    if data is None:  # config.json with an unknown key
        cfg = json.loads((bad / "config.json").read_text())
        data = json.dumps({**cfg, "bogus": 1}).encode()
    (bad / name).write_bytes(data)

    rows = {r.name: r.summary() for r in list_runs(folder)}
    assert len(rows) == 3
    assert rows["b-middle"]["state"] == st.DAMAGED
    assert any(words in d for d in rows["b-middle"]["damaged"]), rows["b-middle"]["damaged"]
    for good in ("a-first", "c-last"):
        assert rows[good]["state"] == st.DONE and rows[good]["damaged"] == [] and rows[good]["eval_loss"] == 1.5

    assert main(["list", "--runs-dir", str(folder)]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "b-middle" in x)
    assert "damaged: " + words[:40] in line
    assert sum(" done " in x for x in out.splitlines()) == 2
    assert main(["list", "--runs-dir", str(folder), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 3

    assert main(["status", str(bad)]) == 0
    out = capsys.readouterr().out
    assert f"  damaged   {words}" in out
    assert "Not started yet" not in out
    assert main(["status", str(bad), "--json"]) == 0
    assert any(words in d for d in json.loads(capsys.readouterr().out)["status"]["damaged"])


def test_damaged_files_still_give_their_good_parts(three_runs):
    _folder, runs = three_runs
    run = runs[0]
    (run / "progress.jsonl").write_text('{"step": 1, "loss": 2.0}\n{"step": 2, "loss": "abc"}\n{"step": 3, "loss": 1.0}\n')
    (run / "samples.json").write_text('{"samples": [1, {"prompt": "p", "base": "b", "finetuned": "f"}]}')
    assert [r["step"] for r in Run(run).train_records()] == [1, 3]
    assert Run(run).samples() == [{"prompt": "p", "base": "b", "finetuned": "f"}]
    st.write_json_atomic(run / "status.json", _done_status(step="five", metrics={"train_loss": "x"}))
    status = Run(run).status()
    assert status["state"] == st.DONE and "step" not in status and "metrics" not in status
    assert status["total_steps"] == 6


def test_nan_loss_is_honest_not_damage(three_runs, capsys):
    _folder, runs = three_runs
    (runs[0] / "progress.jsonl").write_text('{"step": 1, "loss": NaN, "grad_norm": Infinity}\n')
    run = Run(runs[0])
    assert run.damage() == []
    [record] = run.train_records()
    assert record["loss"] is None and record["grad_norm"] is None
    assert main(["status", str(runs[0])]) == 0
    assert "loss      not a number (step 1)" in capsys.readouterr().out


def test_missing_status_is_not_started_and_not_damaged(tmp_path):
    run = write_run(tmp_path / "fresh", MODEL, example_chats(4), example_chats(2, 100))
    status = Run(run).status()
    assert status["state"] == st.QUEUED and status["message"] == "Not started yet" and status["damaged"] == []


def test_progress_reader_names_bad_lines_and_waits_for_partial_ones(tmp_path):
    path = tmp_path / "progress.jsonl"
    path.write_bytes(b'{"step": 1, "loss": 1.0}\n{"step": true}\n{"step": 2, "lo')
    reader = ProgressReader(path)
    assert [r["step"] for r in reader.read_new()] == [1]
    assert reader.problem_text() == "line 2: step is True, not a whole number"
    with open(path, "ab") as fh:
        fh.write(b'ss": 0.5}\n')
    assert [r["step"] for r in reader.read_new()] == [2]
    path.write_bytes(b'{"step": 1, "loss": 1.0}\n')  # shrank: a fresh start forgets old problems
    assert reader.read_new() and reader.reset and reader.problem_text() is None


def test_endless_line_is_damage_not_memory(tmp_path, monkeypatch):
    from trainer.run import progress

    monkeypatch.setattr(progress, "MAX_LINE", 1000)
    path = tmp_path / "progress.jsonl"
    path.write_bytes(b"x" * 5000)
    reader = ProgressReader(path)
    assert reader.read_new() == [] and reader.bad_lines == 1 and "longer than" in reader.problem_text()


@pytest.mark.parametrize("field, value", [("pid", True), ("pid", -3), ("pid", 2**40), ("heartbeat_at", "now"),
                                          ("heartbeat_at", 10**400), ("started_at", float("nan")),
                                          ("heartbeat_at", float("inf")), ("examples", [1]), ("message", 5),
                                          ("total_steps", 1.5), ("loss", "abc")])
def test_status_fields_are_checked(field, value):
    clean, problems = clean_status({"state": "training", field: value})
    assert field not in clean and problems and problems[0].startswith(field)


def test_status_and_progress_values_that_are_fine():
    clean, problems = clean_status({"state": "done", "pid": 12, "step": 3.0, "loss": float("nan"), "error": None,
                                    "metrics": {"train_loss": 1.0, "eval_loss_after": None}, "future_key": [1]})
    assert problems == [] and clean["step"] == 3 and clean["loss"] is None and clean["future_key"] == [1]
    record, problem = clean_progress({"step": 4, "loss": math.inf, "note": {"x": 1}})
    assert problem is None and record["loss"] is None and record["note"] == {"x": 1}
    record, problem = clean_progress({"step": 5, "loss": 10**400, "grad_norm": 3})  # too big for a float
    assert problem is None and record["loss"] is None and record["grad_norm"] == 3.0
    clean, problems = clean_status({"state": "training", "loss": 10**400, "epoch": 2})
    assert problems == [] and clean["loss"] is None and clean["epoch"] == 2.0


def test_an_imported_two_file_archive_cannot_break_the_list(three_runs, tmp_path, capsys):
    import hashlib
    import zipfile

    from trainer.run.share import unpack

    folder, runs = three_runs
    archive = tmp_path / "gift.zip"
    forged = {"state": "training", "pid": 10**30, "host": "x", "heartbeat_at": time.time() + 10**7,
              "loss": "abc", "step": {"a": 1}}
    members = {"config.json": (runs[0] / "config.json").read_bytes(), "status.json": json.dumps(forged).encode()}
    # a well-formed manifest (its checksums match): the files pass unpack, their contents are the damage
    manifest = {"format": "dragonfarm-run", "version": 2, "name": "gift", "with_data": False, "packed_at": 0,
                "files": {name: {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
                          for name, data in members.items()}}
    with zipfile.ZipFile(archive, "w") as zf:
        for name, data in members.items():
            zf.writestr(f"gift/{name}", data)
        zf.writestr("gift/dragonfarm-pack.json", json.dumps(manifest))
    unpack(archive, folder)
    rows = {r.name: r.summary() for r in list_runs(folder)}
    assert len(rows) == 4 and rows["gift"]["state"] == st.DAMAGED and rows["gift"]["live"] is False
    assert [d.split(",")[0] for d in rows["gift"]["damaged"]] == ["status.json"] * 3
    assert all(rows[r.name]["state"] == st.DONE for r in runs)
    assert main(["list", "--runs-dir", str(folder)]) == 0
    assert "damaged: status.json, pid is" in capsys.readouterr().out


def test_a_huge_progress_file_is_checked_a_piece_per_call(three_runs, monkeypatch):
    from trainer.run import reader

    monkeypatch.setattr(reader, "DAMAGE_SCAN_BYTES", 1000)
    _folder, runs = three_runs
    run = runs[1]
    good = "".join(json.dumps({"step": i, "loss": 1.0}) + "\n" for i in range(1, 200))
    (run / "progress.jsonl").write_text(good + '{"step": 200, "loss": "abc"}\n')
    calls = 0
    while not Run(run).damage():
        calls += 1
        assert calls < 20
    assert calls >= 3 and "line 200: loss is 'abc'" in Run(run).damage()[0]
    assert len(Run(run).train_records()) == 199  # a plain read takes the whole file
