"""Training speed paths: packing, logits only at trained positions, the precision check.

Each fast path must give the loss (and gradients) of the plain one.
"""
from __future__ import annotations

import json
import math

import pytest

from dfhelpers import example_chats
from trainer.engine.encode import IGNORE, encode_chat
from trainer.engine.batching import Batches
from trainer.engine.packing import PackedBatches, deal, shared_prefix


def _examples(tokenizer, n: int = 12, max_length: int = 256):
    return [encode_chat(tokenizer, c["messages"], max_length)[0] for c in example_chats(n)]


def _model(folder):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32, attn_implementation="sdpa")
    return model, AutoTokenizer.from_pretrained(str(folder))


def _lora(model):
    from peft import LoraConfig, get_peft_model

    model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, task_type="CAUSAL_LM",
                                             target_modules=["q_proj", "v_proj", "down_proj"]))
    for name, p in model.named_parameters():  # non-zero B so every LoRA weight has a gradient
        if "lora_B" in name:
            p.data.normal_(0, 0.02)
    return model


def _loss_and_grads(model, batch, fn):
    for p in model.parameters():
        p.grad = None
    loss = fn(model, batch)
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return float(loss.detach()), grads


def _assert_same(a, b, rel=1e-4):
    (la, ga), (lb, gb) = a, b
    assert abs(la - lb) / abs(lb) < rel, (la, lb)
    assert ga.keys() == gb.keys() and ga
    for name in ga:
        scale = float(gb[name].abs().max()) or 1.0
        assert float((ga[name] - gb[name]).abs().max()) / scale < 1e-3, name


def _compare_packed_to_padded(folder, n: int = 12):
    from trainer.engine.attention import use_packed_attention
    from trainer.engine.evaluation import summed_loss
    from trainer.engine.head import full_loss_sum

    model, tok = _model(folder)
    model = _lora(model)
    model.eval()  # no dropout
    examples = _examples(tok, n)
    indices = list(range(n))
    padded = Batches(examples, 4, tok.pad_token_id, 0).collate(indices, "cpu")
    reference = _loss_and_grads(model, padded, full_loss_sum)       # the model's own path, padded
    gathered = _loss_and_grads(model, padded, summed_loss)          # logits only where trained, padded
    assert use_packed_attention(model)
    packed = _loss_and_grads(model, PackedBatches(examples, 4, tok.pad_token_id, 0).collate(indices, "cpu"),
                             summed_loss)
    _assert_same(gathered, reference)
    _assert_same(packed, reference)


def test_packed_gathered_loss_equals_padded_full_loss(tiny_model_dir):
    _compare_packed_to_padded(tiny_model_dir)


@pytest.mark.slow
def test_packed_gathered_loss_equals_padded_full_loss_smollm2(smollm2_dir):
    _compare_packed_to_padded(smollm2_dir, n=8)


def _tiny_gemma3(folder, tmp_path, window):
    """A 2-layer Gemma 3 (a sliding-window layer, then a full one) with random weights."""
    import torch
    from transformers import AutoTokenizer, Gemma3ForCausalLM, Gemma3TextConfig

    tok = AutoTokenizer.from_pretrained(str(folder))
    config = Gemma3TextConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                              num_attention_heads=4, num_key_value_heads=2, head_dim=16, sliding_window=window,
                              layer_types=["sliding_attention", "full_attention"], max_position_embeddings=512,
                              pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id,
                              eos_token_id=tok.eos_token_id)
    torch.manual_seed(0)
    out = tmp_path / f"gemma3-{window}"
    Gemma3ForCausalLM(config).save_pretrained(str(out))
    tok.save_pretrained(str(out))
    return out


