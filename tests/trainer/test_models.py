"""Finding models: presets, Hub ids, folders, .gguf files, and every failure in words."""
from __future__ import annotations

import pytest
from huggingface_hub import errors as hf_errors

from trainer.engine import models
from trainer.run.errors import UserError
from trainer.run.presets import find_preset, resolve_model_id


def _resp(code: int = 403):
    from types import SimpleNamespace

    return SimpleNamespace(headers={}, status_code=code, text="", url="https://huggingface.co", request=None,
                           json=lambda: {})


def _fake_snapshot(exc_factory):
    def fake(repo_id, **kwargs):
        raise exc_factory()
    return fake


@pytest.mark.parametrize("exc,expected", [
    (lambda: hf_errors.GatedRepoError("gated", response=_resp()), "is a gated model"),
    (lambda: hf_errors.RepositoryNotFoundError("nope", response=_resp()), "There is no model called 'owner/thing'"),
    (lambda: hf_errors.LocalEntryNotFoundError("offline"), "no connection to huggingface.co"),
])
def test_download_failures_are_explained(monkeypatch, exc, expected):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "snapshot_download", _fake_snapshot(exc))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with pytest.raises(UserError) as info:
        models.download("owner/thing")
    assert expected in str(info.value)


def test_gated_without_token_says_add_a_token(monkeypatch):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "snapshot_download",
                        _fake_snapshot(lambda: hf_errors.GatedRepoError("gated", response=_resp())))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with pytest.raises(UserError, match="add your Hugging Face token"):
        models.download("meta-llama/Llama-3.2-1B-Instruct")
    monkeypatch.setenv("HF_TOKEN", "hf_x")
    with pytest.raises(UserError, match="Your token was refused"):
        models.download("meta-llama/Llama-3.2-1B-Instruct")


def test_token_reaches_the_hub_from_the_environment_only(monkeypatch, tmp_path):
    import huggingface_hub

    seen = {}

    def fake(repo_id, **kwargs):
        seen.update(kwargs)
        (tmp_path / "model.safetensors").write_bytes(b"x")
        return str(tmp_path)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake)
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    assert models.download("google/gemma-3-1b-it") == tmp_path
    assert seen["token"] == "hf_secret"


def test_local_paths(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        models.resolve_model_path(str(tmp_path / "x.gguf"))
    with pytest.raises(UserError, match="has no config.json"):
        models.resolve_model_path(str(tmp_path))
    with pytest.raises(UserError, match="The model folder ./missing does not exist"):
        models.resolve_model_path("./missing")


def test_presets_resolve_short_names():
    assert resolve_model_id("SmolLM2-135M-Instruct") == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert find_preset("Llama 3.2 1B").gated
    assert resolve_model_id("someone/custom") == "someone/custom"


def test_gguf_file_becomes_a_cached_folder(smollm2_gguf, smollm2_dir):
    assert models.resolve_model_path(str(smollm2_gguf)) == smollm2_dir
    assert (smollm2_dir / "config.json").is_file() and list(smollm2_dir.glob("*.safetensors"))
    assert "quantization_config" not in (smollm2_dir / "config.json").read_text()


def test_all_linear_targets_every_projection(tiny_model_dir):
    model = models.load_model(tiny_model_dir, "cpu")
    assert models.target_modules_for(model, "all-linear") == ["down_proj", "gate_proj", "k_proj", "o_proj",
                                                               "q_proj", "up_proj", "v_proj"]
    assert models.target_modules_for(model, ["q_proj"]) == ["q_proj"]
