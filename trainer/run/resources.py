"""Where DragonFarm's own files are: one helper for source, installed and frozen apps."""
from __future__ import annotations

import sys
from pathlib import Path


def resources_dir() -> Path:
    """The `resources/` folder: beside the packages from source or a wheel, or
    inside the PyInstaller bundle (sys._MEIPASS) in the frozen app."""
    frozen = getattr(sys, "_MEIPASS", None)
    if frozen and (Path(frozen) / "resources").is_dir():
        return Path(frozen) / "resources"
    return Path(__file__).resolve().parents[2] / "resources"


def resource(*parts: str) -> Path:
    return resources_dir().joinpath(*parts)
