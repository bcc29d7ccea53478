"""The app never imports torch, transformers, peft or accelerate (checked in a
fresh process, after importing every module and showing the window).

The static side (no such import anywhere in the app's sources, including ones
inside functions) is an import-linter contract in pyproject.toml, checked by
tests/test_house_rules.py; this test catches what only shows at run time."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import pkgutil, importlib, sys
import dragonfarm_gui
from PySide6.QtCore import QTimer
from dragonfarm_gui.app import make_app
app = make_app([])
for mod in pkgutil.walk_packages(dragonfarm_gui.__path__, "dragonfarm_gui."):
    if ".envsetup" in mod.name or mod.name.endswith("__main__"):  # envsetup: tested with packaging
        continue
    importlib.import_module(mod.name)
from dragonfarm_gui.widgets.main_window import MainWindow
from dragonfarm_gui.wizard.new_run_wizard import NewRunWizard
w = MainWindow(); w.show(); w.start()
wiz = NewRunWizard(w.runs_dir); wiz.show()
w.ensure_run_page()
QTimer.singleShot(200, app.quit); app.exec()
w.shutdown()
bad = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "transformers", "peft", "accelerate"))
print("HEAVY:", ",".join(bad))
"""


def test_app_never_imports_torch(tmp_path):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", DRAGONFARM_CONFIG_DIR=str(tmp_path),
               DRAGONFARM_RUNS_DIR=str(tmp_path / "runs"))
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "HEAVY: \n" in out.stdout or out.stdout.strip().endswith("HEAVY:"), out.stdout

