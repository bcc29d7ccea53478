"""A Decoding (trainer.run.decoding) as model.generate() arguments.

Where the person left a value open, the model's own generation_config decides
if it has an opinion (Qwen2.5 ships repetition_penalty 1.05, top_p 0.8, top_k 20),
else DragonFarm's default. Greedy unless a temperature above 0 is asked for:
the sample replies must be comparable before and after training.
"""
from __future__ import annotations

from typing import Any

from trainer.run.decoding import DEFAULT, DEFAULT_REPETITION_PENALTY, DEFAULT_TOP_P, Decoding


def _model_default(model: Any, name: str) -> Any:
    config = getattr(model, "generation_config", None)
    value = getattr(config, name, None) if config is not None else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if name == "repetition_penalty" and value == 1.0:
        return None   # 1.0 is transformers' "no opinion"
    if name == "top_k" and value in (0, 50):
        return None   # 50 is transformers' built-in default, not the model's choice
    if name == "top_p" and value == 1.0:
        return None
    return value


def generate_kwargs(model: Any, tokenizer: Any, decoding: Decoding | None = None) -> dict[str, Any]:
    """Keyword arguments for model.generate() (without the inputs)."""
    d = (decoding or DEFAULT).clamped()
    penalty = d.repetition_penalty
    if penalty is None:
        penalty = _model_default(model, "repetition_penalty") or DEFAULT_REPETITION_PENALTY
    kwargs: dict[str, Any] = {"max_new_tokens": d.max_new_tokens, "repetition_penalty": float(penalty),
                              "pad_token_id": tokenizer.pad_token_id, "eos_token_id": tokenizer.eos_token_id}
    if d.temperature > 0:
        top_p = d.top_p if d.top_p is not None else (_model_default(model, "top_p") or DEFAULT_TOP_P)
        kwargs.update(do_sample=True, temperature=d.temperature, top_p=float(top_p))
        top_k = _model_default(model, "top_k")
        kwargs["top_k"] = int(top_k) if top_k else None
    else:
        kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
    return kwargs
