"""The exact trained tokens, against SmolLM2's real chat template."""
from trainer.engine.encode import IGNORE, encode_chat, encode_file
from trainer.engine.models import DEFAULT_CHAT_TEMPLATE


def trained_text(tok, example):
    return [tok.decode([i]) for i, lab in zip(example.input_ids, example.labels) if lab != IGNORE]


def test_single_turn_trains_reply_and_end_of_turn_only(smollm2_tokenizer):
    tok = smollm2_tokenizer
    ex, truncated = encode_chat(tok, [{"role": "user", "content": "Hi there"},
                                      {"role": "assistant", "content": "Hello! How can I help?"}], 1024)
    assert not truncated
    assert trained_text(tok, ex) == ["Hello", "!", " How", " can", " I", " help", "?", "<|im_end|>"]
    # labels equal ids where trained, and the trained run is contiguous at the reply
    positions = [i for i, lab in enumerate(ex.labels) if lab != IGNORE]
    assert all(ex.labels[i] == ex.input_ids[i] for i in positions)
    assert positions == list(range(positions[0], positions[0] + 8))
    assert tok.decode(ex.input_ids[: positions[0]]).endswith("<|im_start|>assistant\n")


def test_multi_turn_trains_every_assistant_turn(smollm2_tokenizer):
    tok = smollm2_tokenizer
    chat = [{"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."},
            {"role": "user", "content": "Bye"}, {"role": "assistant", "content": "Goodbye."}]
    ex, _ = encode_chat(tok, chat, 1024)
    assert trained_text(tok, ex) == ["Hello", ".", "<|im_end|>", "Good", "bye", ".", "<|im_end|>"]
    text = tok.decode(ex.input_ids)
    assert "You are a helpful AI assistant" not in text  # the given system prompt replaces the default


def test_truncation_counts_and_keeps_prefix(smollm2_tokenizer):
    chat = [{"role": "user", "content": "word " * 50}, {"role": "assistant", "content": "yes " * 50}]
    ex, truncated = encode_chat(smollm2_tokenizer, chat, 80)
    assert truncated and len(ex.input_ids) == 80 and len(ex.labels) == 80


def test_examples_without_reply_are_skipped_and_counted(tmp_path, smollm2_tokenizer):
    import json

    rows = [{"messages": [{"role": "user", "content": "x " * 200}, {"role": "assistant", "content": "late"}]},
            {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]}]
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    examples, stats = encode_file(smollm2_tokenizer, path, 64)
    assert (stats.total, stats.kept, stats.truncated, stats.skipped, stats.skipped_lines) == (2, 1, 1, 1, [1])


def test_bad_line_is_named(tmp_path, smollm2_tokenizer):
    import pytest

    from trainer.run.errors import UserError

    path = tmp_path / "train.jsonl"
    path.write_text('{"messages": [{"role": "user", "content": "a"}]}\n{"messages": 5}\n')
    with pytest.raises(UserError, match="train.jsonl, line 2: not a chat example"):
        encode_file(smollm2_tokenizer, path, 64)


def test_default_template_for_a_model_without_one(smollm2_tokenizer):
    import copy

    tok = copy.deepcopy(smollm2_tokenizer)
    tok.chat_template = DEFAULT_CHAT_TEMPLATE
    ex, _ = encode_chat(tok, [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}], 256)
    assert trained_text(tok, ex) == ["Hello", ".", tok.eos_token]
