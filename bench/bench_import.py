"""How data import scales: a CSV of a million rows, streamed.

    python bench/bench_import.py [--rows 1000000] [--tracemalloc] [--keep DIR]

Generates a CSV (prompt, completion; a duplicate every 500 rows and an empty
reply every 1,000) and runs three phases, each in a fresh process so its peak
memory is its own:

  preview   inspect_file(limit=1000): what the wizard shows first
  inspect   inspect_file(): every row checked and counted
  new       create_run(): check + split + write the run folder

For each: wall time, the process's peak resident memory and how much it grew
over the same process just after importing (the part the data costs), and with
--tracemalloc the peak Python allocation (slower; times are then not comparable).
Figures, not pass/fail.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORDS = ("the ship sails at dawn with a crew of seven and a cargo of tea for the old port town "
         "where lanterns glow and gulls cry over grey water").split()


def make_csv(path: Path, rows: int) -> None:
    rng = random.Random()
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write("prompt,completion\n")
        for i in range(rows):
            if i % 1000 == 999:
                fh.write(f"Question {i}?,\n")  # an empty reply: one error per thousand rows
                continue
            n = i - 1 if i % 500 == 1 else i     # a duplicate every 500 rows
            rng.seed(n)
            prompt = f"Question {n}: " + " ".join(rng.choices(WORDS, k=8)) + "?"
            reply = f"Answer {n}: " + " ".join(rng.choices(WORDS, k=14)) + "."
            fh.write(f"{prompt},{reply}\n")


def _rss_mib() -> float:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


def run_phase(phase: str, data: Path, out: Path, traced: bool) -> dict:
    """In the child process: one phase, measured."""
    sys.path.insert(0, str(ROOT))
    from trainer.dataimport import create_run, inspect_file

    base = _rss_mib()
    if traced:
        import tracemalloc
        tracemalloc.start()
    t0 = time.perf_counter()
    if phase == "preview":
        r = inspect_file(data, limit=1000)
        info = f"{len(r.preview)} chats previewed, shape {r.shape}"
    elif phase == "inspect":
        r = inspect_file(data)
        c = r.counts
        info = (f"rows {c.rows:,}, usable {c.usable:,}, duplicates {c.duplicates:,}, skipped {c.skipped:,}, "
                f"problems {r.problems_total:,} ({len(r.problems)} kept)")
    else:
        run = create_run(data, runs_dir=out)
        imp = json.loads((run / "data" / "import.json").read_text())
        info = (f"train {imp['split']['train']:,}, eval {imp['split']['eval']:,}; "
                f"train.jsonl {(run / 'data' / 'train.jsonl').stat().st_size / 2**20:.0f} MiB")
    result = {"seconds": time.perf_counter() - t0, "rss_mib": _rss_mib(), "base_mib": base, "info": info}
    if traced:
        result["traced_peak_mib"] = tracemalloc.get_traced_memory()[1] / 2**20
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--tracemalloc", action="store_true", help="also measure peak Python allocations (slower)")
    parser.add_argument("--keep", help="folder to keep the CSV and run in (default: a temp folder)")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(run_phase(args.phase, Path(args.data), Path(args.keep), args.tracemalloc)))
        return
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="df-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / f"rows-{args.rows}.csv"
    t0 = time.perf_counter()
    make_csv(data, args.rows)
    print(f"{data.name}: {args.rows:,} rows, {os.path.getsize(data) / 2**20:.0f} MiB, "
          f"made in {time.perf_counter() - t0:.1f} s")
    for phase in ("preview", "inspect", "new"):
        cmd = [sys.executable, __file__, "--phase", phase, "--data", str(data), "--keep", str(folder / "runs")]
        cmd += ["--tracemalloc"] if args.tracemalloc else []
        r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines()[-1])
        traced = f", Python peak {r['traced_peak_mib']:.1f} MiB" if "traced_peak_mib" in r else ""
        print(f"{phase:<8} {r['seconds']:7.2f} s   peak RSS {r['rss_mib']:5.0f} MiB "
              f"(+{r['rss_mib'] - r['base_mib']:.0f} over the bare process){traced}\n         {r['info']}",
              flush=True)
    if not args.keep:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