def test_sliding_window_model_packs_when_every_example_fits_the_window(tiny_model_dir, tmp_path):
    """Gemma 3 runs sliding-window attention: packed only when no example is longer than the window,
    and then with the loss and gradients of its own padded path."""
    from trainer.engine.attention import use_packed_attention
    from trainer.engine.evaluation import summed_loss
    from trainer.engine.head import full_loss_sum

    model, tok = _model(_tiny_gemma3(tiny_model_dir, tmp_path, window=256))
    model = _lora(model)
    model.eval()
    examples = _same_system_examples(tok, 6)
    longest = max(len(e.input_ids) for e in examples)
    assert longest > 32
    assert not use_packed_attention(model)              # lengths unknown
    assert not use_packed_attention(model, 257)         # an example longer than the window
    assert use_packed_attention(model, longest)
    rows = list(range(6))
    packed = PackedBatches(examples, 6, tok.pad_token_id, 0, share_beginning=True).collate(rows, "cpu")
    assert packed["prefix"] > 0
    padded = Batches(examples, 6, tok.pad_token_id, 0).collate(rows, "cpu")
    _assert_same(_loss_and_grads(model, packed, summed_loss), _loss_and_grads(model, padded, full_loss_sum))

    small, tok = _model(_tiny_gemma3(tiny_model_dir, tmp_path, window=32))
    assert not use_packed_attention(small, longest)  # the window would cut into the examples: padded batches


def test_attention_stays_inside_each_example(tiny_model_dir):
    """Changing the second example of a row leaves the first example's loss untouched."""
    import torch

    from trainer.engine.attention import use_packed_attention
    from trainer.engine.evaluation import summed_loss

    model, tok = _model(tiny_model_dir)
    assert use_packed_attention(model)
    examples = _examples(tok, 3)
    other = _examples(tok, 8)[7]
    assert other.input_ids != examples[1].input_ids

    def first_loss(row):
        batch = PackedBatches(row, 4, tok.pad_token_id, 0).collate([0, 1], "cpu")
        n = len(row[0].input_ids)
        batch["targets"][0, n:] = IGNORE  # score the first example only
        with torch.no_grad():
            return float(summed_loss(model, batch))

    assert first_loss([examples[0], examples[1]]) == pytest.approx(first_loss([examples[0], other]), rel=1e-6)
    # the test can fail: one causal pass over the whole row lets the second example see the first
    def second_loss(row, whole_row=False):
        batch = PackedBatches(row, 4, tok.pad_token_id, 0).collate([0, 1], "cpu")
        batch["targets"][0, : len(row[0].input_ids)] = IGNORE
        if whole_row:
            batch["segments"] = [sum(batch["segments"])]
        with torch.no_grad():
            return float(summed_loss(model, batch))

    alone = PackedBatches([examples[1]], 4, tok.pad_token_id, 0).collate([0], "cpu")
    with torch.no_grad():
        expected = float(summed_loss(model, alone))
    assert second_loss([examples[0], examples[1]]) == pytest.approx(expected, rel=1e-5)
    assert second_loss([other, examples[1]]) == pytest.approx(expected, rel=1e-5)
    assert second_loss([other, examples[1]], whole_row=True) != pytest.approx(expected, rel=1e-5)


def test_chunked_head_equals_one_chunk(tiny_model_dir, monkeypatch):
    from trainer.engine import head
    from trainer.engine.evaluation import summed_loss

    model, tok = _model(tiny_model_dir)
    model = _lora(model)
    model.eval()
    batch = Batches(_examples(tok, 6), 6, tok.pad_token_id, 0).collate(list(range(6)), "cpu")
    whole = _loss_and_grads(model, batch, summed_loss)
    monkeypatch.setattr(head, "chunk_rows", lambda vocab: 7)
    _assert_same(_loss_and_grads(model, batch, summed_loss), whole)


