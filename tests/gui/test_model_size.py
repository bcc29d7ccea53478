"""Parameter counts of local models from their headers (GGUF, safetensors,
config.json), with small files crafted here, and the wizard's estimate using
them instead of "the model's size is unknown"."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from dragonfarm_gui.logic.model_size import config_params, model_params, model_params_b


def _s(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def write_gguf(path: Path, tensors: dict[str, tuple[int, ...]], version: int = 3) -> Path:
    """A GGUF header with metadata of every kind (strings, arrays of strings and
    numbers) and tensor infos; no tensor data (the reader must not need it)."""
    meta = [
        (_s("general.architecture"), 8, _s("llama")),
        (_s("general.name"), 8, _s("Tiny")),
        (_s("llama.block_count"), 4, struct.pack("<I", 2)),
        (_s("llama.rope.freq_base"), 6, struct.pack("<f", 10000.0)),
        (_s("general.flag"), 7, b"\x01"),
        (_s("tokenizer.ggml.tokens"), 9, struct.pack("<IQ", 8, 3) + _s("<s>") + _s("hello") + _s("é")),
        (_s("tokenizer.ggml.scores"), 9, struct.pack("<IQ", 6, 3) + struct.pack("<3f", 0.0, -1.0, -2.0)),
        (_s("general.big"), 10, struct.pack("<Q", 2**40)),
    ]
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(meta))
    for key, kind, value in meta:
        out += key + struct.pack("<I", kind) + value
    offset = 0
    for name, shape in tensors.items():
        out += _s(name) + struct.pack("<I", len(shape)) + struct.pack(f"<{len(shape)}Q", *shape)
        out += struct.pack("<IQ", 0, offset)
        offset += 32
    path.write_bytes(out)
    return path


def write_safetensors(path: Path, tensors: dict[str, list[int]]) -> Path:
    header = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, shape in tensors.items():
        n = 1
        for d in shape:
            n *= d
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + 2 * n]}
        offset += 2 * n
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * offset)
    return path


def test_gguf_header_gives_the_exact_count(tmp_path):
    path = write_gguf(tmp_path / "tiny.gguf", {"token_embd.weight": (64, 1000), "blk.0.attn_q.weight": (64, 64),
                                                "output_norm.weight": (64,)})
    assert model_params(path) == 64 * 1000 + 64 * 64 + 64
    assert model_params_b(path) == pytest.approx((64 * 1000 + 64 * 64 + 64) / 1e9)
    assert model_params(write_gguf(tmp_path / "v2.gguf", {"w": (10, 10)}, version=2)) == 100


@pytest.mark.parametrize("damage", [
    b"", b"GGUF", b"GGML" + b"\0" * 60, b"GGUF" + struct.pack("<IQQ", 1, 1, 0),
    b"GGUF" + struct.pack("<IQQ", 3, 2**62, 0),                        # absurd tensor count
    b"GGUF" + struct.pack("<IQQ", 3, 1, 1) + _s("k") + struct.pack("<I", 99),  # unknown value type
])
def test_damaged_gguf_is_unknown_not_an_error(tmp_path, damage):
    path = tmp_path / "bad.gguf"
    path.write_bytes(damage)
    assert model_params(path) is None


def test_truncated_gguf_is_unknown(tmp_path):
    path = write_gguf(tmp_path / "cut.gguf", {"a.weight": (8, 8), "b.weight": (8,)})
    path.write_bytes(path.read_bytes()[:-10])
    assert model_params(path) is None


def test_folder_with_model_safetensors(tmp_path):
    write_safetensors(tmp_path / "model.safetensors", {"embed.weight": [100, 16], "lm_head.weight": [100, 16]})
    assert model_params(tmp_path) == 3200


def test_folder_with_sharded_safetensors(tmp_path):
    write_safetensors(tmp_path / "model-00001-of-00002.safetensors", {"a": [10, 10]})
    write_safetensors(tmp_path / "model-00002-of-00002.safetensors", {"b": [5], "c": [2, 3]})
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 222}, "weight_map": {
        "a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors",
        "c": "model-00002-of-00002.safetensors"}}))
    assert model_params(tmp_path) == 111


def test_damaged_safetensors_header_is_unknown(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", 2**60) + b"{}")
    assert model_params(tmp_path) is None
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", 9) + b'{"a": [1]')
    assert model_params(tmp_path) is None


SMOLLM2_135M = {"hidden_size": 576, "num_hidden_layers": 30, "vocab_size": 49152, "intermediate_size": 1536,
                "num_attention_heads": 9, "num_key_value_heads": 3, "tie_word_embeddings": True}


def test_config_json_formula_matches_a_real_model(tmp_path):
    assert config_params(SMOLLM2_135M) == 134_515_008  # SmolLM2-135M-Instruct's own count
    (tmp_path / "config.json").write_text(json.dumps(SMOLLM2_135M))
    assert model_params(tmp_path) == 134_515_008
    assert config_params({"hidden_size": "x"}) is None and config_params([]) is None


def test_hub_ids_and_missing_paths_are_unknown(tmp_path):
    assert model_params("HuggingFaceTB/SmolLM2-135M-Instruct") is None
    assert model_params(tmp_path / "missing.gguf") is None
    (tmp_path / "notes.txt").write_text("hi")
    assert model_params(tmp_path / "notes.txt") is None
    assert model_params(tmp_path) is None  # a folder without model files


def test_wizard_estimate_uses_the_size_of_a_local_gguf(qtbot, tmp_path):
    from PySide6.QtWidgets import QWizard

    from dragonfarm_gui.wizard.new_run_wizard import NewRunWizard

    from .conftest import FIXTURES

    wizard = NewRunWizard(tmp_path / "wizard-runs")
    qtbot.addWidget(wizard)
    wizard.show()
    wizard.data_page.set_file(FIXTURES / "support.csv")
    wizard.next()
    gguf = write_gguf(tmp_path / "my-model.gguf", {"token_embd.weight": (576, 49152), "blk.0.ffn.weight": (576, 1536)})
    wizard.model_page.set_other(str(gguf))
    assert wizard.model_page.choices.params_b == pytest.approx((576 * 49152 + 576 * 1536) / 1e9)
    assert wizard.button(QWizard.WizardButton.NextButton).isEnabled()
    wizard.next()
    wizard.next()
    text = wizard.settings_page.estimate_label.text()
    assert "About" in text and "size is unknown" not in text
    wizard.back()
    wizard.back()
    wizard.model_page.set_other("someone/unknown-model")
    wizard.next()
    wizard.next()
    assert "size is unknown" in wizard.settings_page.estimate_label.text()
