"""The loss with logits only where there is loss.

A causal LM's output head turns every position into a score for every word of
the vocabulary (49k for SmolLM2): in float32 that is the biggest tensor of a
step, yet only the reply tokens carry loss. Here the decoder body runs on its
own, the hidden states of the trained positions are gathered, and the head and
cross-entropy run on those alone, a chunk of rows at a time. The gradient with
respect to the hidden states is worked out chunk by chunk during the forward
pass (softmax minus one-hot, times the head's weight), so no chunk's logits are
kept for the backward pass either.

Models whose head is not a plain linear layer on the body's last hidden state
(logit soft-capping, scaling) use the full path; `verify` compares the two paths
once on a real batch and the trainer keeps the full path if they differ.
"""
from __future__ import annotations

import logging
from typing import Any

from trainer.engine.encode import IGNORE

log = logging.getLogger("dragonfarm.engine")
# Configuration fields that change logits after the head: such models keep the full path.
_LOGIT_TWEAKS = ("final_logit_softcapping", "logit_scale", "logits_scaling", "output_multiplier_logits")
_FAST_ATTR = "_dragonfarm_fast_head"


def _base(model: Any) -> Any:
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def split_model(model: Any) -> tuple[Any, Any] | None:
    """(decoder body, output head) of a causal LM, or None when it is not the plain kind."""
    import torch

    base = _base(model)
    if getattr(model, _FAST_ATTR, True) is False:
        return None
    config = getattr(base, "config", None)
    if config is None or any(getattr(config, name, None) not in (None, 1, 1.0) for name in _LOGIT_TWEAKS):
        return None
    head = base.get_output_embeddings() if hasattr(base, "get_output_embeddings") else None
    body = getattr(base, getattr(base, "base_model_prefix", "") or "model", None)
    if body is None or body is base or not isinstance(head, torch.nn.Linear):
        return None
    return body, head


