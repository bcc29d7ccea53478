"""A real run that overfits on purpose: few examples, many epochs, frequent held-out checks.
The best adapter is kept, the run stops early, and the coach says it started to memorise."""
from __future__ import annotations

import hashlib
import random
from pathlib import Path

import pytest
from dfhelpers import write_run

WORDS = ["apple", "river", "stone", "cloud", "green", "seven", "tiger", "lamp", "paper", "window", "silver", "honey", "dream", "north"]


def code_chats(n: int, seed: int) -> list[dict]:
    """Replies are random words: nothing to generalise, everything to memorise."""
    r = random.Random(seed)
    return [{"messages": [{"role": "user", "content": f"Tell me the code {i + seed}."},
                          {"role": "assistant", "content": " ".join(r.choice(WORDS) for _ in range(8))}]}
            for i in range(n)]


@pytest.fixture
def learnable_tiny_model(tiny_model_dir, tmp_path) -> Path:
    """The tiny model with larger initial weights: the default tiny model's logits are too small to learn
    (its loss stays near ln(vocab)), so it could never memorise."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    config = LlamaConfig.from_pretrained(str(tiny_model_dir))
    config.initializer_range = 0.3
    torch.manual_seed(0)
    folder = tmp_path / "tiny-learnable"
    LlamaForCausalLM(config).save_pretrained(str(folder))
    AutoTokenizer.from_pretrained(str(tiny_model_dir)).save_pretrained(str(folder))
    return folder


def digest(folder: Path) -> str:
    return hashlib.sha256((folder / "adapter_model.safetensors").read_bytes()).hexdigest()


@pytest.mark.slow
def test_overfitting_run_keeps_the_best_and_stops_early(learnable_tiny_model, tmp_path, capsys):
    import torch

    from trainer.cli import main
    from trainer.engine.loop import train
    from trainer.run import status as st
    from trainer.run.reader import Run, verdict

    torch.set_num_threads(2)
    run_dir = write_run(tmp_path / "overfit", str(learnable_tiny_model), code_chats(4, 1), code_chats(4, 500),
                        epochs=40, batch_size=4, learning_rate=0.02, eval_every=2, early_stop_checks=3,
                        num_samples=1, sample_max_new_tokens=4, precision="fp32", max_length=64)
    assert train(run_dir, verbose=False) == st.DONE
    run = Run(run_dir)
    status, ev = run.status(), run.eval()
    best = ev["best"]
    assert best["adapter"] == "adapter-best" and run.has_best_adapter()
    stopped = ev["stopped_early_at"]
    assert status["stopped_early_at"] == stopped and status["step"] == stopped < status["total_steps"] == 40
    assert best["step"] < stopped and status["best_step"] == best["step"]
    evals = {r["step"]: r["eval_loss"] for r in run.progress() if "eval_loss" in r}
    assert evals[best["step"]] == min(v for s, v in evals.items() if s > 0) == best["loss"]
    assert all(evals[s] > best["loss"] for s in evals if s > best["step"])
    assert digest(run_dir / "adapter-best") != digest(run_dir / "adapter")
    assert run.adapter_for() == run_dir / "adapter-best" and run.adapter_for(last=True) == run_dir / "adapter"
    said = verdict(ev, run.progress())
    assert said["verdict"] == "overfitting", said
    assert f"best point was step {best['step']}, which Try it and export use" in said["text"]
    assert f"stopped early at step {stopped}" in said["text"]
    assert main(["status", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert "It started to memorise" in out and "memorise your examples" in out
    assert f"best      step {best['step']}" in out and "add --last" in out
