"""Data-parallel training (trainer.engine.parallel, trainer.engine.launcher): two CPU
processes with gloo on the tiny model give the single process's loss curve."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from trainer.engine.launcher import processes_for
from trainer.engine.parallel import World, share_step, world_from_env
from trainer.run import status as st
from trainer.run.errors import UserError
from trainer.run.reader import Run

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("packed", [True, False])
@pytest.mark.parametrize("size", [2, 3])
def test_each_example_goes_to_exactly_one_process(packed, size):
    lengths = [5, 40, 12, 33, 7, 8, 21, 2, 60, 14, 9]
    rows = [[0, 1, 2], [3, 4, 5, 6], [7, 8], [9, 10]]
    shares = share_step(rows, lengths, packed, size)
    assert len(shares) == size and len({len(s) for s in shares}) == 1   # the same number of micro-batches each
    assert len(shares[0]) * size >= len(rows)
    dealt = sorted(i for share in shares for row in share for i in row)
    assert dealt == sorted(i for row in rows for i in row)
    assert share_step(rows, lengths, packed, 1) == [rows]


def test_fewer_examples_than_processes_leaves_some_rows_empty():
    shares = share_step([[0]], [10], True, 2)
    assert shares == [[[0]], [[]]]


def test_world_from_env():
    assert world_from_env({}) == World()
    assert world_from_env({"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1"}) == World(1, 2, 1)
    with pytest.raises(UserError):
        world_from_env({"RANK": "2", "WORLD_SIZE": "2"})


def test_how_many_processes():
    assert processes_for(None, "auto", found=0) == 1
    assert processes_for(None, "auto", found=4) == 4
    assert processes_for("all", "cuda", found=2) == 2
    assert processes_for("2", "auto", found=4) == 2
    assert processes_for("1", "auto", found=4) == 1
    assert processes_for(None, "cpu", found=4) == 1
    with pytest.raises(UserError, match="has 2 NVIDIA GPUs"):
        processes_for("3", "auto", found=2)
    with pytest.raises(UserError, match="no NVIDIA GPU"):
        processes_for("2", "auto", found=0)
    with pytest.raises(UserError, match="CPU"):
        processes_for("2", "cpu", found=2)


def _curve(run_dir: Path, key: str = "loss") -> list[tuple[int, float]]:
    return [(r["step"], r[key]) for r in Run(run_dir).progress() if key in r]


def test_two_processes_match_one_and_resume_with_one(make_run):
    """Two gloo processes on the CPU: the same losses as one process on the same global batch,
    one progress line per step (process 0 writes), and their checkpoint resumes in one process."""
    from trainer.engine.launcher import launch
    from trainer.engine.loop import train

    settings = dict(max_steps=6, eval_every=3, save_every=3, device="cpu", precision="fp32", num_samples=1)
    one = make_run("one", **settings)
    two = make_run("two", **settings)
    assert train(one, verbose=False) == st.DONE

    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    assert launch(two, 2, env=env) == 0
    s = Run(two).status()
    assert s["state"] == st.DONE and s["processes"] == 2 and s["device_name"].startswith("2 × ")
    assert [step for step, _ in _curve(two)] == list(range(1, 7))   # written once per step
    assert [x for _, x in _curve(two)] == pytest.approx([x for _, x in _curve(one)], rel=1e-4)
    held_out_one, held_out_two = _curve(one, "eval_loss"), _curve(two, "eval_loss")
    assert [step for step, _ in held_out_two] == [step for step, _ in held_out_one] == [0, 3, 6]
    assert [x for _, x in held_out_two] == pytest.approx([x for _, x in held_out_one], rel=1e-4)
    assert Run(two).samples()[0]["finetuned"] is not None
    assert (two / "logs" / "trainer-rank1.log").is_file()
    assert not list(two.glob("logs/trainer-rank0*"))

    # A checkpoint of two processes (step 3) resumes in one: steps 4-6 as the single run had them.
    assert (two / "checkpoints" / "step-3").is_dir()
    assert train(two, resume=True, verbose=False) == st.DONE
    assert Run(two).status()["resumed_from"] == 3
    assert [step for step, _ in _curve(two)] == list(range(1, 7))
    assert [x for _, x in _curve(two)] == pytest.approx([x for _, x in _curve(one)], rel=1e-4)


def test_cancel_stops_both_processes_at_the_same_step(make_run):
    """The cancel file reaches both processes; they agree, stop together (none is left waiting)
    and process 0 saves the adapter."""
    import threading
    import time

    from trainer.engine.launcher import launch

    run_dir = make_run("cancel", max_steps=400, eval_every=1000, save_every=1000, device="cpu", num_samples=0)
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    codes: list[int] = []
    worker = threading.Thread(target=lambda: codes.append(launch(run_dir, 2, env=env)), daemon=True)
    worker.start()
    deadline = time.time() + 180
    while time.time() < deadline and st.read_status(run_dir).get("step", 0) < 2 and worker.is_alive():
        time.sleep(0.2)
    st.request_cancel(run_dir)
    worker.join(timeout=120)
    assert not worker.is_alive() and codes == [3]   # process 0's "cancelled"
    s = Run(run_dir).status()
    assert s["state"] == st.CANCELLED and 2 <= s["step"] < 400
    assert (run_dir / "adapter" / "adapter_model.safetensors").is_file()
    assert "Run failed" not in (run_dir / "logs" / "trainer-rank1.log").read_text()


def test_a_failed_follower_is_named_in_status(tmp_path):
    from trainer.engine.launcher import _record_failure

    (tmp_path / "logs").mkdir()
    st.write_json_atomic(tmp_path / "status.json", {"state": st.TRAINING, "step": 4})
    (tmp_path / "logs" / "trainer-rank1.log").write_text(
        "INFO start\nERROR dragonfarm: Run failed: The computer ran out of memory while training.\nTraceback...\n")
    words = _record_failure(tmp_path, 1, 1)
    assert words and "process 1" in words and "ran out of memory" in words and "trainer-rank1.log" in words
    s = st.read_status(tmp_path)
    assert s["state"] == st.FAILED and s["error"] == words and s["step"] == 4
    st.write_json_atomic(tmp_path / "status.json", {"state": st.DONE})
    assert _record_failure(tmp_path, 1, 1) is None and st.read_status(tmp_path)["state"] == st.DONE
    st.write_json_atomic(tmp_path / "status.json", {"state": st.FAILED, "error": "The computer ran out of memory "
                                                    "while training."})
    assert _record_failure(tmp_path, 1, 1) is None   # process 0 said the same itself


@pytest.mark.parametrize("who_fails", [0, 1])
def test_when_one_process_fails_the_launcher_stops_the_others(monkeypatch, who_fails):
    """A process left waiting for a dead partner would wait forever: the launcher ends it."""
    import subprocess
    import sys
    import time

    from trainer.engine import launcher

    monkeypatch.setattr(launcher, "GRACE_S", 0.3)
    monkeypatch.setattr(launcher, "KILL_AFTER_S", 1.0)
    fail = [sys.executable, "-c", "import sys, time; time.sleep(0.3); sys.exit(1)"]
    hang = [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"]
    procs = [subprocess.Popen(fail if rank == who_fails else hang) for rank in range(2)]
    started = time.monotonic()
    codes, first = launcher._watch(procs)
    assert first == who_fails and codes[who_fails] == 1 and codes[1 - who_fails] != 0
    assert time.monotonic() - started < 20
