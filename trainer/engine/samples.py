"""The sample questions in samples.json and the replies to them.

Before training the questions are written (`write_questions`): the person's own
test questions first (config `check_questions`, marked `"yours": true`, with no
reference reply), then held-out prompts with their replies. Right after the
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


def write_questions(run_dir: Path, chats: list[list[dict[str, str]]], count: int, from_training: bool,
                    own: list[str] | tuple[str, ...] = ()) -> bool:
    """samples.json with the questions and their reference replies; True when there is at least one."""
    samples = own_questions(own, chats) + sample_prompts(chats, count)
    st.write_json_atomic(run_dir / SAMPLES_FILE, {"samples": samples, "from_training": from_training})
    return bool(samples)


def own_questions(questions: list[str] | tuple[str, ...], chats: list[list[dict[str, str]]]) -> list[dict[str, Any]]:
    """The person's own questions as samples, asked the way the examples are: after the
    system prompt that every example shares, if they share one."""
    system = shared_system_prompt(chats)
    head = [{"role": "system", "content": system}] if system is not None else []
    return [{"messages": head + [{"role": "user", "content": q.strip()}], "prompt": q.strip(), "reference": None,
             "yours": True} for q in questions if q.strip()]


def shared_system_prompt(chats: list[list[dict[str, str]]]) -> str | None:
    """The system prompt that begins every chat, or None when they have none or differ."""
    found: set[str | None] = set()
    for chat in chats:
        first = chat[0] if chat and isinstance(chat[0], dict) else {}
        found.add(first.get("content") if first.get("role") == "system" else None)
        if len(found) > 1:
            return None
    return next(iter(found)) if found else None


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
