"""`python -m dragonfarm_gui.envsetup [--env-dir DIR] [--torch-index X]`: the
first-use setup without a window (scripts, support, the opt-in real-setup test)."""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dragonfarm_gui.envsetup",
                                     description="Set up DragonFarm's training environment.")
    parser.add_argument("--env-dir", help="where the environment goes (default: the per-user folder)")
    parser.add_argument("--torch-index", help="'auto', '' for the default index, a build (cpu, cu126) or a URL")
    parser.add_argument("--uv", help="the uv program to use")
    parser.add_argument("--dry-run", action="store_true", help="print the steps and stop")
    args = parser.parse_args(argv)
    if args.env_dir:
        os.environ["DRAGONFARM_ENV_DIR"] = str(Path(args.env_dir).resolve())
    if args.torch_index is not None:
        os.environ["DRAGONFARM_TORCH_INDEX"] = args.torch_index

    from .runner import Progress, SetupRunner
    from .steps import SetupError, build_steps, make_context

    try:
        ctx = make_context(uv=Path(args.uv) if args.uv else None)
    except SetupError as exc:
        print(f"setup: {exc}", file=sys.stderr)
        return 2
    print(f"torch: {ctx.choice.reason} (index: {ctx.choice.index_url or 'default'})")
    if args.dry_run:
        for number, step in enumerate(build_steps(ctx), 1):
            print(f"{number}. {step.title}: {step.describe().splitlines()[0]}")
        return 0

    def show(progress: Progress) -> None:
        if progress.line is None:
            print(f"[{progress.index}/{progress.total}] {progress.title}", flush=True)
        else:
            print("    " + progress.line, flush=True)

    start = time.monotonic()
    result = SetupRunner(ctx, show).run()
    print(("done: " if result.ok else "failed: ") + result.message)
    print(f"time: {time.monotonic() - start:.0f} s; environment: {ctx.layout.env_dir}")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
