"""The `dragonfarm` command line, in-process."""
from __future__ import annotations

import json

import pytest

from trainer.cli import main


def test_presets_table_and_json(capsys):
    assert main(["presets"]) == 0
    out = capsys.readouterr().out
    assert "HuggingFaceTB/SmolLM2-135M-Instruct  135M  Apache 2.0  no             2 GB, or CPU" in out
    assert "meta-llama/Llama-3.2-1B-Instruct" in out and "yes" in out
    assert main(["presets", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in rows][:3] == ["HuggingFaceTB/SmolLM2-135M-Instruct", "HuggingFaceTB/SmolLM2-360M-Instruct",
                                          "Qwen/Qwen2.5-0.5B-Instruct"]
    assert len(rows) == 7 and sum(r["gated"] for r in rows) == 2


def test_check_json(capsys):
    assert main(["check", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["device"] in ("cpu", "cuda", "mps") and "summary" in data


def test_not_a_run_folder_is_explained(tmp_path, capsys):
    assert main(["status", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "is not a DragonFarm run folder" in err and "dragonfarm new" in err


@pytest.mark.filterwarnings("error:`is_gradient_checkpointing`:FutureWarning")  # peft's, silenced at our call
def test_train_status_generate(tiny_run_dir, capsys):
    assert main(["train", str(tiny_run_dir)]) == 0
    assert "Finished" in capsys.readouterr().out
    assert main(["status", str(tiny_run_dir)]) == 0
    out = capsys.readouterr().out
    assert "tiny-run: Finished" in out and "step      12 of 12" in out and "did it learn?" in out
    assert main(["status", str(tiny_run_dir), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["status"]["state"] == "done" and data["last"]["step"] == 12
    assert main(["generate", str(tiny_run_dir), "What is 1 plus 2?", "--max-new-tokens", "4", "--quiet-stream"]) == 0
    assert capsys.readouterr().out.strip() != ""
    assert main(["generate", str(tiny_run_dir), "Hi", "--base", "--max-new-tokens", "3", "--quiet-stream"]) == 0


def test_generate_before_training_says_what_to_do(tiny_run_dir, capsys):
    assert main(["generate", str(tiny_run_dir), "hi"]) == 2
    assert "has no trained adapter yet" in capsys.readouterr().err


def test_cancel_when_not_running(tiny_run_dir, capsys):
    assert main(["cancel", str(tiny_run_dir)]) == 0
    assert "is not training" in capsys.readouterr().out


def test_bad_config_fails_in_words(tiny_run_dir, capsys):
    cfg = json.loads((tiny_run_dir / "config.json").read_text())
    cfg["batch_sise"] = 3
    (tiny_run_dir / "config.json").write_text(json.dumps(cfg))
    assert main(["train", str(tiny_run_dir)]) == 2
    assert "batch_sise: unknown setting (did you mean 'batch_size'?)" in capsys.readouterr().err


def test_missing_local_model_is_explained(make_run, capsys):
    run_dir = make_run("nomodel", model="/nowhere/model-folder")
    assert main(["train", str(run_dir)]) == 1
    out = capsys.readouterr().out
    assert "The model folder /nowhere/model-folder does not exist." in out


def test_runs_dir_order_and_run_names(tmp_path, monkeypatch, capsys):
    from trainer.run.config import TrainConfig
    from trainer.run.settings import data_dir, runs_dir, save_settings

    assert runs_dir() == data_dir() / "runs"
    save_settings({"runs_dir": str(tmp_path / "from-setting")})
    assert runs_dir() == tmp_path / "from-setting"
    monkeypatch.setenv("DRAGONFARM_RUNS_DIR", str(tmp_path / "from-env"))
    assert runs_dir() == tmp_path / "from-env"
    assert runs_dir(str(tmp_path / "from-flag")) == tmp_path / "from-flag"

    TrainConfig(model="some/model", name="first").save(tmp_path / "from-env" / "first")
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "first" in out and "some/model" in out and "queued" in out
    assert main(["status", "first"]) == 0  # a run's name works in place of its path
    assert "first: Not started yet" in capsys.readouterr().out
    assert main(["list", "--runs-dir", str(tmp_path / "empty")]) == 0
    assert "No runs in" in capsys.readouterr().out


# peft reads transformers' deprecated is_gradient_checkpointing; `dragonfarm train` must not print that.
@pytest.mark.filterwarnings("error:`is_gradient_checkpointing`:FutureWarning")
def test_resume_without_checkpoint_says_it_starts_again(tiny_run_dir, capsys):
    assert main(["train", str(tiny_run_dir), "--resume"]) == 0
    out = capsys.readouterr().out
    assert "starts again from the beginning" in out and "Finished" in out