def test_frozen_weights_kept_in_bf16_give_the_same_loss_and_gradients(tiny_model_dir):
    """Autocast rounds a frozen weight to bf16 before every product; storing it rounded once gives
    the same numbers. Only the body's frozen linear weights change; the embedding, the head and
    the LoRA weights stay float32."""
    import torch

    from trainer.engine import head
    from trainer.engine.evaluation import autocast, summed_loss
    from trainer.engine.precision import store_frozen_weights

    model, tok = _model(tiny_model_dir)
    model = _lora(model)
    model.eval()
    batch = Batches(_examples(tok, 6), 6, tok.pad_token_id, 0).collate(list(range(6)), "cpu")

    def bf16_loss(m, b):
        with autocast("cpu", "bf16"):
            return summed_loss(m, b)

    before = _loss_and_grads(model, batch, bf16_loss)
    assert store_frozen_weights(model, "fp32") == []
    assert store_frozen_weights(model, "bf16")
    after = _loss_and_grads(model, batch, bf16_loss)
    assert after[0] == before[0]
    assert all(torch.equal(after[1][n], before[1][n]) for n in before[1])
    dtypes = {n: p.dtype for n, p in model.named_parameters()}
    assert all(d == torch.float32 for n, d in dtypes.items() if "lora_" in n or "embed" in n or "norm" in n)
    assert any(d == torch.bfloat16 for n, d in dtypes.items() if n.endswith("base_layer.weight"))
    assert all(not m.cast_input_dtype_enabled for m in model.modules() if hasattr(m, "lora_A"))
    # the head's bf16 copy is made once and reused while the weight is unchanged
    weight = model.get_base_model().get_output_embeddings().weight
    first = head.cast_weight(weight, torch.bfloat16)
    assert head.cast_weight(weight, torch.bfloat16) is first
    with torch.no_grad():
        weight.mul_(1.0)  # changed in place: a new copy
    assert head.cast_weight(weight, torch.bfloat16) is not first


def test_frozen_weights_stay_float32_for_a_model_that_runs_a_layer_outside_autocast(tiny_model_dir):
    """A model that runs one layer in float32 on purpose (autocast switched off around it)
    would fail at its first step with bf16 weights: the check pass finds it and puts the
    float32 weights back, and training in bf16 still works."""
    import torch

    from trainer.engine.evaluation import autocast, summed_loss
    from trainer.engine.speedup import keep_frozen_weights_low

    model, tok = _model(tiny_model_dir)
    model = _lora(model)
    examples = _examples(tok, 4)
    batches = Batches(examples, 4, tok.pad_token_id, 0)
    assert keep_frozen_weights_low(model, batches, "cpu", "fp32") is False  # nothing to do in float32

    plain, _ = _model(tiny_model_dir)
    plain = _lora(plain)
    assert keep_frozen_weights_low(plain, Batches(examples, 4, tok.pad_token_id, 0), "cpu", "bf16") is True
    assert any(p.dtype == torch.bfloat16 for n, p in plain.named_parameters() if n.endswith("base_layer.weight"))

    mlp = model.get_base_model().model.layers[0].mlp.down_proj.base_layer

    def float32_on_purpose(x, layer=mlp):
        with torch.autocast("cpu", enabled=False):
            return torch.nn.functional.linear(x.float(), layer.weight, layer.bias)

    mlp.forward = float32_on_purpose
    assert keep_frozen_weights_low(model, batches, "cpu", "bf16") is False
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert all(m.cast_input_dtype_enabled for m in model.modules() if hasattr(m, "lora_A"))
    batch = batches.collate(list(range(4)), "cpu")
    with autocast("cpu", "bf16"):
        loss = summed_loss(model, batch)
    loss.backward()
    assert torch.isfinite(loss)


def test_fast_head_falls_back_when_it_disagrees(tiny_model_dir, monkeypatch):
    import torch

    from trainer.engine import head
    from trainer.engine.evaluation import check_fast_loss, summed_loss

    model, tok = _model(tiny_model_dir)
    batch = Batches(_examples(tok, 2), 2, tok.pad_token_id, 0).collate([0, 1], "cpu")
    assert check_fast_loss(model, batch)
    real = head.head_loss_sum
    monkeypatch.setattr(head, "head_loss_sum", lambda h, hd, t: real(h, hd, t) * 1.5)  # a model with a scaled head
    assert not check_fast_loss(model, batch)
    with torch.no_grad():
        assert float(summed_loss(model, batch)) == pytest.approx(float(head.full_loss_sum(model, batch)), rel=1e-6)


def test_packed_epochs_depend_only_on_seed_and_epoch():
    from trainer.engine.encode import Example

    examples = [Example([1] * n, [1] * n) for n in [5, 80, 33, 7, 120, 64, 9, 40, 41, 3, 99]]
    a, b = PackedBatches(examples, 3, 0, 7), PackedBatches(examples, 3, 0, 7)
    assert len(a) == math.ceil(len(examples) / 3)
    for epoch in range(3):
        rows = a.epoch_order(epoch)
        assert rows == b.epoch_order(epoch)
        assert len(rows) == len(a)
        assert sorted(i for r in rows for i in r) == list(range(len(examples)))
    assert a.epoch_order(0) != a.epoch_order(1)
    assert sorted(i for r in a.in_order() for i in r) == list(range(len(examples)))


