"""Integration on the tiny model: a real run, cancel, kill and resume."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trainer.run import status as st
from trainer.run.reader import Run
from trainer.engine.loop import train

ROOT = Path(__file__).resolve().parents[2]


def test_tiny_run_writes_every_file(tiny_run_dir):
    assert train(tiny_run_dir, verbose=False) == st.DONE
    run = Run(tiny_run_dir)
    s = run.status()
    assert s["state"] == st.DONE and s["step"] == s["total_steps"] == 12
    assert s["params_trainable"] > 0 and s["params_total"] > s["params_trainable"]
    records = run.train_records()
    assert [r["step"] for r in records] == list(range(1, 13))
    for key in ("epoch", "loss", "learning_rate", "grad_norm", "tokens_per_second", "elapsed_s", "eta_s"):
        assert key in records[-1]
    assert any("eval_loss" in r for r in run.progress())
    ev = run.eval()
    assert ev["before"]["loss"] > ev["after"]["loss"]
    assert ev["after"]["perplexity"] == pytest.approx(2.718281828 ** ev["after"]["loss"], rel=1e-6)
    samples = run.samples()
    assert len(samples) == 2 and all({"prompt", "reference", "base", "finetuned"} <= set(x) for x in samples)
    assert (tiny_run_dir / "logs" / "trainer.log").read_text()
    assert len(run.checkpoints()) <= 2


def test_adapter_loads_with_plain_peft_and_moved(tiny_run_dir, tiny_model_dir):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    assert train(tiny_run_dir, verbose=False) == st.DONE
    adapter = tiny_run_dir / "adapter"
    assert (adapter / "tokenizer_config.json").is_file()
    AutoTokenizer.from_pretrained(str(adapter))
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(str(tiny_model_dir)), str(adapter))
    lora_b = [p for n, p in model.named_parameters() if "lora_B" in n]
    assert lora_b and any(float(p.abs().sum()) > 0 for p in lora_b)  # LoRA B starts at zero


def _spawn(run_dir: Path, *extra: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "trainer", "train", str(run_dir), *extra], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _wait_for_step(run_dir: Path, step: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if st.read_status(run_dir).get("step", 0) >= step:
            return
        if proc.poll() is not None:
            raise AssertionError(proc.stderr.read().decode())
        time.sleep(0.1)
    raise AssertionError("trainer did not reach step %d" % step)


def test_cancel_mid_run_saves_adapter(make_run):
    run_dir = make_run("cancel", max_steps=400, eval_every=1000, save_every=1000)
    proc = _spawn(run_dir)
    _wait_for_step(run_dir, 3, proc)
    st.request_cancel(run_dir)
    assert proc.wait(timeout=60) == 3
    s = Run(run_dir).status()
    assert s["state"] == st.CANCELLED and 3 <= s["step"] < 400
    assert (run_dir / "adapter" / "adapter_model.safetensors").is_file()
    assert not (run_dir / st.CANCEL_FILE).exists()


@pytest.mark.skipif(os.name == "nt", reason="SIGTERM is a hard kill on Windows")
def test_sigterm_ends_cancelled(make_run):
    run_dir = make_run("term", max_steps=400, eval_every=1000, save_every=1000)
    proc = _spawn(run_dir)
    _wait_for_step(run_dir, 2, proc)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    assert Run(run_dir).status()["state"] == st.CANCELLED
    assert (run_dir / "adapter" / "adapter_model.safetensors").is_file()


def test_kill_then_resume_continues_from_checkpoint(make_run):
    run_dir = make_run("kill", max_steps=30, save_every=5, eval_every=1000)
    proc = _spawn(run_dir)
    _wait_for_step(run_dir, 12, proc)
    proc.kill()
    proc.wait(timeout=30)
    run = Run(run_dir)
    assert run.status()["state"] == st.INTERRUPTED
    ckpt_step = int(run.checkpoints()[-1].name.split("-")[1])
    assert ckpt_step >= 10
    assert train(run_dir, resume=True, verbose=False) == st.DONE
    s = run.status()
    assert s["resumed_from"] == ckpt_step and s["step"] == 30
    steps = [r["step"] for r in run.train_records()]
    assert steps == list(range(1, 31))  # no step repeated, none missing
    assert len(run.checkpoints()) == 2


def test_resume_without_checkpoint_starts_from_the_beginning(make_run):
    """A run that failed before its first save (e.g. the libraries were missing) resumes by starting again."""
    from trainer.engine.loop import NO_CHECKPOINT_RESTART

    run_dir = make_run("nockpt", max_steps=4, eval_every=1000)
    st.write_json_atomic(run_dir / "status.json", {"state": st.FAILED, "error": "No module named 'torch'"})
    (run_dir / "progress.jsonl").write_text('{"step": 7, "loss": 9.0}\n')  # stale lines from the failed try
    assert train(run_dir, resume=True, verbose=False) == st.DONE
    run = Run(run_dir)
    assert "resumed_from" not in run.status()
    assert [r["step"] for r in run.train_records()] == [1, 2, 3, 4]
    log = run.log_path.read_text(encoding="utf-8")
    assert NO_CHECKPOINT_RESTART in log
    modules = log.split("LoRA on ", 1)[1].split(":", 1)[0].split(", ")
    assert len(modules) > 1 and modules == sorted(modules)  # the same order on every run


def test_all_examples_without_replies_fail_in_words(tmp_path, tiny_model_dir):
    from dfhelpers import write_run

    chats = [{"messages": [{"role": "user", "content": "hi"}]}] * 3
    run_dir = write_run(tmp_path / "noreply", str(tiny_model_dir), chats, [])
    assert train(run_dir, verbose=False) == st.FAILED
    error = Run(run_dir).status()["error"]
    assert "None of the 3 training examples has a reply to learn from" in error
