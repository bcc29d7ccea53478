"""PySide6 6.12.0 on Python < 3.12 drops a reference to None/True/False on every
void call and the app dies within seconds; pyproject.toml keeps it out. This
guards the Qt we install against a release with the same bug."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
from PySide6.QtGui import QGuiApplication, QImage, QPainter
app = QGuiApplication([])
img = QImage(8, 8, QImage.Format.Format_ARGB32)
p = QPainter(img)
for _ in range(50_000):
    p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
p.end()
from PySide6.QtCore import QObject, Signal
class O(QObject):
    changed = Signal(bool)
o = O()
o.changed.connect(lambda v: None)
for _ in range(50_000):
    o.changed.emit(True)
    o.changed.emit(False)
print("alive")
"""


def test_many_void_qt_calls_do_not_kill_the_app():
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr[-1000:]
    assert out.stdout.strip() == "alive"