def chunk_rows(vocab: int) -> int:
    """Rows per chunk: about 6 M logits (24 MB in float32) at a time, small enough that the
    softmax passes over a chunk stay in a CPU's cache (measured: 20% faster than 128 MB)."""
    return max(32, (3 << 21) // max(1, vocab))


_CAST: dict[tuple[int, Any], tuple[Any, int, Any]] = {}


def cast_weight(weight: Any, dtype: Any) -> Any:
    """`weight` in `dtype`; a frozen weight's copy is kept (a tied output head is the size
    of the embedding: casting it at every pass is a copy of 28 M numbers for SmolLM2)."""
    if weight.dtype == dtype:
        return weight
    if weight.requires_grad:
        return weight.to(dtype)
    key = (id(weight), dtype)
    kept = _CAST.get(key)
    if kept is None or kept[0] is not weight or kept[1] != weight._version:
        _CAST.clear()  # one model per process: keep one copy, never a stale one
        kept = (weight, weight._version, weight.detach().to(dtype))
        _CAST[key] = kept
    return kept[2]


def _matmul_dtype(hidden: Any) -> Any:
    import torch

    kind = hidden.device.type
    if torch.is_autocast_enabled(kind):
        return torch.get_autocast_dtype(kind)
    return hidden.dtype


def _chunk_log_probs(h: Any, weight: Any, bias: Any) -> Any:
    """float32 log-probabilities of one chunk: one fused pass from the (bf16) logits, where a
    float32 copy, a log-sum-exp and a subtraction each took a pass over 6 M numbers."""
    import torch

    logits = h @ weight.t()
    if bias is not None:
        logits = logits + bias
    return torch.log_softmax(logits, dim=-1, dtype=torch.float32)


def _loss_no_grad(hidden: Any, weight: Any, bias: Any, targets: Any, dtype: Any, scale: Any = None) -> Any:
    import torch

    total = torch.zeros((), dtype=torch.float32, device=hidden.device)
    w = cast_weight(weight, dtype)
    b = bias.to(dtype) if bias is not None else None
    step = chunk_rows(weight.shape[0])
    for s in range(0, hidden.shape[0], step):
        log_probs = _chunk_log_probs(hidden[s:s + step].to(dtype), w, b)
        losses = -log_probs.gather(1, targets[s:s + step, None]).squeeze(1)
        total += losses.sum() if scale is None else (losses * scale[s:s + step]).sum()
    return total


def _make_function() -> Any:
    import torch

    class HeadCrossEntropy(torch.autograd.Function):
        """Summed cross-entropy of head(hidden) against targets, each row's times its scale
        (None: 1); gradients computed in forward."""

        @staticmethod
        def forward(ctx: Any, hidden: Any, weight: Any, bias: Any, targets: Any, dtype: Any, scale: Any) -> Any:
            w = cast_weight(weight, dtype)
            b = bias.to(dtype) if bias is not None else None
            need_w = weight.requires_grad
            need_b = bias is not None and bias.requires_grad
            grad_h = torch.empty_like(hidden)
            grad_w = torch.zeros_like(weight, dtype=torch.float32) if need_w else None
            grad_b = torch.zeros_like(bias, dtype=torch.float32) if need_b else None
            total = torch.zeros((), dtype=torch.float32, device=hidden.device)
            step = chunk_rows(weight.shape[0])
            with torch.autocast(hidden.device.type, enabled=False):
                for s in range(0, hidden.shape[0], step):
                    h = hidden[s:s + step].to(dtype)
                    t = targets[s:s + step]
                    log_probs = _chunk_log_probs(h, w, b)
                    losses = -log_probs.gather(1, t[:, None]).squeeze(1)
                    grad = log_probs.exp_()  # softmax, in place
                    grad[torch.arange(t.shape[0], device=t.device), t] -= 1.0
                    if scale is not None:
                        losses = losses * scale[s:s + step]
                        grad.mul_(scale[s:s + step, None])
                    total += losses.sum()
                    grad_h[s:s + step] = (grad.to(dtype) @ w).to(hidden.dtype)
                    if need_w:
                        grad_w += (grad.to(dtype).t() @ h).float()
                    if need_b:
                        grad_b += grad.sum(0)
            ctx.save_for_backward(grad_h)
            ctx.extra = (grad_w, grad_b, weight.dtype, None if bias is None else bias.dtype)
            return total

        @staticmethod
        def backward(ctx: Any, grad_out: Any) -> Any:
            (grad_h,) = ctx.saved_tensors
            grad_w, grad_b, w_dtype, b_dtype = ctx.extra
            return (grad_h * grad_out.to(grad_h.dtype),
                    None if grad_w is None else (grad_w * grad_out).to(w_dtype),
                    None if grad_b is None else (grad_b * grad_out).to(b_dtype), None, None, None)

    return HeadCrossEntropy


_FUNCTION: Any = None


def head_loss_sum(hidden: Any, head: Any, targets: Any, scale: Any = None) -> Any:
    """Summed cross-entropy over rows of hidden [N, d] against targets [N] (all trained),
    each row's times scale [N] when given."""
    import torch

    global _FUNCTION
    dtype = _matmul_dtype(hidden)
    if not (torch.is_grad_enabled() and (hidden.requires_grad or head.weight.requires_grad)):
        return _loss_no_grad(hidden, head.weight, head.bias, targets, dtype, scale)
    if _FUNCTION is None:
        _FUNCTION = _make_function()
    return _FUNCTION.apply(hidden, head.weight, head.bias, targets, dtype, scale)


def fast_loss_sum(model: Any, batch: dict[str, Any]) -> Any | None:
    """Summed loss through body + gathered head, or None when the model is not the plain kind."""
    parts = split_model(model)
    if parts is None:
        return None
    body, head = parts
    out = body(input_ids=batch["input_ids"], attention_mask=batch.get("attention_mask"),
               position_ids=batch.get("position_ids"), use_cache=False)
    hidden = out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]
    targets = batch["targets"]
    keep = targets != IGNORE
    scale = batch.get("token_scale")
    if scale is None:
        return head_loss_sum(hidden[keep], head, targets[keep])
    return head_loss_sum(hidden[keep], head, targets[keep], scale[keep])


def full_loss_sum(model: Any, batch: dict[str, Any]) -> Any:
    """The reference path: the model's own full logits, float32 cross-entropy."""
    import torch.nn.functional as F

    logits = model(input_ids=batch["input_ids"], attention_mask=batch.get("attention_mask"),
                   position_ids=batch.get("position_ids"), use_cache=False).logits
    targets = batch["targets"]
    scale = batch.get("token_scale")
    losses = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), targets.reshape(-1),
                             ignore_index=IGNORE, reduction="sum" if scale is None else "none")
    return losses if scale is None else (losses * scale.reshape(-1)).sum()


def verify(model: Any, batch: dict[str, Any], run: Any) -> bool:
    """Compare the fast and full paths once (float32, no grad); keep the fast one only if they agree.

    `run(fn)` calls fn(model, batch) inside whatever context the batch needs.
    """
    import torch

    if split_model(model) is None:
        setattr(model, _FAST_ATTR, False)
        return False
    with torch.no_grad():
        fast = float(run(fast_loss_sum))
        full = float(run(full_loss_sum))
    ok = abs(fast - full) <= 1e-3 * max(1.0, abs(full))
    if not ok:
        log.warning("The gathered-logits loss (%.6f) differs from the model's own (%.6f); using the full path", fast, full)
    setattr(model, _FAST_ATTR, ok)
    return ok
