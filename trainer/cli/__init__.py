"""The `dragonfarm` command line. Each area registers its own sub-commands.

Problems a person can fix print as a short message (exit 2); anything else
prints one line and points at the log, with the traceback under --debug.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback

from trainer import __version__
from trainer.run.config import ConfigError
from trainer.run.errors import UserError

# Modules with a register(subparsers) function, in the order of `--help`.
COMMAND_MODULES = (
    "trainer.cli.train",
    "trainer.cli.data",
    "trainer.cli.result",
    "trainer.cli.gui",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dragonfarm",
        description="Fine-tune a small language model on your own examples.",
    )
    parser.add_argument("--version", action="version", version=f"DragonFarm {__version__}")
    parser.add_argument("--debug", action="store_true", help="show full tracebacks")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 1
    try:
        result = args.func(args)
        return int(result or 0)
    except (UserError, ConfigError) as exc:
        print(f"dragonfarm: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("dragonfarm: stopped.", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`dragonfarm inspect FILE | head`): stop quietly.
        _silence_stdout()
        return 141  # 128 + SIGPIPE, what a shell reports for a program stopped by a closed pipe
    except Exception as exc:  # noqa: BLE001 - the last line of defence for the person
        if args.debug:
            traceback.print_exc()
        print(f"dragonfarm: something went wrong: {type(exc).__name__}: {exc}\n"
              "Run again with --debug for the details, or see the run's logs/trainer.log.", file=sys.stderr)
        return 1


def _silence_stdout() -> None:
    """Point stdout at the null device, so Python's last flush at exit does not
    fail again on the closed pipe and print "Exception ignored..."."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
