"""Loss, held-out evaluation and sample replies."""
from __future__ import annotations

import contextlib
import math
from typing import Any

from trainer.run.decoding import Decoding

from trainer.engine.batching import Batches
from trainer.engine.decoding import generate_kwargs


def autocast(device: str, precision: str) -> Any:
    import torch

    if precision == "bf16" and device in ("cpu", "cuda", "mps"):
        return torch.autocast(device_type=device, dtype=torch.bfloat16)
    if precision == "fp16" and device == "cuda":
        return torch.autocast(device_type="cuda", dtype=torch.float16)
    return contextlib.nullcontext()


def summed_loss(model: Any, batch: dict[str, Any]) -> Any:
    """Sum of next-token cross-entropy over the trained positions (float32).

    Logits only where there is loss (trainer.engine.head), the model's full
    path where that does not apply; a packed row runs with per-example attention.
    """
    from trainer.engine.attention import packed_row
    from trainer.engine.head import fast_loss_sum, full_loss_sum

    with packed_row(batch):
        loss = fast_loss_sum(model, batch)
        return full_loss_sum(model, batch) if loss is None else loss


def per_example_scale(batch: dict[str, Any]) -> Any:
    """Token weights for averaging per example (the `loss_average` setting): 1 / (the example's
    trained tokens) on each trained token, 0 elsewhere, so that summed_loss gives the sum of each
    example's mean loss. An example is a row of a padded batch, or a segment of a packed row."""
    import torch

    from trainer.engine.encode import IGNORE

    targets = batch["targets"]
    trained = targets != IGNORE
    segments = batch.get("segments")
    if segments:  # the shared beginning of a packed row (no trained tokens) counts as one more example
        segments = ([batch["prefix"]] if batch.get("prefix") else []) + list(segments)
        lengths = torch.tensor(segments, device=targets.device)
        example = torch.repeat_interleave(torch.arange(len(segments), device=targets.device), lengths)
        example = example.reshape(targets.shape)
    else:
        example = torch.arange(targets.shape[0], device=targets.device)[:, None].expand_as(targets)
    counts = torch.zeros(int(example.max()) + 1, device=targets.device).index_add_(
        0, example[trained], torch.ones(int(trained.sum()), device=targets.device))
    return torch.where(trained, 1.0 / counts.clamp(min=1.0)[example], torch.zeros((), device=targets.device))


def check_fast_loss(model: Any, batch: dict[str, Any]) -> bool:
    """Once, before training: does the gathered-logits loss equal the model's own? (else use the full path)"""
    from trainer.engine.attention import packed_row
    from trainer.engine.head import verify

    def run(fn: Any) -> Any:
        with packed_row(batch):
            return fn(model, batch)

    return verify(model, batch, run)


def eval_loss(model: Any, batches: Batches, device: str, precision: str) -> float | None:
    import torch

    if not batches.examples:
        return None
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad(), autocast(device, precision):
        for indices in batches.in_order():
            n = batches.trained_tokens(indices)
            if n == 0:
                continue
            total += float(summed_loss(model, batches.collate(indices, device)))
            count += n
    if was_training:
        model.train()
    return total / count if count else None


def loss_record(loss: float | None, examples: int) -> dict[str, Any]:
    return {"loss": loss, "perplexity": math.exp(min(loss, 50.0)) if loss is not None else None, "examples": examples}


def prompt_of(chat: list[dict[str, str]]) -> tuple[list[dict[str, str]], str] | None:
    """The turns before the last reply, and that reply (the reference)."""
    for i in range(len(chat) - 1, -1, -1):
        if chat[i]["role"] == "assistant" and i > 0:
            return chat[:i], chat[i]["content"]
    return None


def generate_reply(model: Any, tokenizer: Any, messages: list[dict[str, str]], device: str,
                   decoding: Decoding | None = None, streamer: Any = None) -> str:
    """One reply, decoded the shared way (trainer.run.decoding)."""
    import torch

    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    enc = tokenizer(text, add_special_tokens=False, return_tensors="pt").to(device)
    kwargs = generate_kwargs(model, tokenizer, decoding)
    kwargs["streamer"] = streamer
    was_training = model.training
    model.eval()
    with torch.no_grad():
        out = model.generate(**enc, **kwargs)
    if was_training:
        model.train()
    return tokenizer.decode(out[0, enc["input_ids"].shape[1]:], skip_special_tokens=True).strip()


def generate_replies(model: Any, tokenizer: Any, prompts: list[list[dict[str, str]]], device: str,
                     decoding: Decoding | None = None) -> list[str]:
    """Replies to several prompts in one left-padded batch (the samples before and after training),
    decoded the shared way (trainer.run.decoding)."""
    import torch

    if not prompts:
        return []
    texts = [tokenizer.apply_chat_template(m, tokenize=False, add_generation_prompt=True) for m in prompts]
    side = tokenizer.padding_side
    tokenizer.padding_side = "left"
    try:
        enc = tokenizer(texts, add_special_tokens=False, return_tensors="pt", padding=True).to(device)
    finally:
        tokenizer.padding_side = side
    was_training = model.training
    model.eval()
    with torch.no_grad():
        out = model.generate(**enc, **generate_kwargs(model, tokenizer, decoding))
    if was_training:
        model.train()
    width = enc["input_ids"].shape[1]
    return [tokenizer.decode(row[width:], skip_special_tokens=True).strip() for row in out]


def sample_prompts(chats: list[list[dict[str, str]]], count: int) -> list[dict[str, Any]]:
    samples = []
    for chat in chats:
        if len(samples) >= count:
            break
        found = prompt_of(chat)
        if found:
            messages, reference = found
            last_user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
            samples.append({"messages": messages, "prompt": last_user, "reference": reference})
    return samples
