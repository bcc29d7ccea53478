"""How fast the desktop app shows its window: from starting `python -m
dragonfarm_gui` to the main window's first paint (a figure, not pass/fail).

    python bench/bench_gui_startup.py [--runs 5] [--platform offscreen|xcb]

The first run is the cold one (Python's and Qt's files not yet in the disk
cache, unless something else just loaded them); the rest are warm.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def one_start(platform: str, config: str) -> float:
    env = dict(os.environ, DRAGONFARM_GUI_BENCH="1", DRAGONFARM_CONFIG_DIR=config,
               DRAGONFARM_RUNS_DIR=str(Path(config) / "runs"))
    if platform:
        env["QT_QPA_PLATFORM"] = platform
    t0 = time.time()
    out = subprocess.run([sys.executable, "-m", "dragonfarm_gui"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=60)
    for line in out.stdout.splitlines():
        if line.startswith("DRAGONFARM_SHOWN "):
            return float(line.split()[1]) - t0
    raise RuntimeError(f"the app did not report its first paint:\n{out.stderr[-2000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--platform", default=os.environ.get("QT_QPA_PLATFORM", "offscreen"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as config:
        times = [one_start(args.platform, config) for _ in range(args.runs)]
    warm = times[1:] or times
    print(f"Window shown (process start to first paint, QT_QPA_PLATFORM={args.platform}):")
    print(f"  cold (first run): {times[0] * 1000:.0f} ms")
    print(f"  warm median of {len(warm)}: {statistics.median(warm) * 1000:.0f} ms "
          f"(min {min(warm) * 1000:.0f}, max {max(warm) * 1000:.0f})")
    print(f"  target: under 1000 ms -> {'met' if max(times) < 1.0 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
