"""dragonfarm push: what goes up, the model card, and each Hub failure in words (HfApi faked; nothing is uploaded)."""
from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest
from huggingface_hub.errors import HfHubHTTPError

from trainer.cli import main
from trainer.results import push as push_mod
from trainer.results.modelcard import model_card
from trainer.results.push import push
from trainer.run.errors import UserError

from .conftest import fake_run

TOKEN = "hf_secretsecretsecret"


class FakeApi:
    """Records calls; `fail` maps a method name to the exception it raises."""

    def __init__(self, token=None, role="write", fail=None):
        self.token, self.role, self.fail = token, role, fail or {}
        self.calls: list[tuple[str, tuple, dict]] = []

    def _call(self, name, *args, **kwargs):
        self.calls.append((name, args, kwargs))
        if name in self.fail:
            raise self.fail[name]

    def whoami(self):
        self._call("whoami")
        return {"name": "ada", "auth": {"accessToken": {"role": self.role}}}

    def create_repo(self, repo_id, **kwargs):
        self._call("create_repo", repo_id, **kwargs)

    def create_commit(self, repo_id, operations, **kwargs):
        self._call("create_commit", repo_id, list(operations), **kwargs)


def http_error(code: int) -> HfHubHTTPError:
    request = httpx2.Request("POST", "https://huggingface.co/api/repos/create")
    return HfHubHTTPError(f"{code} error", response=httpx2.Response(code, request=request))


@pytest.fixture
def run(tmp_path) -> Path:
    run = fake_run(tmp_path)
    (run / "data" / "import.json").write_text(json.dumps({"source": {"file": "mine.csv", "sha256": "ab" * 32},
                                                           "split": {"train": 4, "eval": 2}}))
    (run / "samples.json").write_text(json.dumps({"samples": [{"prompt": "What is 2 plus 3?", "finetuned": "Answer: 5."}]}))
    (run / "eval.json").write_text(json.dumps({"before": {"loss": 2.5}, "after": {"loss": 1.25}}))
    return run


@pytest.fixture
def api(monkeypatch):
    holder = {"api": FakeApi()}

    def make(token):
        holder["api"].token = token
        return holder["api"]

    monkeypatch.setattr(push_mod, "_hub_api", make)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    return holder


def test_push_adapter_with_model_card(run, api, capsys):
    assert main(["push", str(run), "--repo", "my-helper", "--private"]) == 0
    fake = api["api"]
    assert fake.token == TOKEN
    names = [c[0] for c in fake.calls]
    assert names == ["whoami", "create_repo", "create_commit"]
    assert fake.calls[1][1] == ("ada/my-helper",) and fake.calls[1][2]["private"] is True
    assert fake.calls[1][2]["exist_ok"] is False
    ops = {op.path_in_repo: op for op in fake.calls[2][1][1]}
    assert set(ops) == {"adapter_config.json", "adapter_model.safetensors", "README.md"}
    card = ops["README.md"].path_or_fileobj.decode("utf-8")
    assert 'base_model: "HuggingFaceTB/SmolLM2-135M-Instruct"' in card and "license: apache-2.0" in card
    assert "library_name: peft" in card and "ab" * 32 in card and "2.500" in card and "1.250" in card
    assert "Answer: 5." in card and '"ada/my-helper"' in card
    out = capsys.readouterr()
    assert "Uploaded to https://huggingface.co/ada/my-helper" in out.out
    assert TOKEN not in out.out + out.err
    assert TOKEN not in "".join(p.read_text(errors="replace") for p in run.rglob("*") if p.is_file())


def test_push_uses_the_best_adapter_unless_last(run, api):
    best = run / "adapter-best"
    best.mkdir()
    (best / "adapter_config.json").write_text('{"r": 8, "best": true}')
    push(run, "owner/name", on_progress=lambda _t: None)
    ops = {op.path_in_repo: op for op in api["api"].calls[-1][1][1]}
    assert ops["adapter_config.json"].path_or_fileobj == str(best / "adapter_config.json")
    push(run, "owner/name", last=True, update=True, on_progress=lambda _t: None)
    ops = {op.path_in_repo: op for op in api["api"].calls[-1][1][1]}
    assert ops["adapter_config.json"].path_or_fileobj == str(run / "adapter" / "adapter_config.json")
    assert api["api"].calls[-2][2]["exist_ok"] is True


def test_no_samples_and_gguf_needs_an_export(run, api):
    assert "Answer: 5." not in model_card(run, samples=False)
    with pytest.raises(UserError, match="no GGUF export yet"):
        push(run, "x", what="gguf", on_progress=lambda _t: None)
    (run / "export").mkdir()
    (run / "export" / "m-f16.gguf").write_bytes(b"GGUF")
    push(run, "x", what="gguf", on_progress=lambda _t: None)
    ops = [op.path_in_repo for op in api["api"].calls[-1][1][1]]
    assert ops == ["m-f16.gguf", "README.md"]


def test_no_token(run, api, monkeypatch, capsys):
    monkeypatch.delenv("HF_TOKEN")
    assert main(["push", str(run), "--repo", "x"]) != 0
    err = capsys.readouterr().err
    assert "no Hugging Face token" in err and "Settings" in err and "Traceback" not in err
    assert api["api"].calls == []


def test_read_only_token(run, api):
    api["api"].role = "read"
    with pytest.raises(UserError, match="read-only"):
        push(run, "x", on_progress=lambda _t: None)


@pytest.mark.parametrize("code, words", [(409, "already taken"), (403, "not allowed to write"),
                                         (401, "refused the token"), (503, "had a problem")])
def test_hub_http_errors_in_words(run, api, capsys, code, words):
    api["api"].fail = {"create_repo": http_error(code)}
    assert main(["push", str(run), "--repo", "my-helper"]) != 0
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_no_network(run, api, capsys):
    api["api"].fail = {"whoami": httpx2.ConnectError("Name or service not known")}
    assert main(["push", str(run), "--repo", "my-helper"]) != 0
    assert "Could not reach the Hugging Face Hub" in capsys.readouterr().err


def test_bad_name_and_no_adapter(run, api, tmp_path):
    with pytest.raises(UserError, match="not a name the Hub accepts"):
        push(run, "bad name!", on_progress=lambda _t: None)
    bare = fake_run(tmp_path / "bare")
    import shutil
    shutil.rmtree(bare / "adapter")
    with pytest.raises(UserError, match="no trained adapter"):
        push(bare, "x", on_progress=lambda _t: None)


def test_model_card_never_names_local_folders(run):
    cfg = json.loads((run / "config.json").read_text())
    cfg["model"] = "/home/alice/private-models/my-base"
    (run / "config.json").write_text(json.dumps(cfg))
    card = model_card(run, repo_id="ada/x")
    assert "alice" not in card and "`my-base`" in card and "base_model:" not in card
    assert "4 training examples, 2 held out" in card
