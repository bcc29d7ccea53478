"""Show the main window in a light or a dark palette, with a finished and a
failed run, for looking at the theme (and for screenshots/main-window-*.png).

    python scripts/theme_preview.py light|dark [--select done|failed] [--wizard FILE] [--quit-after 8]

Makes a runs folder in a temporary directory with tests/gui/fake_trainer.py
(a finished run with a loss curve and samples, and a failed run), forces a
Fusion palette of the chosen kind, and starts the app's main window on it.
Under Xvfb: xvfb-run -s "-screen 0 1280x860x24" python scripts/theme_preview.py dark
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FAKE = ROOT / "tests" / "gui" / "fake_trainer.py"


def make_runs(runs: Path) -> tuple[Path, Path]:
    from trainer.dataimport import create_run

    data = ROOT / "tests" / "gui" / "fixtures" / "support.csv"
    done = create_run(data, runs_dir=runs, name="support-replies", config_overrides={"epochs": 3})
    failed = create_run(data, runs_dir=runs, name="support-bigger-model", model="Qwen/Qwen2.5-1.5B-Instruct")
    env = {**os.environ, "FAKE_STEPS": "60", "FAKE_DELAY": "0"}
    subprocess.run([sys.executable, str(FAKE), "-m", "trainer", "train", str(done)], env=env, check=True)
    env["FAKE_FAIL"] = "The GPU ran out of memory. Lower the batch size or the max length in Advanced settings."
    subprocess.run([sys.executable, str(FAKE), "-m", "trainer", "train", str(failed)], env=env, check=False)  # it fails on purpose
    return done, failed


def palette(dark: bool):
    from PySide6.QtGui import QColor, QPalette

    p = QPalette()
    if not dark:
        return p
    roles = {"Window": "#2b2b2b", "WindowText": "#e8e8e8", "Base": "#1f1f1f", "AlternateBase": "#2a2a2a",
             "Text": "#e8e8e8", "Button": "#353535", "ButtonText": "#e8e8e8", "ToolTipBase": "#353535",
             "ToolTipText": "#e8e8e8", "Highlight": "#2f6fb0", "HighlightedText": "#ffffff",
             "PlaceholderText": "#9a9a9a", "Link": "#8ab4f8", "BrightText": "#ff6b6b"}
    for role, color in roles.items():
        p.setColor(getattr(QPalette.ColorRole, role), QColor(color))
    for role in ("WindowText", "Text", "ButtonText"):
        p.setColor(QPalette.ColorGroup.Disabled, getattr(QPalette.ColorRole, role), QColor("#7a7a7a"))
    return p


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=("light", "dark"))
    parser.add_argument("--quit-after", type=float, default=0, help="seconds, 0 = stay open")
    parser.add_argument("--select", choices=("done", "failed"), default="done")
    parser.add_argument("--wizard", metavar="FILE", help="also open the new-run wizard on this data file")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="df-theme-"))
    runs = tmp / "runs"
    done, failed = make_runs(runs)
    os.environ["DRAGONFARM_RUNS_DIR"] = str(runs)
    os.environ.setdefault("DRAGONFARM_CONFIG_DIR", str(tmp / "config"))

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QStyleFactory

    app = QApplication(sys.argv[:1])
    app.setStyle(QStyleFactory.create("Fusion"))
    app.setPalette(palette(args.kind == "dark"))
    from dragonfarm_gui.app import make_app
    from dragonfarm_gui.widgets.main_window import MainWindow

    make_app([])
    window = MainWindow()
    window.resize(1280, 860)
    window.show()
    window.start()
    QTimer.singleShot(2500, lambda: window.run_list.select_path(str(done if args.select == "done" else failed)))
    if args.wizard:
        from dragonfarm_gui.wizard.new_run_wizard import NewRunWizard

        wizard = NewRunWizard(runs, parent=window)
        wizard.move(0, 0)
        wizard.show()
        wizard.data_page.set_file(args.wizard)
    if args.quit_after:
        QTimer.singleShot(int(args.quit_after * 1000), lambda: (window.shutdown(), app.quit()))
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
