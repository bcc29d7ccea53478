"""The command line in a pipe and with a user error in `train`: words, no tracebacks."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from dfhelpers import example_chats, write_run

from trainer.cli import main

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}


def test_a_closed_pipe_ends_quietly(tmp_path):
    data = tmp_path / "many.csv"
    data.write_text("question,answer\n" + "".join(f"What is {i}?,It is {i}.\n" for i in range(3000)))
    # `dragonfarm inspect FILE | head -1`: the reader is gone before the output is written
    proc = subprocess.Popen([sys.executable, "-m", "trainer", "inspect", str(data), "--rows", "2000"], cwd=ROOT,
                            env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    proc.stderr.close()
    assert "BrokenPipe" not in err and "Traceback" not in err and "Exception ignored" not in err, err
    assert proc.returncode == 141


def test_broken_pipe_in_main_returns_quietly(monkeypatch, capsys):
    class ClosedPipe:
        def write(self, _text):
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert main(["presets"]) == 141
    assert capsys.readouterr().err == ""


def test_user_error_in_train_prints_words_not_a_traceback(tmp_path):
    run = write_run(tmp_path / "run", str(tmp_path / "no-such-model-folder"), example_chats(4), example_chats(2, 100))
    out = subprocess.run([sys.executable, "-m", "trainer", "train", str(run)], cwd=ROOT, env=ENV,
                         check=False, capture_output=True, text=True, timeout=300)
    text = out.stdout + out.stderr
    assert out.returncode == 1, text
    assert "Traceback" not in text and "dragonfarm: " in text
    log = (run / "logs" / "trainer.log").read_text()
    assert "Traceback" in log  # the details still go to the log


def test_missing_or_bad_run_folder_in_train_is_a_message(tmp_path):
    out = subprocess.run([sys.executable, "-m", "trainer", "train", str(tmp_path / "nope")], cwd=ROOT, env=ENV,
                         check=False, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "is not a DragonFarm run folder" in out.stderr and "Traceback" not in out.stderr
    run = write_run(tmp_path / "run", "HuggingFaceTB/SmolLM2-135M-Instruct", example_chats(4), example_chats(2, 100))
    (run / "config.json").write_text('{"model": "x", "epochs": "many"}')
    out = subprocess.run([sys.executable, "-m", "trainer", "train", str(run)], cwd=ROOT, env=ENV,
                         check=False, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "epochs" in out.stderr and "Traceback" not in out.stderr
