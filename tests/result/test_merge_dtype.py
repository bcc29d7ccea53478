"""merge --dtype: the merged model is saved in the base model's own dtype (not float32), or the one asked for;
and merge takes the best adapter unless --last."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from trainer.cli import main
from trainer.results.merge import MERGE_INFO, merge_info, merged_is_current, model_dtype


def tensor_dtypes(folder: Path) -> set[str]:
    from safetensors import safe_open

    found = set()
    for path in folder.glob("*.safetensors"):
        with safe_open(str(path), "pt") as fh:
            found |= {str(fh.get_slice(k).get_dtype()) for k in fh.keys()}
    return found


@pytest.fixture
def bf16_run(trained_tiny_run, tiny_model_dir, tmp_path) -> Path:
    """The trained tiny run, its base model's config saying bfloat16 (as SmolLM2's and Llama 3.2's do)."""
    model = tmp_path / "tiny-bf16"
    shutil.copytree(tiny_model_dir, model)
    config = json.loads((model / "config.json").read_text())
    config.pop("dtype", None)
    config["torch_dtype"] = "bfloat16"
    (model / "config.json").write_text(json.dumps(config))
    run = tmp_path / "run"
    shutil.copytree(trained_tiny_run, run)
    cfg = json.loads((run / "config.json").read_text())
    cfg["model"] = str(model)
    (run / "config.json").write_text(json.dumps(cfg))
    return run


def test_model_dtype_reads_the_config(tmp_path):
    for value, expected in (({"torch_dtype": "bfloat16"}, "bf16"), ({"dtype": "float16"}, "f16"),
                            ({"torch_dtype": "float32"}, "f32"), ({}, "f32"),
                            ({"text_config": {"torch_dtype": "bfloat16"}}, "bf16")):
        (tmp_path / "config.json").write_text(json.dumps(value))
        assert model_dtype(tmp_path) == expected, value
    (tmp_path / "config.json").write_text("not json")
    assert model_dtype(tmp_path) == "f32"


def test_merge_keeps_the_models_own_dtype_and_dtype_overrides(bf16_run, capsys):
    assert main(["merge", str(bf16_run)]) == 0
    out = capsys.readouterr().out
    assert "in bf16" in out and "Check passed" in out
    merged = bf16_run / "merged"
    assert tensor_dtypes(merged) == {"BF16"}
    assert json.loads((merged / "config.json").read_text()).get("dtype", "bfloat16") == "bfloat16"
    assert merge_info(bf16_run)["dtype"] == "bfloat16"
    half = (merged / "model.safetensors").stat().st_size

    assert main(["merge", str(bf16_run), "--dtype", "f32"]) == 0
    assert "Check passed: the merged model gave exactly the same replies" in capsys.readouterr().out
    assert tensor_dtypes(merged) == {"F32"}
    assert merge_info(bf16_run)["dtype"] == "float32"
    assert (merged / "model.safetensors").stat().st_size > 1.9 * half

    assert main(["merge", str(bf16_run), "--dtype", "f16", "--no-check"]) == 0
    assert tensor_dtypes(merged) == {"F16"}


def test_bad_dtype_is_refused(trained_tiny_run, capsys):
    with pytest.raises(SystemExit):
        main(["merge", str(trained_tiny_run), "--dtype", "int4"])
    assert "invalid choice" in capsys.readouterr().err


def test_merge_takes_the_best_adapter_unless_last(trained_tiny_run, tmp_path, capsys):
    from safetensors.torch import load_file, save_file

    run = tmp_path / "run"
    shutil.copytree(trained_tiny_run, run)
    shutil.copytree(run / "adapter", run / "adapter-best")
    weights = load_file(str(run / "adapter-best" / "adapter_model.safetensors"))
    save_file({k: v * 0.5 for k, v in weights.items()}, str(run / "adapter-best" / "adapter_model.safetensors"))
    ev = json.loads((run / "eval.json").read_text())
    ev["best"] = {"step": 8, "loss": 1.0, "adapter": "adapter-best"}
    (run / "eval.json").write_text(json.dumps(ev))

    assert main(["merge", str(run), "--no-check"]) == 0
    assert "best adapter (step 8)" in capsys.readouterr().out
    info = merge_info(run)
    assert info["adapter"] == "best" and info["adapter_step"] == 8
    assert merged_is_current(run) and not merged_is_current(run, last=True)

    assert main(["merge", str(run), "--no-check", "--last"]) == 0
    assert "last adapter" in capsys.readouterr().out
    assert merge_info(run)["adapter"] == "last"
    assert merged_is_current(run, last=True) and not merged_is_current(run)
    assert (run / "merged" / MERGE_INFO).is_file()