def test_deal_balances_rows():
    lengths = [100, 90, 80, 10, 10, 10, 10, 10]
    rows = deal(sorted(range(8), key=lambda i: -lengths[i]), lengths, 3)
    loads = sorted(sum(lengths[i] for i in r) for r in rows)
    assert loads[-1] - loads[0] <= max(lengths)


def test_packed_collate_restarts_positions_and_shifts_inside_examples():
    from trainer.engine.encode import Example

    examples = [Example([11, 12, 13], [IGNORE, 12, 13]), Example([21, 22], [IGNORE, 22])]
    batch = PackedBatches(examples, 2, 0, 0).collate([0, 1], "cpu")
    assert batch["input_ids"].tolist() == [[11, 12, 13, 21, 22]]
    assert batch["position_ids"].tolist() == [[0, 1, 2, 0, 1]]
    assert batch["targets"].tolist() == [[12, 13, IGNORE, 22, IGNORE]]
    assert batch["segments"] == [3, 2] and batch["attention_mask"] is None


def test_packed_collate_holds_a_shared_untrained_beginning_once():
    from trainer.engine.encode import Example

    examples = [Example([1, 2, 3, 14, 15], [IGNORE, IGNORE, IGNORE, IGNORE, 15]),
                Example([1, 2, 3, 24, 25], [IGNORE, IGNORE, IGNORE, IGNORE, 25])]
    assert PackedBatches(examples, 2, 0, 0).collate([0, 1], "cpu")["prefix"] == 0  # unless asked for
    batch = PackedBatches(examples, 2, 0, 0, share_beginning=True).collate([0, 1], "cpu")
    assert batch["prefix"] == 3 and batch["segments"] == [2, 2]
    assert batch["input_ids"].tolist() == [[1, 2, 3, 14, 15, 24, 25]]
    assert batch["position_ids"].tolist() == [[0, 1, 2, 3, 4, 3, 4]]
    # the shared tokens are scored on nothing; each example's trained tokens are scored in its own segment
    assert batch["targets"].tolist() == [[IGNORE, IGNORE, IGNORE, 15, IGNORE, 25, IGNORE]]
    assert batch["tokens"] == 10  # the examples' own tokens


def test_shared_prefix_stops_before_a_trained_token_a_difference_or_a_whole_example():
    from trainer.engine.encode import Example

    def ex(ids, trained_from):
        return Example(ids, [IGNORE] * trained_from + ids[trained_from:])

    assert shared_prefix([ex([1, 2, 3, 4, 5], 4)]) == 0                      # one example: nothing to share
    assert shared_prefix([ex([1, 2, 3, 4, 5], 4), ex([1, 2, 3, 4, 6], 4)]) == 3  # token 3 is scored on a trained 4/5
    assert shared_prefix([ex([1, 2, 3, 4, 5], 2), ex([1, 2, 3, 4, 6], 4)]) == 1  # the first example trains from 2
    assert shared_prefix([ex([1, 2, 9, 4, 5], 4), ex([1, 2, 3, 4, 6], 4)]) == 2  # differs at 2
    assert shared_prefix([ex([1, 2, 3], 3), ex([1, 2, 3, 4, 6], 4)]) == 2    # every example keeps a token
    assert shared_prefix([ex([7, 2, 3], 2), ex([1, 2, 3], 2)]) == 0


def _same_system_examples(tokenizer, n):
    """Chats without a system turn: SmolLM2's template gives each the same system prompt."""
    chats = [[m for m in c["messages"] if m["role"] != "system"] for c in example_chats(n)]
    return [encode_chat(tokenizer, chat, 256)[0] for chat in chats]


@pytest.mark.parametrize("average", ["token", "example"])
def test_a_shared_beginning_gives_the_loss_and_gradients_of_whole_examples(tiny_model_dir, average):
    _compare_shared_beginning(tiny_model_dir, average)


