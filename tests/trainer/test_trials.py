"""Trials on the tiny model: killed at random points, out of disk, out of memory.

A trainer is killed with SIGKILL at 10 points chosen at random (seeded) among
checkpoint writes, adapter saves and evaluations; each resume must finish with
the same adapter files as an uninterrupted run and status "done". A disk-full
checkpoint write must leave the last checkpoint usable and say so plainly; an
out-of-memory step must advise a smaller batch, a shorter maximum length or a
smaller model.
"""
from __future__ import annotations

import errno
import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from dfhelpers import example_chats, write_run
from trainer.engine.loop import train
from trainer.run import status as st
from trainer.run.reader import Run

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
SETTINGS = dict(max_steps=8, save_every=2, eval_every=2, num_samples=1, sample_max_new_tokens=4, precision="fp32")

# The trainer run in a child process that kills itself (SIGKILL: no cleanup at all)
# just before or just after the Nth call of one function.
KILLER = '''
import os, signal, sys
import torch
torch.set_num_threads(1)
from trainer.engine import checkpoint, evaluation, loop
module, attr, nth, when = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
target = {"checkpoint": checkpoint, "evaluation": evaluation, "loop": loop}[module]
original, calls = getattr(target, attr), [0]
def wrapped(*args, **kwargs):
    calls[0] += 1
    if calls[0] == nth and when == "before":
        os.kill(os.getpid(), signal.SIGKILL)
    result = original(*args, **kwargs)
    if calls[0] == nth and when == "after":
        os.kill(os.getpid(), signal.SIGKILL)
    return result
setattr(target, attr, wrapped)
loop.train(sys.argv[1], verbose=False)
sys.exit(3)  # never reached when the kill point was
'''

# (module, function, which calls) whose "before" and "after" leave at least the first checkpoint
# (step 2) complete. In an 8-step run: training state and swap_in write checkpoints at steps 2, 4
# and 6 (swap_in's 4th call puts the adapter in place), eval_loss (called through the loop's process
# group) runs at steps 0, 2, 4, 6 and 8.
POINTS = [("checkpoint", "write_training_state", (2, 3)), ("checkpoint", "swap_in", (2, 3, 4)),
          ("evaluation", "eval_loss", (3, 4, 5)), ("loop", "save_adapter", (1,)), ("loop", "save_checkpoint", (2, 3))]


def kill_points(count: int, seed: int = 9) -> list[tuple[str, str, int, str]]:
    rng = random.Random(seed)
    every = [(m, f, n, w) for m, f, ns in POINTS for n in ns for w in ("before", "after")]
    return rng.sample(every, count)


@pytest.fixture(scope="module")
def reference(tmp_path_factory, tiny_model_dir) -> set[str]:
    """The adapter files of an uninterrupted run."""
    import torch

    torch.set_num_threads(2)
    run_dir = write_run(tmp_path_factory.mktemp("ref") / "ref", str(tiny_model_dir), example_chats(8),
                        example_chats(4, 100), **SETTINGS)
    assert train(run_dir, verbose=False) == st.DONE
    return {p.name for p in (run_dir / "adapter").iterdir()}


def test_killed_at_ten_random_points_every_resume_finishes(tmp_path, tiny_model_dir, reference):
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    results = []
    for i, (module, attr, nth, when) in enumerate(kill_points(10)):
        run_dir = write_run(tmp_path / f"kill-{i}", str(tiny_model_dir), example_chats(8), example_chats(4, 100),
                            **SETTINGS)
        proc = subprocess.run([sys.executable, "-c", KILLER, str(run_dir), module, attr, str(nth), when],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        point = f"{attr} #{nth} {when}"
        assert proc.returncode == -signal.SIGKILL, f"{point}: not killed ({proc.returncode}): {proc.stderr[-2000:]}"
        assert train(run_dir, resume=True, verbose=False) == st.DONE, (point, Run(run_dir).status().get("error"))
        status = Run(run_dir).status()
        names = {p.name for p in (run_dir / "adapter").iterdir()}
        leftovers = [p.name for p in run_dir.rglob("*") if p.name.endswith((".partial", ".replaced", ".removing"))]
        results.append((point, status["state"], status["step"], names == reference, leftovers))
    print("\n".join(map(str, results)))
    assert [r for r in results if r[1:] != (st.DONE, 8, True, [])] == []


def test_disk_full_during_a_checkpoint_keeps_the_last_one_usable(make_run, monkeypatch):
    from trainer.engine import checkpoint

    run_dir = make_run("full", n_train=8, n_eval=4, **SETTINGS)
    original, calls = checkpoint.write_training_state, [0]

    def full_disk(folder, *args):
        calls[0] += 1
        if calls[0] == 2:
            (folder / "training_state.safetensors").write_bytes(b"half")  # half a file, then no space
            raise OSError(errno.ENOSPC, "No space left on device")
        return original(folder, *args)

    monkeypatch.setattr(checkpoint, "write_training_state", full_disk)
    assert train(run_dir, verbose=False) == st.FAILED
    status = Run(run_dir).status()
    assert status["state"] == st.FAILED and status["error"].startswith("The disk is full.")
    assert "Traceback" not in status["error"]
    assert checkpoint.latest_checkpoint(run_dir).name == "step-2"
    assert [p.name for p in (run_dir / "checkpoints").iterdir()] == ["step-2"]  # the half-written one is gone
    monkeypatch.setattr(checkpoint, "write_training_state", original)
    assert train(run_dir, resume=True, verbose=False) == st.DONE
    assert Run(run_dir).status()["resumed_from"] == 2


@pytest.mark.parametrize("error", ["OutOfMemoryError", "RuntimeError"])
def test_out_of_memory_gives_advice(make_run, monkeypatch, error):
    import torch

    from trainer.engine import loop

    run_dir = make_run("oom", n_train=8, n_eval=4, **SETTINGS)
    original, calls = loop.summed_loss, [0]

    def oom(*args, **kwargs):
        calls[0] += 1
        if calls[0] == 3:
            if error == "OutOfMemoryError":
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
            raise RuntimeError("MPS backend out of memory (MPS allocated: 9.1 GB)")
        return original(*args, **kwargs)

    monkeypatch.setattr(loop, "summed_loss", oom)
    assert train(run_dir, verbose=False) == st.FAILED
    text = Run(run_dir).status()["error"]
    assert "ran out of memory" in text
    for advice in ("batch size", "maximum length", "smaller model"):
        assert advice in text
    assert json.loads((run_dir / "status.json").read_text())["error_detail"].startswith(error)
