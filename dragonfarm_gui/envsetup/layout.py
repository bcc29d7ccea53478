"""Where the managed trainer environment and its helpers live, and where the
app finds `uv`, the trainer's sources and the pinned requirements.

One helper for source checkouts and the frozen app (PyInstaller puts data
files under sys._MEIPASS); never paths relative to the working directory.
"""
from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from trainer.run import launch

PYTHON_VERSION = "3.11"
UV_ENV = "DRAGONFARM_UV"
BASE_PYTHON_ENV = "DRAGONFARM_BASE_PYTHON"   # skip `uv python install`, use this Python
REQUIREMENTS_NAME = "requirements-trainer.txt"


def _bundle_dir() -> Path | None:
    frozen = getattr(sys, "_MEIPASS", None)
    return Path(frozen) if frozen else None


def source_root() -> Path:
    """The repository root when running from source (holds trainer/, packaging/)."""
    return Path(__file__).resolve().parents[2]


def trainer_sources_dir() -> Path:
    """A folder holding `trainer/` (with its resources/) to copy into the environment:
    `trainer_src/` inside the frozen bundle, else the source checkout."""
    if _bundle_dir() and (launch.bundled_trainer_dir() / "trainer").is_dir():
        return launch.bundled_trainer_dir()
    return source_root()


def requirements_file() -> Path:
    bundle = _bundle_dir()
    if bundle and (bundle / "packaging" / REQUIREMENTS_NAME).is_file():
        return bundle / "packaging" / REQUIREMENTS_NAME
    return source_root() / "packaging" / REQUIREMENTS_NAME


def find_uv(environ: dict[str, str] | None = None) -> Path | None:
    """DRAGONFARM_UV, else the uv shipped in the frozen bundle, else uv on PATH,
    else the uv beside this interpreter (a venv with the `uv` package)."""
    environ = os.environ if environ is None else environ
    exe = "uv.exe" if os.name == "nt" else "uv"
    if environ.get(UV_ENV):
        return Path(environ[UV_ENV])
    bundle = _bundle_dir()
    if bundle and (bundle / "uv" / exe).is_file():
        return bundle / "uv" / exe
    found = shutil.which("uv", path=environ.get("PATH"))
    if found:
        return Path(found)
    beside = Path(sys.executable).parent / exe
    return beside if beside.is_file() else None


@dataclass(frozen=True)
class EnvLayout:
    """The managed environment's folders, all under one short per-user base
    (Windows' 260-character path limit breaks deep torch installs)."""

    env_dir: Path

    @classmethod
    def default(cls) -> "EnvLayout":
        return cls(launch.managed_env_dir())

    @property
    def base(self) -> Path:
        return self.env_dir.parent

    @property
    def staging_dir(self) -> Path:
        return self.env_dir.with_name(self.env_dir.name + "-staging")

    @property
    def old_dir(self) -> Path:
        return self.env_dir.with_name(self.env_dir.name + "-old")

    @property
    def python_dir(self) -> Path:
        return self.base / "python"

    @property
    def cache_dir(self) -> Path:
        return self.base / "uv-cache"

    @property
    def log_file(self) -> Path:
        return self.base / "setup.log"

    @property
    def marker(self) -> Path:
        return self.env_dir / launch.ENV_MARKER

    def staging_python(self) -> Path:
        return launch.managed_env_python(self.staging_dir)

    def site_packages(self, env_dir: Path) -> Path:
        if os.name == "nt":
            return env_dir / "Lib" / "site-packages"
        return env_dir / "lib" / f"python{PYTHON_VERSION}" / "site-packages"

    def uv_environment(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """Environment for every uv call: our own Python and cache folders, no
        user or project uv configuration, and no frozen-app library paths."""
        env = launch.clean_child_env(dict(os.environ if base is None else base))
        env.update({
            "UV_PYTHON_INSTALL_DIR": str(self.python_dir),
            "UV_CACHE_DIR": str(self.cache_dir),
            "UV_NO_CONFIG": "1",
            "UV_PYTHON_PREFERENCE": "system" if env.get(BASE_PYTHON_ENV) else "only-managed",
            "UV_NO_PROGRESS": "1",
            "NO_COLOR": "1",
            "PYTHONUTF8": "1",
        })
        for key in ("VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH", "PYTHONHOME"):
            env.pop(key, None)
        return env
