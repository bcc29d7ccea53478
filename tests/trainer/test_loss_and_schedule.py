"""The `loss_average` setting: per token or per example (each example's mean loss, averaged
over the examples), packed and padded alike; and the constant schedule's warm-up."""
from __future__ import annotations

import pytest

from trainer.engine.batching import Batches
from trainer.engine.encode import IGNORE
from trainer.engine.packing import PackedBatches

from test_speed import _assert_same, _examples, _lora, _loss_and_grads, _model


def _trained(example) -> int:
    return sum(1 for x in example.labels[1:] if x != IGNORE)


def test_scale_is_one_over_each_examples_trained_tokens():
    import torch

    from trainer.engine.encode import Example
    from trainer.engine.evaluation import per_example_scale

    a = Example(input_ids=[1, 2, 3, 4], labels=[IGNORE, IGNORE, 3, 4])       # 2 trained targets
    b = Example(input_ids=[5, 6, 7], labels=[IGNORE, 6, 7])                  # 2
    c = Example(input_ids=[8, 9, 10, 11, 12], labels=[IGNORE, 9, 10, 11, 12])  # 4
    packed = PackedBatches([a, b, c], 3, 0, 0).collate([0, 1, 2], "cpu")
    scale = per_example_scale(packed)
    assert scale.shape == packed["targets"].shape
    assert scale[0].tolist() == pytest.approx([0, 0.5, 0.5, 0, 0.5, 0.5, 0, 0.25, 0.25, 0.25, 0.25, 0])
    padded = Batches([a, b, c], 3, 0, 0).collate([0, 1, 2], "cpu")
    scale = per_example_scale(padded)
    assert torch.equal(scale != 0, padded["targets"] != IGNORE)
    assert scale.sum(dim=1).tolist() == pytest.approx([1.0, 1.0, 1.0])


def test_per_example_loss_is_the_mean_of_each_examples_mean(tiny_model_dir):
    """Padded with the model's full head, padded and packed with logits only where trained: the same
    loss and gradients, and the loss is the mean of the examples' own mean losses."""
    import torch

    from trainer.engine.attention import use_packed_attention
    from trainer.engine.evaluation import per_example_scale, summed_loss
    from trainer.engine.head import full_loss_sum

    model, tok = _model(tiny_model_dir)
    model = _lora(model)
    model.eval()  # no dropout
    assert use_packed_attention(model)  # as the engine runs packed rows
    examples = _examples(tok, 6)
    assert len({_trained(e) for e in examples}) > 1   # lengths differ, so the two averages differ
    indices = list(range(len(examples)))
    with torch.no_grad():
        means = [float(full_loss_sum(model, Batches([e], 1, tok.pad_token_id, 0).collate([0], "cpu"))) / _trained(e)
                 for e in examples]
    expected = sum(means) / len(means)

    def per_example(batches, fn):
        batch = batches.collate(indices, "cpu")
        batch["token_scale"] = per_example_scale(batch)
        return _loss_and_grads(model, batch, lambda m, b: fn(m, b) / len(examples))

    reference = per_example(Batches(examples, 6, tok.pad_token_id, 0), full_loss_sum)
    assert reference[0] == pytest.approx(expected, rel=1e-5)
    _assert_same(per_example(Batches(examples, 6, tok.pad_token_id, 0), summed_loss), reference)
    _assert_same(per_example(PackedBatches(examples, 6, tok.pad_token_id, 0), summed_loss), reference)
    tokens = sum(_trained(e) for e in examples)
    per_token = sum(m * _trained(e) for m, e in zip(means, examples)) / tokens
    assert per_token != pytest.approx(expected, rel=1e-5)   # the tiny model is near uniform: close, not equal


def test_token_average_is_unchanged_by_the_setting(tiny_model_dir):
    """Without token weights the loss is the plain summed cross-entropy, as before."""
    import torch

    from trainer.engine.evaluation import summed_loss
    from trainer.engine.head import full_loss_sum

    model, tok = _model(tiny_model_dir)
    examples = _examples(tok, 4)
    batch = PackedBatches(examples, 4, tok.pad_token_id, 0).collate(list(range(4)), "cpu")
    padded = Batches(examples, 4, tok.pad_token_id, 0).collate(list(range(4)), "cpu")
    with torch.no_grad():
        logits = model(input_ids=padded["input_ids"], attention_mask=padded["attention_mask"]).logits
        plain = float(torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.size(-1)),
                                                        padded["targets"].reshape(-1), ignore_index=IGNORE,
                                                        reduction="sum"))
        assert float(full_loss_sum(model, padded)) == pytest.approx(plain, rel=1e-6)
        assert float(summed_loss(model, batch)) == pytest.approx(plain, rel=1e-4)


def test_a_run_averaging_per_example_trains(make_run):
    from trainer.engine.loop import train
    from trainer.run import status as st
    from trainer.run.reader import Run

    run_dir = make_run(loss_average="example")
    assert train(run_dir, verbose=False) == st.DONE
    run = Run(run_dir)
    ev = run.eval()
    assert ev["before"]["loss"] > ev["after"]["loss"]
    assert all(r["loss"] > 0 for r in run.train_records())


def test_the_constant_schedule_warms_up(make_run):
    """transformers' "constant" schedule ignores the warm-up; the run's constant rate comes after it."""
    from trainer.engine.loop import train
    from trainer.run import status as st
    from trainer.run.reader import Run

    run_dir = make_run(lr_scheduler="constant", warmup_ratio=0.25, learning_rate=2e-4)   # 12 steps: 3 warm up
    assert train(run_dir, verbose=False) == st.DONE
    rates = [r["learning_rate"] for r in Run(run_dir).train_records()]
    assert rates[0] == 0.0 and rates[1] < rates[2] < 2e-4
    assert rates[3:] == [pytest.approx(2e-4)] * (len(rates) - 3)