@pytest.mark.slow
def test_a_shared_beginning_gives_the_loss_and_gradients_of_whole_examples_smollm2(smollm2_dir):
    _compare_shared_beginning(smollm2_dir, "example")


def _compare_shared_beginning(folder, average):
    """Held once at the front of the row, the template's shared beginning gives the same loss and
    gradients as each example with its own copy (packed) and as the padded batch."""
    from trainer.engine.attention import use_packed_attention
    from trainer.engine.evaluation import per_example_scale, summed_loss
    from trainer.engine.head import full_loss_sum

    model, tok = _model(folder)
    model = _lora(model)
    model.eval()
    assert use_packed_attention(model)
    examples = _same_system_examples(tok, 6)
    rows = list(range(6))
    from trainer.engine.batching import make_batches

    shared = make_batches(examples, 6, tok.pad_token_id, 0, packed=True).collate(rows, "cpu")  # as the engine does
    assert shared["prefix"] > 20  # the whole system turn and the start of the user's

    def weighted(fn):
        def run(m, batch):
            if average == "example":
                batch = dict(batch, token_scale=per_example_scale(batch))
            return fn(m, batch)
        return run

    with_prefix = _loss_and_grads(model, shared, weighted(summed_loss))
    own_copies = PackedBatches(examples, 6, tok.pad_token_id, 0).collate(rows, "cpu")
    assert own_copies["prefix"] == 0 and own_copies["input_ids"].shape[1] > shared["input_ids"].shape[1]
    _assert_same(with_prefix, _loss_and_grads(model, own_copies, weighted(summed_loss)))
    padded = Batches(examples, 6, tok.pad_token_id, 0).collate(rows, "cpu")
    _assert_same(with_prefix, _loss_and_grads(model, padded, weighted(full_loss_sum)))


def test_short_attention_after_a_shared_beginning_equals_masked_attention():
    """The bfloat16 short path with keys before the queries (a shared beginning) is causal attention
    aligned to the last key, and its gradients reach those keys."""
    import torch

    from trainer.engine.attention import _short_attention

    torch.manual_seed(1)
    q, g = torch.randn(1, 3, 20, 16, dtype=torch.float64), torch.randn(1, 3, 20, 16, dtype=torch.float64)
    k, v = (torch.randn(1, 3, 29, 16, dtype=torch.float64) for _ in range(2))
    mask = torch.ones(20, 29, dtype=torch.bool).tril_(9)

    def run(fn):
        leaves = [x.detach().clone().requires_grad_() for x in (q, k, v)]
        out = fn(*leaves)
        out.backward(g)
        return [out.detach()] + [x.grad for x in leaves]

    masked = run(lambda a, b, c: torch.nn.functional.scaled_dot_product_attention(a, b, c, attn_mask=mask))
    short = run(lambda a, b, c: _short_attention().apply(a, b, c, 16 ** -0.5))
    for a, b in zip(masked, short):
        assert torch.allclose(a, b, atol=1e-10)


# ----- precision -----------------------------------------------------------
def test_precision_kept_when_it_agrees():
    from trainer.engine.precision import settle

    assert settle("bf16", lambda p: (2.0, 1.0) if p == "fp32" else (2.01, 1.02)) == ("bf16", None)


def test_precision_falls_back_when_fake_device_disagrees():
    from trainer.engine.precision import settle

    chosen, why = settle("bf16", lambda p: (2.0, 1.0) if p == "fp32" else (7.5, 1.0))
    assert chosen == "fp32" and "bfloat16 disagreed" in why
    chosen, why = settle("fp16", lambda p: (2.0, 1.0) if p == "fp32" else (float("nan"), 1.0))
    assert chosen == "fp32" and "float16" in why


def test_precision_falls_back_when_it_fails():
    from trainer.engine.precision import settle

    def measure(p):
        if p != "fp32":
            raise RuntimeError("no kernel for this dtype")
        return 2.0, 1.0

    chosen, why = settle("bf16", measure)
    assert chosen == "fp32" and "no kernel" in why


