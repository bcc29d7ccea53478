"""How soon a new progress.jsonl line reaches the run page's loss plot
(a figure, not pass/fail; the target is under 0.5 s).

    python bench/bench_gui_follow.py [--lines 60] [--interval-ms 97]

Runs the real run page offscreen on a temporary run folder, appends one
training line at a time as the trainer does, and times each line from the
write to the plot holding it: once with the file watcher (the normal case) and
once with only the fallback timer (file systems whose watchers miss events).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def measure(lines: int, interval_ms: int, use_watcher: bool) -> list[float]:
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from dragonfarm_gui.process import follower as follower_mod
    from dragonfarm_gui.widgets.run_page import RunPage
    from trainer.run.config import TrainConfig

    app = QApplication.instance() or QApplication([])
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "bench-run"
        TrainConfig(name="bench-run").save(run)
        (run / "progress.jsonl").write_text("")
        original = follower_mod.RunFollower.__init__

        def init(self, run_dir, parent=None, *, use_watcher_=use_watcher):
            original(self, run_dir, parent, use_watcher=use_watcher_)

        follower_mod.RunFollower.__init__ = init
        page = RunPage()
        page.resize(900, 700)
        page.show()
        page.show_run(run)
        written: dict[int, float] = {}
        seen: dict[int, float] = {}
        add = page.plot.add_records

        def timed_add(records):
            add(records)
            now = time.perf_counter()
            for r in records:
                seen.setdefault(r["step"], now)

        page.plot.add_records = timed_add  # RunPage._on_records calls self.plot.add_records
        step = [0]

        def write():
            step[0] += 1
            record = {"step": step[0], "epoch": step[0] / lines, "loss": 3.0 - step[0] / lines, "learning_rate": 1e-4,
                      "tokens_per_second": 900.0, "elapsed_s": step[0], "eta_s": lines - step[0], "time": time.time()}
            with open(run / "progress.jsonl", "a", encoding="utf-8") as fh:
                fh.write(json.dumps(record) + "\n")
                fh.flush()
                written[step[0]] = time.perf_counter()
            if step[0] >= lines:
                timer.stop()
                QTimer.singleShot(1500, app.quit)

        timer = QTimer(page)
        timer.setInterval(interval_ms)
        timer.timeout.connect(write)
        timer.start()
        app.exec()
        page.stop_following()
        page.close()
        page.deleteLater()
        app.processEvents()
        follower_mod.RunFollower.__init__ = original
        return [seen[s] - written[s] for s in written if s in seen]


def report(name: str, lat: list[float], lines: int) -> None:
    lat = sorted(lat)
    p95 = lat[max(0, int(round(0.95 * len(lat))) - 1)]
    print(f"{name}: {len(lat)}/{lines} lines drawn; median {statistics.median(lat) * 1000:.1f} ms, "
          f"p95 {p95 * 1000:.1f} ms, max {lat[-1] * 1000:.1f} ms "
          f"-> {'under' if lat[-1] < 0.5 else 'OVER'} 0.5 s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=60)
    parser.add_argument("--interval-ms", type=int, default=97)
    args = parser.parse_args()
    report("With the file watcher", measure(args.lines, args.interval_ms, True), args.lines)
    report("Fallback timer only  ", measure(args.lines, args.interval_ms, False), args.lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
