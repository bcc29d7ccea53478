"""Per-sequence attention for packed rows.

A packed row holds several examples back to back. Attention must never look
from one example into another, so while a packed forward runs (inside
`segments(lengths)`) our attention function runs the model's own scaled-dot-
product attention once per example, each causal on its own slice: no dense
block mask over the row, and less work than one causal pass over the whole
row. Outside `segments(...)` (generation, unpacked batches) it is exactly
transformers' "sdpa".

On a CPU in bfloat16, PyTorch's fused attention kernel is slower than three
plain steps for the short examples people train on (scores, softmax in float32,
weighted sum: 1.4 to 2.5 times faster for 50 to 400 tokens, forward and
backward), so segments up to SHORT tokens take that path (`_ShortAttention`,
which keeps the softmax in bfloat16 for the backward pass: two bytes per pair
of tokens). Longer segments and every GPU keep the fused kernel.

Examples that begin with the same untrained tokens (the chat template's
system prompt, which every example of a file shares) can hold that beginning
once, at the front of the row (`segments(lengths, prefix=P)`): each example's
queries then attend to the shared beginning and to their own tokens before
them, which is what they saw when the beginning was theirs, so the loss is the
same and the beginning's forward and backward run once instead of once per
example (trainer.engine.packing decides when).

It is registered in transformers' attention-function registry under NAME
(`AttentionInterface.register`) and chosen with `use_packed_attention(model)`.
A mask function is registered under the same name so that the model builds no
[row x row] mask while packed.
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Iterator

NAME = "dragonfarm_packed"
_SEGMENTS: contextvars.ContextVar[tuple[int, tuple[int, ...]] | None] = contextvars.ContextVar("df_segments",
                                                                                          default=None)
_registered = False
SHORT = 512


@contextlib.contextmanager
def segments(lengths: list[int] | tuple[int, ...], prefix: int = 0) -> Iterator[None]:
    """Within this block, a forward pass on a one-row batch treats the row as these examples,
    after `prefix` tokens that every one of them begins with."""
    token = _SEGMENTS.set((int(prefix), tuple(int(n) for n in lengths)))
    try:
        yield
    finally:
        _SEGMENTS.reset(token)


def packed_row(batch: dict[str, Any]) -> Any:
    """The `segments(...)` block for a batch from trainer.engine.packing; no block for a padded one."""
    if not batch.get("segments"):
        return contextlib.nullcontext()
    return segments(batch["segments"], batch.get("prefix", 0))


def _attention(module: Any, query: Any, key: Any, value: Any, attention_mask: Any, dropout: float = 0.0,
               scaling: float | None = None, **kwargs: Any) -> tuple[Any, None]:
    import torch
    from transformers.integrations.sdpa_attention import repeat_kv, sdpa_attention_forward

    layout = _SEGMENTS.get()
    prefix, lengths = layout if layout is not None else (0, ())
    if (layout is None or query.shape[0] != 1 or query.shape[2] != key.shape[2]
            or query.shape[2] != prefix + sum(lengths)):
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      **kwargs)
    window = kwargs.get("sliding_window") or getattr(module, "sliding_window", None)
    if window and prefix + max(lengths, default=0) > window:  # use_packed_attention checked the examples' lengths
        raise ValueError(f"A packed example is longer than this layer's sliding window ({window} tokens)")
    groups = getattr(module, "num_key_value_groups", 1)
    if groups > 1:  # repeat once for the row, not once per segment
        key, value = repeat_kv(key, groups), repeat_kv(value, groups)
    cpu = query.device.type == "cpu"
    short = cpu and not dropout and (query.dtype == torch.bfloat16 or (
        torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.bfloat16))
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5

    def attend(q: Any, k: Any, v: Any) -> Any:
        """q: the segment's n queries; k, v: the `before` shared keys, then the segment's own n."""
        n, before = q.shape[2], k.shape[2] - q.shape[2]
        if short and 1 < n + before <= SHORT:
            bf16 = torch.bfloat16
            return _short_attention().apply(q.to(bf16), k.to(bf16), v.to(bf16), scale)
        if before:  # causal, aligned to the last key: query i sees the shared keys and its own keys up to i
            mask = torch.ones(n, n + before, dtype=torch.bool, device=q.device).tril_(before)
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout,
                                                                    scale=scaling)
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=dropout, scale=scaling,
                                                                is_causal=n > 1)

    outputs = [attend(query[:, :, :prefix], key[:, :, :prefix], value[:, :, :prefix])] if prefix else []
    start = prefix
    for n in lengths:
        end = start + n
        k, v = key[:, :, start:end], value[:, :, start:end]
        if prefix:
            k, v = torch.cat([key[:, :, :prefix], k], dim=2), torch.cat([value[:, :, :prefix], v], dim=2)
        outputs.append(attend(query[:, :, start:end], k, v))
        start = end
    out = outputs[0] if len(outputs) == 1 else torch.cat(outputs, dim=2)
    return out.transpose(1, 2).contiguous(), None


_SHORT: Any = None


def _short_attention() -> Any:
    """Causal attention of one short segment as scores, float32 softmax, weighted sum; the
    softmax is kept in the inputs' dtype for the backward pass. Keys beyond the queries'
    count come first (a shared beginning): every query sees them."""
    global _SHORT
    if _SHORT is not None:
        return _SHORT
    import torch

    class _ShortAttention(torch.autograd.Function):
        @staticmethod
        @torch.autocast("cpu", enabled=False)
        def forward(ctx: Any, q: Any, k: Any, v: Any, scale: float) -> Any:
            n, keys = q.shape[-2], k.shape[-2]
            work = torch.promote_types(q.dtype, torch.float32)  # at least float32 for the softmax
            scores = torch.matmul(q, k.transpose(-1, -2)).to(work).mul_(scale)
            hidden = torch.ones(n, keys, dtype=torch.bool, device=q.device).triu_(keys - n + 1)
            scores.masked_fill_(hidden, float("-inf"))
            p = torch.softmax(scores, dim=-1).to(q.dtype)
            ctx.save_for_backward(q, k, v, p)
            ctx.scale = scale
            return torch.matmul(p, v)

        @staticmethod
        @torch.autocast("cpu", enabled=False)
        def backward(ctx: Any, grad: Any) -> Any:
            q, k, v, p = ctx.saved_tensors
            grad = grad.to(q.dtype)
            grad_v = torch.matmul(p.transpose(-1, -2), grad)
            work = torch.promote_types(q.dtype, torch.float32)
            grad_p = torch.matmul(grad, v.transpose(-1, -2)).to(work)
            pf = p.to(work)
            grad_s = pf.mul_(grad_p.sub_((grad_p * pf).sum(-1, keepdim=True))).mul_(ctx.scale).to(q.dtype)
            return torch.matmul(grad_s, k), torch.matmul(grad_s.transpose(-1, -2), q), grad_v, None

    _SHORT = _ShortAttention
    return _SHORT


def _mask(*args: Any, **kwargs: Any) -> Any:
    if _SEGMENTS.get() is not None:
        return None
    from transformers.masking_utils import sdpa_mask

    return sdpa_mask(*args, **kwargs)


def register() -> None:
    global _registered
    if _registered:
        return
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface

    AttentionInterface.register(NAME, _attention)
    AttentionMaskInterface.register(NAME, _mask)
    _registered = True


def use_packed_attention(model: Any, longest: int | None = None) -> bool:
    """Switch a model (or peft wrapper) to per-sequence attention; False when it cannot.

    Only models that run "sdpa" today are switched: their attention is plain
    causal softmax attention, which is what the per-segment path computes.
    Soft-capped attention stays unpacked. Sliding-window attention (Gemma 3
    runs it in most layers) is packed only when no example is longer than the
    window (`longest`, in tokens): then every query sees all the keys before it
    either way, and the per-example path is exact.
    """
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    config = getattr(base, "config", None)
    if config is None or getattr(config, "_attn_implementation", None) not in ("sdpa", NAME):
        return False
    if getattr(config, "attn_logit_softcapping", None):
        return False
    window = getattr(config, "sliding_window", None)
    kinds = set(getattr(config, "layer_types", None) or ())
    if window or "sliding_attention" in kinds:
        if not window or longest is None or longest > window:
            return False
    if kinds - {"full_attention", "sliding_attention"}:
        return False
    register()
    try:
        base.set_attn_implementation(NAME)
    except (ValueError, KeyError, AttributeError, TypeError):
        return False
    return getattr(base.config, "_attn_implementation", None) == NAME
