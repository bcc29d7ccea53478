"""The frozen app, built with PyInstaller and started with --self-test.
Slow (about 40-50 s here: 35-45 s build, 2-3 s self-test) and needs PyInstaller:
    python -m pytest tests/packaging -m slow
The same as `bash packaging/build_and_selftest.sh`."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_frozen_app_self_test():
    pytest.importorskip("PyInstaller")
    if os.name == "nt":
        pytest.skip("the script is bash; CI runs the Windows self-test in release.yml")
    env = dict(os.environ, PYTHON=sys.executable, SKIP_INSTALL="1")
    done = subprocess.run(["bash", str(ROOT / "packaging" / "build_and_selftest.sh")], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=880)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "self-test PASS: device check" in done.stdout
    assert "self-test PASS: no torch in the app" in done.stdout
