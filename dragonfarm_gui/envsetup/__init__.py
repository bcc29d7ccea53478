"""First-use setup of the managed trainer environment (uv, a uv-managed
Python, the torch build that fits the machine, the pinned libraries and the
trainer), its Repair, and the frozen app's self-test.

Logic modules (torch_index, layout, steps, runner, selftest) have no Qt; the
one dialog is in dialog.py. Entry point for the app and Settings:
`dragonfarm_gui.envsetup.dialog.open_setup_dialog(parent, repair=False) -> bool`.
"""

__all__ = ["open_setup_dialog", "EnvSetupDialog", "run_self_test"]


def __getattr__(name: str):
    """Lazy exports, so the logic modules and the command line never load Qt."""
    if name in ("open_setup_dialog", "EnvSetupDialog"):
        from . import dialog

        return getattr(dialog, name)
    if name == "run_self_test":
        from .selftest import run_self_test

        return run_self_test
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
