"""Fixtures for using a run's result: trained runs (tiny and SmolLM2-135M), a
fake `serve` process, and the no-leftover check for the Qt tests."""
from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from dfhelpers import fake_python as wrap_fake_python, example_chats, write_run

HERE = Path(__file__).resolve().parent
FAKE_MODEL = HERE / "fake_chat_model.py"


def _train(run_dir: Path) -> Path:
    import torch

    from trainer.run import status as st
    from trainer.run.reader import Run
    from trainer.engine.loop import train

    torch.set_num_threads(2)
    assert train(run_dir, verbose=False) == st.DONE, Run(run_dir).status().get("error")
    return run_dir


@pytest.fixture(scope="session")
def trained_tiny_run(tmp_path_factory, tiny_model_dir) -> Path:
    """A finished run on the tiny model (12 steps, ~3 s). Tests must not change it."""
    run_dir = tmp_path_factory.mktemp("result") / "tiny-result"
    write_run(run_dir, str(tiny_model_dir), example_chats(24), example_chats(6, 100), precision="fp32")
    return _train(run_dir)


@pytest.fixture(scope="session")
def smol_run(tmp_path_factory, smollm2_dir) -> Path:
    """A short real run on SmolLM2-135M (3 steps, fp32 so CPU generation is quick)."""
    run_dir = tmp_path_factory.mktemp("result-smol") / "smol-result"
    write_run(run_dir, str(smollm2_dir), example_chats(8), example_chats(3, 200), max_steps=3, batch_size=2,
              learning_rate=1e-3, max_length=128, num_samples=2, sample_max_new_tokens=6, eval_every=3,
              precision="fp32")
    return _train(run_dir)


def fake_run(folder: Path, name: str = "shared-run") -> Path:
    """A run folder with every packable file and a made-up adapter (no training)."""
    from trainer.run.config import TrainConfig

    run = folder / name
    write_run(run, "HuggingFaceTB/SmolLM2-135M-Instruct", example_chats(4), example_chats(2, 50))
    (run / "adapter").mkdir()
    (run / "adapter" / "adapter_config.json").write_text('{"r": 8}')
    (run / "adapter" / "adapter_model.safetensors").write_bytes(os.urandom(50_000))
    (run / "logs").mkdir()
    (run / "logs" / "trainer.log").write_text("trained\n")
    (run / "eval.json").write_text('{"before": {"loss": 2.0}, "after": {"loss": 1.0}}')
    (run / "samples.json").write_text('{"samples": []}')
    (run / "progress.jsonl").write_text('{"step": 1, "loss": 1.5}\n')
    (run / "status.json").write_text('{"state": "done", "pid": 1, "host": "elsewhere"}')
    (run / "checkpoints" / "step-1").mkdir(parents=True)
    (run / "checkpoints" / "step-1" / "trainer_state.json").write_text("{}")
    assert TrainConfig.load(run).name == name
    return run


@pytest.fixture
def fake_chat_python(tmp_path, monkeypatch) -> Path:
    """DRAGONFARM_PYTHON pointing at the fake model process."""
    return wrap_fake_python(tmp_path, monkeypatch, FAKE_MODEL)


@pytest.fixture
def qt_clean(qtbot):
    """After a Qt test: no running QProcess, no active timer, no new thread."""
    from PySide6.QtCore import QProcess, QTimer
    from PySide6.QtWidgets import QApplication

    before = {t.ident for t in threading.enumerate()}
    yield qtbot
    app = QApplication.instance()
    left = []
    for top in app.topLevelWidgets():
        left += [f"running QProcess {p.program()}" for p in top.findChildren(QProcess)
                 if p.state() != QProcess.ProcessState.NotRunning]
        left += [f"active QTimer in {type(top).__name__}" for t in top.findChildren(QTimer)
                 if t.isActive() and t.objectName() != "qt_internal"]
    new_threads = [t.name for t in threading.enumerate() if t.ident not in before and t.is_alive()]
    assert not left, left
    assert not new_threads, new_threads
