"""The sample questions in samples.json and the replies to them.

Before training the questions are written (`write_questions`); right after the
first step the base model's replies (the adapter switched off: exactly the base
model), and at the end the fine-tuned model's, from adapter-best/ when the run
kept one (`load_best_adapter`), which is what Try it, merge and export use.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from trainer.engine.checkpoint import WEIGHTS
from trainer.engine.evaluation import sample_prompts
from trainer.run import status as st
from trainer.run.files import ADAPTER_BEST_DIR, SAMPLES_FILE

Replies = Callable[[list[list[dict[str, str]]]], list[str]]


def write_questions(run_dir: Path, chats: list[list[dict[str, str]]], count: int, from_training: bool) -> bool:
    """samples.json with the questions and their reference replies; True when there is at least one."""
    samples = sample_prompts(chats, count)
    st.write_json_atomic(run_dir / SAMPLES_FILE, {"samples": samples, "from_training": from_training})
    return bool(samples)


def has_questions(run_dir: Path) -> bool:
    return bool((st.read_json(run_dir / SAMPLES_FILE, {}) or {}).get("samples"))


def add_replies(run_dir: Path, key: str, replies: Replies, **extra: Any) -> None:
    """Fill every sample's `key` ("base" or "finetuned") in one batch, then rewrite samples.json."""
    data = st.read_json(run_dir / SAMPLES_FILE, {}) or {}
    samples = data.get("samples") or []
    if not samples:
        return
    for sample, reply in zip(samples, replies([s["messages"] for s in samples])):
        sample[key] = reply
    st.write_json_atomic(run_dir / SAMPLES_FILE, dict(data, samples=samples, **extra))


def load_best_adapter(run_dir: Path, model: Any, device: str) -> str:
    """Load adapter-best/ into the model when the run kept one (the last step was not
    the best); the folder whose weights the model now has."""
    weights = run_dir / ADAPTER_BEST_DIR / WEIGHTS
    if not weights.is_file():
        return "adapter"
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    set_peft_model_state_dict(model, load_file(str(weights), device=str(device)))
    return ADAPTER_BEST_DIR
