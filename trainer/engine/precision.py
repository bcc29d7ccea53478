"""The training precision, proven on the device before the first step.

`precision: auto` is resolved by the device check (trainer.engine.device):
bf16 autocast where the hardware has fast bf16 (NVIDIA compute capability
8.0+, CPUs with AVX-512 BF16 or AMX), fp16 with a grad scaler on older NVIDIA
GPUs, float32 otherwise. A fast number format that silently computes nonsense
on some driver or CPU would waste a whole run, so before the first step one
tiny forward and backward pass runs in the chosen precision and in float32,
and training falls back to float32 when the two disagree or the fast one fails.
"""
from __future__ import annotations

import logging
import math
from typing import Any, Callable

log = logging.getLogger("dragonfarm.engine")
NAMES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
LOSS_TOLERANCE = 0.05      # relative difference of the loss
GRAD_TOLERANCE = 0.25      # relative difference of the gradient norm

Measure = Callable[[str], tuple[float, float]]


def settle(precision: str, measure: Measure) -> tuple[str, str | None]:
    """(precision to train in, a sentence for the log and status when falling back, else None).

    `measure(p)` runs one forward and backward pass in precision p and returns
    (loss, gradient norm); it may raise.
    """
    if precision == "fp32":
        return precision, None
    name = NAMES.get(precision, precision)
    try:
        ref_loss, ref_grad = measure("fp32")
    except Exception as exc:  # noqa: BLE001 - float32 itself failing is the real error; let training show it
        log.warning("The float32 check pass failed (%s); training will show the error", exc)
        return "fp32", None
    try:
        loss, grad = measure(precision)
    except Exception as exc:  # noqa: BLE001 - any failure of the fast format means: do not use it
        return "fp32", f"{name} did not work on this device ({type(exc).__name__}: {exc}); training in float32 instead."
    finite = all(math.isfinite(x) for x in (loss, grad))
    loss_off = abs(loss - ref_loss) / max(abs(ref_loss), 1e-6) if finite else math.inf
    grad_off = abs(grad - ref_grad) / max(abs(ref_grad), 1e-6) if finite else math.inf
    if loss_off > LOSS_TOLERANCE or grad_off > GRAD_TOLERANCE:
        return "fp32", (f"{name} disagreed with float32 on this device (loss {loss:.4g} vs {ref_loss:.4g}, "
                        f"gradient norm {grad:.4g} vs {ref_grad:.4g}); training in float32 instead.")
    log.info("%s agrees with float32 on this device (loss %.5g vs %.5g, gradient norm %.4g vs %.4g)",
             name, loss, ref_loss, grad, ref_grad)
    return precision, None


def model_measure(model: Any, batch: dict[str, Any], device: str, loss_fn: Callable[[Any, Any], Any]) -> Measure:
    """A `measure` that runs the real model on one real batch, leaving no gradients behind."""
    import torch

    from trainer.engine.evaluation import autocast

    params = [p for p in model.parameters() if p.requires_grad]

    def measure(precision: str) -> tuple[float, float]:
        for p in params:
            p.grad = None
        try:
            with autocast(device, precision):
                loss = loss_fn(model, batch)
            loss.backward()
            grads = [p.grad.float().norm() for p in params if p.grad is not None]
            norm = float(torch.stack(grads).norm()) if grads else 0.0
            return float(loss.detach()), norm
        finally:
            for p in params:
                p.grad = None

    return measure


def store_frozen_weights(model: Any, precision: str) -> list[Any]:
    """Keep the frozen weights of the body's linear layers in the autocast dtype.

    Autocast casts a frozen weight again at every forward pass (it caches only
    weights that train), which on a CPU is a copy of the whole body per pass.
    The matrix products see the same numbers either way: autocast would round
    the weight to this dtype before each product. The embedding and the output
    head keep theirs (the residual stream starts in float32). Call only once
    the precision is settled: every pass after it must run under autocast.

    It also stops peft's LoRA layers casting their input to the LoRA weights'
    float32 first (autocast casts it straight back to this dtype for the
    product: two copies of the activations per layer and pass, same numbers).
    Returns the converted parameters (for restore_frozen_weights)."""
    import torch

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    if dtype is None:
        return []
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    keep = {id(p) for m in (base.get_input_embeddings(), base.get_output_embeddings()) if m is not None
            for p in m.parameters()}
    converted = []
    for module in base.modules():
        if hasattr(module, "lora_A"):
            module.cast_input_dtype_enabled = False
        if not isinstance(module, torch.nn.Linear):
            continue
        for param in (module.weight, module.bias):
            if param is None or param.requires_grad or id(param) in keep or param.dtype == dtype:
                continue
            param.data = param.data.to(dtype)
            converted.append(param)
    return converted


def restore_frozen_weights(model: Any, converted: list[Any]) -> None:
    """Undo store_frozen_weights: float32 weights (holding the rounded numbers, which is
    what autocast computes with anyway) and LoRA layers that cast their input."""
    import torch

    for param in converted:
        param.data = param.data.to(torch.float32)
    for module in model.modules():
        if hasattr(module, "lora_A"):
            module.cast_input_dtype_enabled = True
