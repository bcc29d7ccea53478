"""Which Python runs the trainer, the command line that starts it, and the
detached start itself.

Standard library only. Order (DESIGN.md): DRAGONFARM_PYTHON; else, from
source, the current interpreter; else, in the frozen app, the managed
environment made on first use. `start_detached` starts the trainer in a
session (POSIX) or process group without a console (Windows) of its own, so
it outlives the app, with an explicit environment and its output in the
run's logs/launcher.log; the caller's own environment and file descriptors
are never touched.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# Windows process creation flags (subprocess has them only on Windows).
DETACHED_PROCESS = 0x00000008          # no console: the trainer survives the app and its console
CREATE_NEW_PROCESS_GROUP = 0x00000200  # Ctrl+C/Ctrl+Break aimed at the app do not reach the trainer


ENV_MARKER = "dragonfarm-env.json"
KEEP_AWAKE_ENV = "DRAGONFARM_KEEP_AWAKE"   # "0": the trainer lets the computer sleep (the app's setting)


class NoTrainerPython(RuntimeError):
    """The frozen app has no trainer environment yet (first use)."""


def is_frozen() -> bool:
    return bool(getattr(sys, "frozen", False))


def bundled_trainer_dir() -> Path:
    """In the frozen app: the folder holding the trainer's sources and resources
    (PyInstaller's sys._MEIPASS/trainer_src)."""
    return Path(getattr(sys, "_MEIPASS", Path(sys.executable).parent)) / "trainer_src"


def managed_env_dir() -> Path:
    """Short per-user path for the managed environment (Windows path limits)."""
    override = os.environ.get("DRAGONFARM_ENV_DIR")
    if override:
        return Path(override)
    if os.name == "nt":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
        return base / "DragonFarm" / "env"
    from platformdirs import user_data_dir

    return Path(user_data_dir("DragonFarm", appauthor=False)) / "env"


def managed_env_python(env_dir: Path | None = None) -> Path:
    env_dir = env_dir or managed_env_dir()
    if os.name == "nt":
        return env_dir / "Scripts" / "python.exe"
    return env_dir / "bin" / "python"


def read_env_marker(env_dir: Path | None = None) -> dict | None:
    """The marker the first-use setup writes as its very last step, or None.
    An environment without it is half-made and never used."""
    import json

    env_dir = env_dir or managed_env_dir()
    try:
        data = json.loads((env_dir / ENV_MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("complete") is True else None


def managed_env_ready(env_dir: Path | None = None) -> bool:
    env_dir = env_dir or managed_env_dir()
    return managed_env_python(env_dir).exists() and read_env_marker(env_dir) is not None


def clean_child_env(env: dict[str, str]) -> dict[str, str]:
    """Undo what the frozen app's bootloader put into the environment (its own
    library folders), so a child Python loads its own libraries."""
    if is_frozen():
        for key in ("LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH"):
            original = env.pop(key + "_ORIG", None)
            if original is not None:
                env[key] = original
            else:
                env.pop(key, None)
        for key in ("QT_PLUGIN_PATH", "QML2_IMPORT_PATH", "PYTHONHOME"):
            env.pop(key, None)
    return env


def trainer_python(settings: dict | None = None) -> str:
    env = os.environ.get("DRAGONFARM_PYTHON")
    if env:
        return env
    if settings and settings.get("trainer_python"):
        return str(settings["trainer_python"])
    if not is_frozen():
        return sys.executable
    python = managed_env_python()
    if not managed_env_ready():
        raise NoTrainerPython(
            "The training environment is not set up yet. DragonFarm will set it up the first time you train."
        )
    return str(python)


def trainer_command(*args: str, settings: dict | None = None) -> tuple[str, list[str]]:
    """(program, arguments) for `python -m trainer ARGS...` in the trainer's Python."""
    return trainer_python(settings), ["-m", "trainer", *args]


def trainer_env(base: dict[str, str] | None = None, hf_token: str | None = None,
                keep_awake: bool = True) -> dict[str, str]:
    """Environment for the trainer process: unbuffered output, the source tree on
    sys.path when running from source, the token only here (never in files), and
    KEEP_AWAKE_ENV=0 when the person turned "keep the computer awake" off."""
    env = clean_child_env(dict(os.environ if base is None else base))
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("PYTHONIOENCODING", "utf-8")
    root = None
    if not is_frozen():
        root = str(Path(__file__).resolve().parents[2])
    elif (bundled_trainer_dir() / "trainer").is_dir():
        root = str(bundled_trainer_dir())   # the trainer always matches the app, even after an update
    if root:
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if hf_token:
        env["HF_TOKEN"] = hf_token
    if not keep_awake:
        env[KEEP_AWAKE_ENV] = "0"
    return env


def detached_options(windows: bool | None = None) -> dict:
    """Popen options that detach the child from this process's session."""
    windows = (os.name == "nt") if windows is None else windows
    if windows:
        return {"creationflags": DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP}
    return {"start_new_session": True}


def start_detached(program: str, args: list[str], cwd: str | Path, env: dict[str, str], log_path: str | Path,
                   windows: bool | None = None) -> subprocess.Popen:
    """Start `program args` detached, stdout and stderr appended to `log_path`
    (kept for a child that dies before its own log starts). Raises OSError
    when the program cannot be started."""
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        return subprocess.Popen([program, *args], cwd=str(cwd), env=env, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, close_fds=True, **detached_options(windows))
