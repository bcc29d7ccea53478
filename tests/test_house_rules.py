"""The house rules from pyproject.toml: ruff (style, likely bugs) and
import-linter (which part may import which; no torch in the app or the run
contract; no Qt in the trainer; no import cycles). Run here so the README's
test command and CI enforce them; a failure shows the tool's own report."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    """The tool installed beside this Python (the test extra), never another one on PATH."""
    folder = Path(sys.executable).parent
    for candidate in (folder / name, folder / f"{name}.exe"):
        if candidate.is_file():
            return str(candidate)
    found = shutil.which(name, path=str(folder))
    if found:
        return found
    pytest.fail(f"{name} is not installed next to {sys.executable}; install the test extra: "
                f"pip install -e '.[test]'")


def _run(args: list[str]) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_ruff_finds_nothing():
    out = _run([_tool("ruff"), "check", "--no-cache", "--output-format", "concise", "."])
    assert out.returncode == 0, f"ruff check . found problems:\n{out.stdout}{out.stderr}"


def test_import_contracts_are_kept():
    out = _run([_tool("lint-imports"), "--no-cache"])
    assert out.returncode == 0, f"lint-imports broke a contract:\n{out.stdout[-6000:]}{out.stderr[-2000:]}"
    assert "0 broken" in out.stdout
