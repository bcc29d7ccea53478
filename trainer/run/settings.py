"""User settings shared by the app and the command line (settings.json in the
platformdirs config folder), and where runs live.

The Hugging Face token is never stored here; see the app's token store.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

APP_NAME = "DragonFarm"
SETTINGS_FILE = "settings.json"


def config_dir() -> Path:
    override = os.environ.get("DRAGONFARM_CONFIG_DIR")
    if override:
        return Path(override)
    from platformdirs import user_config_dir

    return Path(user_config_dir(APP_NAME, appauthor=False))


def data_dir() -> Path:
    from platformdirs import user_data_dir

    return Path(user_data_dir(APP_NAME, appauthor=False))


def load_settings() -> dict[str, Any]:
    try:
        data = json.loads((config_dir() / SETTINGS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_settings(settings: dict[str, Any]) -> None:
    from trainer.run.status import write_json_atomic

    folder = config_dir()
    folder.mkdir(parents=True, exist_ok=True)
    write_json_atomic(folder / SETTINGS_FILE, settings)


def runs_dir(cli_value: str | os.PathLike | None = None) -> Path:
    """--runs-dir, then DRAGONFARM_RUNS_DIR, then the app setting, then a per-user folder."""
    for value in (cli_value, os.environ.get("DRAGONFARM_RUNS_DIR"), load_settings().get("runs_dir")):
        if value:
            return Path(value).expanduser()
    return data_dir() / "runs"
