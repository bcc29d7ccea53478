"""Small helpers for GUI tests: writing run-folder files as the trainer would."""
from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

from trainer.run.status import write_json_atomic


def append_line(run: Path, record: dict) -> None:
    with open(run / "progress.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")
        fh.flush()


def append_raw(run: Path, text: str) -> None:
    with open(run / "progress.jsonl", "a", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()


def train_line(step: int, loss: float, **extra) -> dict:
    record = {"step": step, "epoch": step / 10, "loss": loss, "learning_rate": 1e-4, "grad_norm": 1.0,
              "tokens_per_second": 512.0, "elapsed_s": step * 2.0, "eta_s": (10 - step) * 2.0, "time": time.time()}
    record.update(extra)
    return record


def write_status(run: Path, state: str, *, live: bool = True, **fields) -> dict:
    """A status.json as the trainer writes it; live=True names this (alive) process."""
    now = time.time()
    data = {"state": state, "pid": os.getpid() if live else 999999, "host": socket.gethostname(),
            "started_at": now - 10, "updated_at": now, "heartbeat_at": now if live else now - 3600}
    data.update(fields)
    write_json_atomic(run / "status.json", data)
    return data


def wizard_idle(qtbot, wizard, timeout: int = 15000) -> None:
    """Wait until no wizard page has work in its worker (scan, held-out check, run creation)."""
    pages = [wizard.page(i) for i in wizard.pageIds()]
    qtbot.waitUntil(lambda: not any(p.busy() for p in pages), timeout=timeout)
