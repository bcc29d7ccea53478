"""Two trainers started at the same instant on one run folder: exactly one
trains, the other exits at once with a plain message (the trainer lock)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trainer.run import status as st
from trainer.run.reader import Run

ROOT = Path(__file__).resolve().parents[2]

# Both processes import everything first, then wait for the same wall-clock instant.
START_AT = """
import sys, time
from trainer.cli import main
time.sleep(max(0.0, float(sys.argv[1]) - time.time()))
sys.exit(main(["train", sys.argv[2]]))
"""


@pytest.mark.slow  # two processes load torch and one trains: ~2 minutes on a busy 2-core machine
def test_two_trainers_at_the_same_instant_only_one_trains(tiny_run_dir):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    at = time.time() + 4.0
    procs = [subprocess.Popen([sys.executable, "-c", START_AT, repr(at), str(tiny_run_dir)], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        results.append((proc.returncode, out, err))
    codes = sorted(code for code, _out, _err in results)
    assert codes == [0, 2], results
    _code, out, err = next(r for r in results if r[0] == 2)
    assert "already training in another process" in err and "Traceback" not in err + out
    assert Run(tiny_run_dir).state == st.DONE
    steps = [json.loads(line)["step"] for line in (tiny_run_dir / "progress.jsonl").read_text().splitlines()
             if "loss" in json.loads(line)]
    assert steps == sorted(set(steps)) and steps[0] == 1  # one trainer's steps, once each
    assert Run(tiny_run_dir).status()["live"] is False  # the winner let go of the lock when it ended
