"""Training never damages what it should keep: everything is checked before output is
touched, a failed resume or restart leaves the run as it was, and no checkpoint or
tokenizer from a run folder can run code."""
from __future__ import annotations

import hashlib
import json
import pickle
import re
import shutil
from pathlib import Path

import pytest

from dfhelpers import example_chats, write_run
from trainer.engine.loop import train
from trainer.run import status as st
from trainer.run.reader import Run

KEPT = ("adapter", "checkpoints", "eval.json", "samples.json", "progress.jsonl")


class Payload:
    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return exec, (f"open({self.marker!r}, 'w').write('pwned')",)


def snapshot(run_dir: Path) -> dict[str, str]:
    out = {}
    for name in KEPT:
        path = run_dir / name
        for p in ([path] if path.is_file() else sorted(path.rglob("*")) if path.is_dir() else []):
            if p.is_file():
                out[p.relative_to(run_dir).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture(scope="module")
def trained(tmp_path_factory, tiny_model_dir) -> Path:
    import torch

    torch.set_num_threads(2)
    run_dir = write_run(tmp_path_factory.mktemp("keep") / "done-run", str(tiny_model_dir), example_chats(8),
                        example_chats(4, 100), max_steps=4, save_every=2, eval_every=2, num_samples=1,
                        sample_max_new_tokens=4, precision="fp32")
    assert train(run_dir, verbose=False) == st.DONE
    return run_dir


@pytest.fixture
def run_copy(trained, tmp_path) -> Path:
    return Path(shutil.copytree(trained, tmp_path / "copy"))


def set_state(run_dir: Path, state: str) -> None:
    data = json.loads((run_dir / "status.json").read_text())
    data["state"] = state
    (run_dir / "status.json").write_text(json.dumps(data))


@pytest.mark.parametrize("damage, words", [
    ("missing", "training examples \\(data/train.jsonl\\) are missing"),
    ("broken", "line 1"),
    ("binary", "not a text file"),
], ids=["missing", "broken", "binary"])
def test_bad_data_on_a_finished_run_keeps_every_result(run_copy, damage, words):
    before = snapshot(run_copy)
    assert "adapter/adapter_model.safetensors" in before and any(k.startswith("checkpoints/") for k in before)
    data = run_copy / "data" / "train.jsonl"
    if damage == "missing":
        data.unlink()
    else:
        data.write_bytes(b"{not json\n" if damage == "broken" else b"\xff\xfe\x00garbage\x81\n")
    assert train(run_copy, verbose=False) == st.FAILED
    assert snapshot(run_copy) == before
    status = Run(run_copy).status()
    assert status["state"] == st.DONE
    assert status["error"].startswith("Could not start again:") and re.search(words, status["error"])


def test_a_failed_resume_leaves_a_cancelled_run_cancelled(run_copy):
    set_state(run_copy, st.CANCELLED)
    config = json.loads((run_copy / "config.json").read_text())
    config["model"] = str(run_copy / "no-such-model")
    (run_copy / "config.json").write_text(json.dumps(config))
    before = snapshot(run_copy)
    assert train(run_copy, resume=True, verbose=False) == st.FAILED
    status = Run(run_copy).status()
    assert status["state"] == st.CANCELLED and "Could not resume: The model folder" in status["error"]
    assert snapshot(run_copy) == before


def test_a_restart_that_fails_early_puts_the_old_results_back(run_copy, monkeypatch):
    from trainer.engine import loop

    before = snapshot(run_copy)

    def boom(self):
        assert (run_copy / "previous" / "adapter" / "adapter_model.safetensors").is_file()  # set aside, not deleted
        raise RuntimeError("the evaluation broke")

    monkeypatch.setattr(loop.Trainer, "_before_training", boom)
    assert train(run_copy, verbose=False) == st.FAILED
    assert snapshot(run_copy) == before and not (run_copy / "previous").exists()
    status = Run(run_copy).status()
    assert status["state"] == st.DONE and "the evaluation broke" in status["error"]


def test_a_pickled_checkpoint_is_never_loaded(run_copy, tmp_path):
    """An old-format (or crafted) checkpoint: training_state.pt is a pickle whose loading writes a marker."""
    marker = tmp_path / "marker"
    set_state(run_copy, st.CANCELLED)
    for step in (run_copy / "checkpoints").iterdir():
        for name in ("training_state.json", "training_state.safetensors"):
            (step / name).unlink()
        (step / "training_state.pt").write_bytes(pickle.dumps(Payload(marker)))
    assert train(run_copy, resume=True, verbose=False) == st.FAILED
    assert not marker.exists()
    status = Run(run_copy).status()
    assert status["state"] == st.CANCELLED and "older DragonFarm" in status["error"]


def test_training_state_round_trips_without_pickle(tmp_path):
    import random

    import torch

    from trainer.engine.statefile import StateFormatError, load_state, save_state

    state = {"optimizer": {"state": {0: {"step": torch.tensor(3.0), "exp_avg": torch.ones(2, 3)}},
                           "param_groups": [{"betas": (0.9, 0.999), "lr": float("inf"), "params": [0]}]},
             "python_rng": random.getstate(), "torch_rng": torch.get_rng_state()}
    save_state(state, tmp_path / "s.json", tmp_path / "s.safetensors")
    back = load_state(tmp_path / "s.json", tmp_path / "s.safetensors")
    assert back["python_rng"] == state["python_rng"] and torch.equal(back["torch_rng"], state["torch_rng"])
    assert list(back["optimizer"]["state"]) == [0] and back["optimizer"]["param_groups"][0]["betas"] == (0.9, 0.999)
    assert torch.equal(back["optimizer"]["state"][0]["exp_avg"], torch.ones(2, 3))
    (tmp_path / "s.json").write_text(json.dumps({"x": {"__tensor__": "nope"}}))
    with pytest.raises(StateFormatError):
        load_state(tmp_path / "s.json", tmp_path / "s.safetensors")
    with pytest.raises(TypeError, match="without pickle"):
        save_state({"f": object()}, tmp_path / "t.json", tmp_path / "t.safetensors")


def test_a_tokenizer_that_declares_code_never_runs_it(tiny_model_dir, tmp_path, monkeypatch):
    from trainer.engine.models import load_tokenizer
    from trainer.run.errors import UserError

    marker = tmp_path / "marker"
    folder = Path(shutil.copytree(tiny_model_dir, tmp_path / "evil-tokenizer"))
    (folder / "tokenization_evil.py").write_text(
        f"open({str(marker)!r}, 'w').write('pwned')\n"
        "from transformers import PreTrainedTokenizerFast\nclass EvilTokenizer(PreTrainedTokenizerFast):\n    pass\n")
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["auto_map"] = {"AutoTokenizer": [None, "tokenization_evil.EvilTokenizer"]}
    config["tokenizer_class"] = "EvilTokenizer"
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    monkeypatch.setattr("builtins.input", lambda *a: "y")  # a person who would answer yes to the prompt
    try:
        tokenizer = load_tokenizer(folder)
        assert type(tokenizer).__name__ != "EvilTokenizer"
    except UserError as exc:
        assert "needs no code of its own" in str(exc) or "cannot be loaded" in str(exc)
    assert not marker.exists()
