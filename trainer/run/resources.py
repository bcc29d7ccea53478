"""Where DragonFarm's own files are: one helper for source, installed and frozen apps."""
from __future__ import annotations

import sys
from pathlib import Path


def resources_dir() -> Path:
    """`trainer/resources/`, package data of the trainer: found beside this package
    from source or a wheel, and at trainer/resources inside the PyInstaller bundle
    (sys._MEIPASS) in the frozen app."""
    frozen = getattr(sys, "_MEIPASS", None)
    if frozen and (Path(frozen) / "trainer" / "resources").is_dir():
        return Path(frozen) / "trainer" / "resources"
    return Path(__file__).resolve().parents[1] / "resources"


def resource(*parts: str) -> Path:
    return resources_dir().joinpath(*parts)
