"""Helpers for the data import tests (chats in a run folder, message builders)."""
from __future__ import annotations

import json
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def fixture(name: str) -> Path:
    return FIXTURES / name


def run_chats(run_dir: Path, which: str = "train") -> list:
    path = Path(run_dir) / "data" / f"{which}.jsonl"
    if not path.exists():
        return []
    return [json.loads(line)["messages"] for line in path.read_text(encoding="utf-8").splitlines()]


def U(text: str) -> dict:
    return {"role": "user", "content": text}


def A(text: str) -> dict:
    return {"role": "assistant", "content": text}


def S(text: str) -> dict:
    return {"role": "system", "content": text}
