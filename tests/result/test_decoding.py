"""One decoding everywhere: the samples, `dragonfarm generate`, `dragonfarm chat`
/ the Try page's serve process and the Try page's controls all start from
trainer.run.decoding's defaults (a light repetition penalty, greedy), and take
the model's own generation defaults where it has them."""
from __future__ import annotations

import json
import types

import pytest

from .conftest import fake_run
from trainer.run.decoding import DEFAULT, DEFAULT_REPETITION_PENALTY, Decoding, describe


class RecordingModel:
    """Stands in for a causal LM: records generate()'s arguments, answers two tokens."""

    def __init__(self, generation_config: dict | None = None):
        self.generation_config = types.SimpleNamespace(**(generation_config or {}))
        self.calls: list[dict] = []
        self.training = False

    def eval(self):
        return self

    def train(self, mode: bool = True):
        return self

    def generate(self, input_ids=None, attention_mask=None, **kwargs):
        import torch

        self.calls.append(kwargs)
        if kwargs.get("streamer") is not None:
            kwargs["streamer"].end()
        return torch.cat([input_ids, torch.tensor([[42, 43]])], dim=1)


def test_defaults_and_limits():
    assert DEFAULT.temperature == 0 and DEFAULT.repetition_penalty is None
    d = Decoding().with_changes(temperature=9.0, repetition_penalty=0.2, max_new_tokens=10**9)
    assert (d.temperature, d.repetition_penalty, d.max_new_tokens) == (2.0, 1.0, 4096)
    assert Decoding.from_request({"temperature": "hot", "repetition_penalty": True, "max_new_tokens": None}) == DEFAULT
    assert Decoding.from_request({"temperature": 0.5, "repetition_penalty": 1.3}).repetition_penalty == 1.3
    assert "most likely reply" in describe(DEFAULT) and "1.15" in describe(DEFAULT)


def test_generate_kwargs_prefers_the_models_own_defaults(tiny_model_dir):
    from trainer.engine.decoding import generate_kwargs
    from trainer.engine.models import load_tokenizer

    tok = load_tokenizer(tiny_model_dir)
    plain = generate_kwargs(RecordingModel(), tok)
    assert plain["repetition_penalty"] == DEFAULT_REPETITION_PENALTY and plain["do_sample"] is False
    qwen_like = RecordingModel({"repetition_penalty": 1.05, "top_p": 0.8, "top_k": 20, "temperature": 0.7})
    greedy = generate_kwargs(qwen_like, tok)
    assert greedy["repetition_penalty"] == 1.05 and greedy["do_sample"] is False and greedy["temperature"] is None
    sampled = generate_kwargs(qwen_like, tok, Decoding(temperature=0.6))
    assert (sampled["do_sample"], sampled["temperature"], sampled["top_p"], sampled["top_k"]) == (True, 0.6, 0.8, 20)
    chosen = generate_kwargs(qwen_like, tok, Decoding(repetition_penalty=1.3))
    assert chosen["repetition_penalty"] == 1.3


def test_sample_replies_use_the_shared_decoding(make_run, monkeypatch):
    from trainer.engine import evaluation
    from trainer.engine.loop import train

    seen = []
    real = evaluation.generate_kwargs

    def spy(model, tokenizer, decoding=None):
        kwargs = real(model, tokenizer, decoding)
        seen.append(kwargs)
        return kwargs

    monkeypatch.setattr(evaluation, "generate_kwargs", spy)
    run = make_run("samples", n_train=8, n_eval=3, max_steps=2, num_samples=2, sample_max_new_tokens=5, precision="fp32")
    assert train(run, verbose=False) == "done"
    assert seen, "the sample replies did not go through the shared decoding"
    assert all(k["repetition_penalty"] == DEFAULT_REPETITION_PENALTY and k["do_sample"] is False
               and k["max_new_tokens"] == 5 for k in seen)


def test_dragonfarm_generate_uses_the_shared_decoding(tiny_model_dir, tmp_path, monkeypatch, capsys):
    from dfhelpers import example_chats, write_run
    from trainer.cli import main
    from trainer.engine.models import load_tokenizer
    from trainer.results import generate as gen

    model = RecordingModel()
    monkeypatch.setattr(gen, "load_for_run", lambda run_dir, base=False: (model, load_tokenizer(tiny_model_dir), "cpu"))
    run = write_run(tmp_path / "r", str(tiny_model_dir), example_chats(4), example_chats(2, 50))
    assert main(["generate", str(run), "hi", "--base", "--quiet-stream"]) == 0
    assert model.calls[-1]["repetition_penalty"] == DEFAULT_REPETITION_PENALTY
    assert model.calls[-1]["do_sample"] is False and model.calls[-1]["max_new_tokens"] == 200
    assert main(["generate", str(run), "hi", "--base", "--quiet-stream", "--repetition-penalty", "1.4",
                 "--temperature", "0.5"]) == 0
    assert model.calls[-1]["repetition_penalty"] == 1.4 and model.calls[-1]["temperature"] == 0.5
    capsys.readouterr()


def test_chat_and_serve_use_the_shared_decoding(tiny_model_dir):
    import io

    from trainer.engine.models import load_tokenizer
    from trainer.results.chatserver import ChatEngine, Server

    model = RecordingModel()
    engine = ChatEngine(model, load_tokenizer(tiny_model_dir), "cpu", has_adapter=False)
    engine.stream([{"role": "user", "content": "hi"}], which="base")
    assert model.calls[-1]["repetition_penalty"] == DEFAULT_REPETITION_PENALTY and model.calls[-1]["do_sample"] is False
    out = io.StringIO()
    server = Server(engine, out)
    server.handle({"op": "generate", "id": "1", "_seq": 1, "which": "base", "messages": [{"role": "user", "content": "x"}],
                   "temperature": 0.8, "repetition_penalty": 1.25, "max_new_tokens": 7})
    assert (model.calls[-1]["temperature"], model.calls[-1]["repetition_penalty"], model.calls[-1]["max_new_tokens"]) \
        == (0.8, 1.25, 7)
    assert json.loads(out.getvalue().splitlines()[-1])["event"] == "done"


def test_try_page_controls_start_at_the_shared_defaults(qtbot, tmp_path, monkeypatch):
    from dragonfarm_gui.widgets.try_page import TryPage
    page = TryPage(fake_run(tmp_path))
    qtbot.addWidget(page)
    assert page.repetition.value() == pytest.approx(DEFAULT_REPETITION_PENALTY)
    assert page.decoding() == Decoding(temperature=0.0, repetition_penalty=DEFAULT_REPETITION_PENALTY,
                                       max_new_tokens=page.length.value())
    sent = []
    monkeypatch.setattr(page.process, "_send", sent.append)
    page.repetition.setValue(1.3)
    page.process.generate([{"role": "user", "content": "hi"}], "finetuned", page.decoding())
    assert sent[-1]["repetition_penalty"] == pytest.approx(1.3) and sent[-1]["temperature"] == 0.0
    page.shutdown()
