"""First-use setup of the managed trainer environment (uv, a uv-managed
Python, the torch build that fits the machine, the pinned libraries and the
trainer), its Repair, and the frozen app's self-test.

Logic modules (torch_index, layout, steps, runner, selftest) have no Qt; the
one dialog is in dialog.py. Entry point for the app and Settings:
`dragonfarm_gui.envsetup.dialog.open_setup_dialog(parent, repair=False) -> bool`.
"""