def test_run_falls_back_to_fp32_and_says_so(make_run, monkeypatch):
    from trainer.engine import precision
    from trainer.engine.loop import train
    from trainer.run.reader import Run

    real = precision.model_measure

    def fake(model, batch, device, loss_fn):
        measure = real(model, batch, device, loss_fn)
        return lambda p: measure(p) if p == "fp32" else (123.0, 1.0)  # a device whose bf16 is broken

    monkeypatch.setattr(precision, "model_measure", fake)
    run_dir = make_run("prec", precision="bf16", max_steps=2, num_samples=0)
    assert train(run_dir, verbose=False) == "done"
    status = Run(run_dir).status()
    assert status["precision"] == "fp32" and "disagreed" in status["precision_note"]
    assert "disagreed" in (run_dir / "logs" / "trainer.log").read_text()


def test_resumed_run_does_not_measure_the_base_model_again(make_run, monkeypatch):
    from trainer.engine import loop
    from trainer.run.reader import Run

    run_dir = make_run("resume", max_steps=4, save_every=2, eval_every=2)
    assert loop.train(run_dir, verbose=False) == "done"
    before = Run(run_dir).eval()["before"]
    calls = []
    monkeypatch.setattr(loop.Trainer, "_before_training", lambda self: calls.append(1))
    assert loop.train(run_dir, resume=True, verbose=False) == "done"
    assert calls == [] and Run(run_dir).eval()["before"] == before


def test_base_replies_come_after_the_first_step_and_from_the_base_model(make_run, monkeypatch):
    """The first training step does not wait for the base model's sample replies; they are still
    the base model's (adapter switched off), written once, and not counted as training time."""
    from trainer.engine import loop
    from trainer.run.progress import read_progress
    from trainer.run.reader import Run

    run_dir = make_run("base-after", max_steps=3, eval_every=100, num_samples=2)
    seen = []
    original = loop.Trainer._base_replies

    def spy(self):
        seen.append([r["step"] for r in read_progress(run_dir) if "loss" in r])
        adapter_on = []
        real = self._replies

        def replies(prompts):
            from peft.tuners.tuners_utils import BaseTunerLayer

            layers = [m for m in self.model.modules() if isinstance(m, BaseTunerLayer)]
            adapter_on.append(bool(layers) and not all(m.disable_adapters for m in layers))
            return real(prompts)

        self._replies = replies
        original(self)
        self._replies = real
        seen.append(adapter_on)

    monkeypatch.setattr(loop.Trainer, "_base_replies", spy)
    assert loop.train(run_dir, verbose=False) == "done"
    assert seen == [[1], [False]]  # once, after step 1's line, with the adapter off
    samples = Run(run_dir).samples()
    assert len(samples) == 2 and all(s.get("base") is not None and s.get("finetuned") is not None for s in samples)


