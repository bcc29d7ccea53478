"""`dragonfarm gui`: open the desktop app. PySide6 is imported only when the
command runs, so the rest of the command line never loads Qt."""
from __future__ import annotations

import argparse


def cmd_gui(args: argparse.Namespace) -> int:
    try:
        from dragonfarm_gui.app import main
    except ImportError as exc:
        from trainer.run.errors import UserError

        raise UserError(f"The desktop app is not installed here ({exc}).",
                        "Install DragonFarm with its app: pip install dragonfarm") from None
    return int(main(["dragonfarm"]) or 0)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gui", help="open the DragonFarm desktop app")
    p.set_defaults(func=cmd_gui)
