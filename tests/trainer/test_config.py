import json

import pytest

from trainer.run.config import ConfigError, TrainConfig


def test_defaults_round_trip(tmp_path):
    cfg = TrainConfig(model="HuggingFaceTB/SmolLM2-135M-Instruct", name="x")
    cfg.save(tmp_path)
    data = json.loads((tmp_path / "config.json").read_text())
    assert list(data)[0] == "schema_version"
    assert TrainConfig.load(tmp_path) == cfg


def test_unknown_key_is_named_with_a_suggestion():
    with pytest.raises(ConfigError) as info:
        TrainConfig.from_dict({"lerning_rate": 0.001})
    assert info.value.problems == ["lerning_rate: unknown setting (did you mean 'learning_rate'?); remove it"]


def test_wrong_types_name_the_field():
    with pytest.raises(ConfigError) as info:
        TrainConfig.from_dict({"epochs": "three", "batch_size": 2.5, "packing": "yes"})
    assert info.value.problems == [
        "epochs: 'three' is not a number; write it like 3.0",
        "batch_size: 2.5 is not a whole number; write it like 4",
        "packing: 'yes' is not true or false",
    ]


@pytest.mark.parametrize("field,value,message", [
    ("learning_rate", -1, "learning_rate: -1.0 is out of range; use 0.000001 to 0.5 (0.0002 is typical)"),
    ("lora_alpha", 0, "lora_alpha: 0 is out of range; use 1 to 4096 (32 is typical)"),
    ("warmup_ratio", 0.7, "warmup_ratio: 0.7 is out of range; use 0 to 0.5 (0.05 is typical)"),
    ("eval_every", -1, "eval_every: -1 is out of range; use 0 to 10000000; 0 means about five times per run"),
    ("batch_size", 0, "batch_size: 0 is out of range; use 1 to 1024 (4 is typical)"),
    ("lr_scheduler", "wavy", "lr_scheduler: 'wavy' is not known; use one of cosine, linear, constant"),
    ("device", "tpu", "device: 'tpu' is not known; use one of auto, cuda, mps, cpu"),
    ("max_length", 8, "max_length: 8 is out of range; use 16 to 131072 tokens (512 or 1024 is typical)"),
    ("lora_dropout", 1.5, "lora_dropout: 1.5 is out of range; use 0 to 0.5 (0 or 0.05 is typical)"),
    ("model", " ", "model: empty; give a preset such as HuggingFaceTB/SmolLM2-135M-Instruct, a Hub id, a model folder or a .gguf file"),
    ("target_modules", [], "target_modules: use \"all-linear\" or a list of module names such as [\"q_proj\", \"v_proj\"]"),
])
def test_range_messages(field, value, message):
    with pytest.raises(ConfigError) as info:
        TrainConfig.from_dict({field: value})
    assert info.value.problems == [message]
    assert "has a problem:" in str(info.value)


def test_epochs_zero_needs_max_steps():
    with pytest.raises(ConfigError):
        TrainConfig.from_dict({"epochs": 0})
    assert TrainConfig.from_dict({"epochs": 0, "max_steps": 5}).max_steps == 5


def test_newer_schema_is_refused():
    with pytest.raises(ConfigError) as info:
        TrainConfig.from_dict({"schema_version": 99})
    assert "this DragonFarm reads version 1" in info.value.problems[0]


def test_broken_file_says_so(tmp_path):
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ConfigError) as info:
        TrainConfig.load(tmp_path)
    assert "not valid JSON" in str(info.value)
    with pytest.raises(ConfigError, match="not found"):
        TrainConfig.load(tmp_path / "missing")