def test_sample_replies_in_one_batch_equal_one_by_one(tiny_model_dir):
    from trainer.engine.evaluation import generate_replies, generate_reply
    from trainer.run.decoding import Decoding

    model, tok = _model(tiny_model_dir)
    prompts = [[{"role": "user", "content": "Hi"}],
               [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2 plus 3? Say it."}]]
    side = tok.padding_side
    decoding = Decoding(max_new_tokens=6)  # the shared decoding, greedy with the light repetition penalty
    batched = generate_replies(model, tok, prompts, "cpu", decoding)
    assert tok.padding_side == side  # restored
    assert batched == [generate_reply(model, tok, p, "cpu", decoding) for p in prompts]


def test_short_attention_equals_fused_attention():
    """The CPU bfloat16 path for short segments computes causal attention and its gradients exactly
    (checked in float64), and close to float32 in bfloat16."""
    import torch

    from trainer.engine.attention import _short_attention

    torch.manual_seed(0)
    q, k, v, g = (torch.randn(1, 3, 37, 16, dtype=torch.float64) for _ in range(4))

    def run(fn, dtype):
        leaves = [x.detach().to(dtype).requires_grad_() for x in (q, k, v)]
        out = fn(*leaves)
        out.backward(g.to(dtype))
        return [out.detach().double()] + [x.grad.double() for x in leaves]

    fused = run(lambda a, b, c: torch.nn.functional.scaled_dot_product_attention(a, b, c, is_causal=True), torch.float64)
    short = run(lambda a, b, c: _short_attention().apply(a, b, c, 16 ** -0.5), torch.float64)
    for a, b in zip(fused, short):
        assert torch.allclose(a, b, atol=1e-10)
    low = run(lambda a, b, c: _short_attention().apply(a, b, c, 16 ** -0.5), torch.bfloat16)
    for a, b in zip(fused, low):
        assert (a - b).abs().max() < 0.1 * a.abs().max()


def test_a_row_in_pieces_gives_the_same_loss_and_gradients(tiny_model_dir):
    """On a CPU a long packed row runs as several passes: the summed loss and gradients do not change."""
    from trainer.engine.attention import use_packed_attention
    from trainer.engine.evaluation import summed_loss

    model, tok = _model(tiny_model_dir)
    model = _lora(model)
    model.eval()
    assert use_packed_attention(model)
    examples = _examples(tok, 12)
    packed = PackedBatches(examples, 12, tok.pad_token_id, 0)
    row = list(range(12))
    budget = sum(packed.lengths) // 3
    parts = packed.pieces(row, budget)
    assert len(parts) >= 3 and sorted(i for p in parts for i in p) == row
    assert max(sum(packed.lengths[i] for i in p) for p in parts) <= budget + max(packed.lengths)
    assert packed.pieces(row, None) == [row] and packed.pieces(row, 10 ** 6) == [row]
    whole = _loss_and_grads(model, packed.collate(row, "cpu"), summed_loss)

    def in_pieces(m, _batch):
        return sum(summed_loss(m, packed.collate(p, "cpu")) for p in parts)

    _assert_same(_loss_and_grads(model, None, in_pieces), whole, rel=1e-5)


def test_finetuned_samples_come_from_the_kept_best_adapter(make_run, monkeypatch):
    """When the best held-out point was not the last step, the sample replies after training come
    from adapter-best/ (what Try it, merge and export use), and samples.json says so."""
    import torch
    from safetensors.torch import load_file, save_file

    from trainer.engine import best as best_mod
    from trainer.engine import loop
    from trainer.run.reader import Run

    run_dir = make_run("best-samples", max_steps=3, eval_every=100, num_samples=2, learning_rate=5e-2)
    real = best_mod.BestKeeper.after_eval

    def after_eval(self, step, loss, model, tokenizer, final=False):
        stop = real(self, step, loss, model, tokenizer, final)
        if final:  # pretend an earlier point was best: a kept adapter equal to the base model (B = 0)
            model.save_pretrained(str(self.best_dir))
            path = self.best_dir / "adapter_model.safetensors"
            save_file({k: torch.zeros_like(v) if "lora_B" in k else v for k, v in load_file(str(path)).items()},
                      str(path))
        return stop

    monkeypatch.setattr(best_mod.BestKeeper, "after_eval", after_eval)
    lora_b_zero = []
    real_replies = loop.Trainer._replies

    def replies(self, prompts):
        lora_b_zero.append(all(float(p.abs().max()) == 0 for n, p in self.model.named_parameters() if "lora_B" in n))
        return real_replies(self, prompts)

    monkeypatch.setattr(loop.Trainer, "_replies", replies)
    assert loop.train(run_dir, verbose=False) == "done"
    assert lora_b_zero == [False, True]  # base replies (adapter switched off, B trained), then adapter-best's
    data = json.loads((run_dir / "samples.json").read_text())
    assert data["finetuned_adapter"] == "adapter-best"
    samples = Run(run_dir).samples()
    assert samples and all(s["finetuned"] == s["base"] for s in samples)


def test_trainer_threads_spin_only_briefly(tmp_path, monkeypatch):
    """`dragonfarm train` sets a short OpenMP spin before torch loads, unless the person set one."""
    import os

    from trainer.cli import main
    from trainer.engine.threads import SHORT_SPIN

    for name in SHORT_SPIN:
        monkeypatch.delenv(name, raising=False)
    assert main(["train", str(tmp_path / "no-such-run")]) != 0  # fails on the folder, after the setting
    assert all(os.environ.get(name) == value for name, value in SHORT_SPIN.items())
    monkeypatch.setenv("KMP_BLOCKTIME", "200")
    main(["train", str(tmp_path / "no-such-run")])
    assert os.environ["KMP_BLOCKTIME"] == "200"
