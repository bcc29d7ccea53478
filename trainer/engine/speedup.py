"""Before the first step: choose the fast paths and prove them on this model and device.

1. Packing (trainer.engine.packing) when the run's `packing` setting is on and
   the model's attention can run per example (trainer.engine.attention).
2. Logits only at trained positions (trainer.engine.head), kept only if it
   gives the model's own loss on a real batch.
3. The precision (trainer.engine.precision): one forward and backward pass in
   the chosen precision and in float32; float32 if they disagree.
"""
from __future__ import annotations

import logging
from typing import Any

from trainer.engine.batching import make_batches

log = logging.getLogger("dragonfarm.engine")


def probe_batch(batches: Any, device: str, examples: int = 2) -> dict[str, Any]:
    """A small real batch: the shortest few training examples."""
    shortest = sorted(range(len(batches.examples)), key=lambda i: len(batches.examples[i].input_ids))[:examples]
    return batches.collate(shortest, device)


def prepare_speed(model: Any, cfg: Any, train_examples: list, eval_examples: list, pad_id: int, device: str,
                  precision: str, session: Any) -> tuple[Any, Any, str]:
    """(training batches, held-out batches, precision to train in)."""
    from trainer.engine.attention import use_packed_attention
    from trainer.engine.evaluation import check_fast_loss, summed_loss
    from trainer.engine.precision import model_measure, settle

    longest = max((len(e.input_ids) for e in train_examples + eval_examples), default=0)
    packed = bool(cfg.packing) and use_packed_attention(model, longest)
    if cfg.packing and not packed:
        log.info("This model's attention cannot run per example; training without packing")
    train = make_batches(train_examples, cfg.batch_size, pad_id, cfg.seed, packed)
    held_out = make_batches(eval_examples, cfg.batch_size, pad_id, cfg.seed, packed)
    session.message("Checking the fastest way to train on this device")
    batch = probe_batch(train, device)
    fast = check_fast_loss(model, batch)
    rows = "padded"
    if packed:
        from trainer.engine.packing import shared_prefix

        shared = shared_prefix(train_examples)
        rows = f"packed, about {train.token_budget} tokens a row" + (
            f", the first {shared} tokens (the same in every example) held once a row" if shared else "")
    log.info("Batches: %s; logits %s", rows,
             "only at trained positions" if fast else "at every position (this model's head is not plain)")
    was_training = model.training
    model.eval()  # no dropout: both passes must see the same network
    chosen, why = settle(precision, model_measure(model, batch, device, summed_loss))
    model.train(was_training)
    if why:
        log.warning(why)
        session.status.update(precision=chosen, precision_note=why)
        session.message(why)
    return train, held_out, chosen


def keep_frozen_weights_low(model: Any, batches: Any, device: str, precision: str) -> bool:
    """Store the frozen body weights in the training precision (precision.store_frozen_weights),
    proven by one pass on a real batch: a model that runs a layer outside autocast (in float32
    on purpose) would fail at its first step, so it keeps its float32 weights instead."""
    from trainer.engine.evaluation import summed_loss
    from trainer.engine.precision import model_measure, restore_frozen_weights, store_frozen_weights

    if precision == "fp32":
        return False
    converted = store_frozen_weights(model, precision)  # may be none (a model loaded in bf16): still check
    was_training = model.training
    model.eval()
    try:
        model_measure(model, probe_batch(batches, device), device, summed_loss)(precision)
    except Exception as exc:  # noqa: BLE001 - any failure means: keep this model's weights as they were
        restore_frozen_weights(model, converted)
        log.info("Frozen weights kept in float32: this model did not run with them in %s (%s: %s)",
                 precision, type(exc).__name__, exc)
        return False
    finally:
        model.train(was_training)
    log.info("Frozen weights of the body kept in %s (%d tensors)", precision, len(converted))
    return True
