"""Merge and export: greedy replies of the merged and GGUF models against the adapter model's."""
from __future__ import annotations

import json
import shutil

import pytest

from trainer.cli import main
from trainer.results.check import compare, greedy_ids, held_out_prompts
from trainer.results.merge import MERGE_INFO, merge, merged_is_current

PROMPTS = [[{"role": "user", "content": "What is 3 plus 4?"}],
           [{"role": "system", "content": "You answer in one short line."},
            {"role": "user", "content": "What is 6 plus 2?"}],
           [{"role": "user", "content": "Tell me about the sea."}]]


def _models(run_dir):
    import torch

    from trainer.results.generate import load_for_run
    from trainer.engine.models import load_model

    torch.set_num_threads(2)
    adapter_model, tokenizer, _ = load_for_run(run_dir, device="cpu")
    merged_model = load_model(run_dir / "merged", "cpu", torch.float32)
    return adapter_model, merged_model, tokenizer


def test_merge_tiny_gives_the_adapter_models_greedy_replies(trained_tiny_run, tmp_path, capsys):
    run = tmp_path / "tiny"
    shutil.copytree(trained_tiny_run, run)
    assert main(["merge", str(run)]) == 0
    out = capsys.readouterr().out
    assert "Check passed: the merged model gave exactly the same replies as your fine-tuned model on 3 of 3" in out
    merged = run / "merged"
    for name in ("config.json", "model.safetensors", "tokenizer.json", "chat_template.jinja", MERGE_INFO):
        assert (merged / name).is_file(), name
    assert merged_is_current(run)
    adapter_model, merged_model, tok = _models(run)
    reference = greedy_ids(adapter_model, tok, PROMPTS, max_new_tokens=16)
    assert all(len(r) > 0 for r in reference)
    assert greedy_ids(merged_model, tok, PROMPTS, max_new_tokens=16) == reference
    # merged replies differ from the base model's: the adapter really was folded in
    with adapter_model.disable_adapter():
        assert greedy_ids(adapter_model, tok, PROMPTS, max_new_tokens=16) != reference
    assert merge(run).reused  # up to date: not merged again


def test_held_out_prompts_come_from_the_samples(trained_tiny_run):
    from trainer.run.reader import Run

    prompts = held_out_prompts(trained_tiny_run, 3)
    samples = [s["messages"] for s in Run(trained_tiny_run).samples()]
    assert len(samples) == 2 and prompts[:2] == samples
    assert prompts[0] == [{"role": "user", "content": "What is 3 plus 2?"}]  # example_chats(6, 100)[0]
    assert prompts[2] == [{"role": "user", "content": "What is 5 plus 4?"}]  # the next one from eval.jsonl


def test_compare_words():
    ok = compare("GGUF q8_0 file", "q8_0", PROMPTS[:2], [[1, 2, 3, 4], [5, 6]], [[1, 2, 3, 9], [5, 6]])
    assert (ok.identical, ok.agreement, ok.ok) == (1, 0.875, True)
    assert ok.words() == ("Check passed: 1 of 2 replies were identical and on average the first 88% of each reply "
                          "matched (at least 75% needed for q8_0; 8-bit rounding changes a few close calls).")
    bad = compare("GGUF f16 file", "f16", PROMPTS[:2], [[1, 2, 3, 4], [5, 6]], [[9], [5, 6]])
    assert not bad.ok and bad.words().startswith("Check FAILED: the GGUF f16 file does not answer like your")
    assert not compare("merged model", "merged", PROMPTS[:1], [[1, 2]], [[1, 3]]).ok


@pytest.mark.slow
def test_smollm2_merge_and_gguf_exports(smol_run):
    """The merge check loads merged/ back from disk and generates; each GGUF check loads the file back
    with transformers' GGUF loader and generates. Their numbers are asserted exactly here."""
    from trainer.results.export.gguf import export_gguf, read_gguf_info
    from trainer.results.merge import merge_info
    from trainer.engine.models import load_tokenizer

    result = merge(smol_run, print)
    assert result.check.ok and result.check.identical == result.check.prompts == 3, result.check.words()
    reference = merge_info(smol_run)["reference"]
    assert len(reference["prompts"]) == 3 and all(reference["replies"])
    config = json.loads((smol_run / "merged" / "config.json").read_text())
    expected = {"token_embd.weight", "output_norm.weight"} | {
        f"blk.{i}.{name}.weight" for i in range(config["num_hidden_layers"])
        for name in ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up",
                     "ffn_down")}
    template = load_tokenizer(smol_run / "merged").chat_template
    for quant in ("f16", "q8_0"):
        export = export_gguf(smol_run, quant, print)
        assert export.path.name == f"smol-result-{quant}.gguf"
        info = read_gguf_info(export.path)
        assert info["architecture"] == "llama" and set(info["tensors"]) == expected
        assert info["tensors"]["blk.0.attn_q.weight"] == quant.upper()
        assert info["tensors"]["blk.0.attn_norm.weight"] == "F32"
        assert info["chat_template"] == template
        check = export.check
        print(f"GGUF {quant}: {check.identical} of {check.prompts} identical, agreement {check.agreement:.2f}")
        if quant == "f16":
            assert check.identical == check.prompts == 3  # exact
        else:
            assert check.agreement >= 0.75 and check.ok  # stated tolerance for q8_0
        report = json.loads((smol_run / "export" / f"{export.path.name}.check.json").read_text())
        assert report["tensors"] == len(expected) and report["check"]["ok"]


@pytest.mark.slow
def test_smollm2_ollama_export(smol_run, capsys):
    assert main(["export", str(smol_run), "--format", "ollama"]) == 0
    out = capsys.readouterr().out
    assert f"ollama create smol-result -f {smol_run / 'Modelfile'}" in out
    assert "Template check passed" in out
    text = (smol_run / "Modelfile").read_text()
    assert "\nFROM ./merged\n" in text and 'PARAMETER stop "<|im_end|>"' in text
    assert 'SYSTEM """You are a helpful AI assistant named SmolLM, trained by Hugging Face"""' in text


@pytest.mark.slow
def test_k_quant_goes_through_llama_quantize(trained_tiny_run, tmp_path, monkeypatch):
    """The f16 -> llama-quantize -> check pipeline, with a stand-in llama-quantize that copies its input."""
    import os
    import sys

    from trainer.results.export.gguf import export_gguf

    run = tmp_path / "tiny"
    shutil.copytree(trained_tiny_run, run)
    tool = tmp_path / "bin" / "llama-quantize"
    tool.parent.mkdir()
    tool.write_text(f"#!{sys.executable}\nimport shutil, sys\nprint('quantising to', sys.argv[3])\n"
                    "shutil.copyfile(sys.argv[1], sys.argv[2])\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tool.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("LLAMA_CPP_DIR", raising=False)
    said = []
    export = export_gguf(run, "q4_k_m", said.append)
    assert export.path == run / "export" / "tiny-q4_k_m.gguf"
    assert sorted(p.name for p in (run / "export").iterdir()) == ["tiny-q4_k_m.gguf", "tiny-q4_k_m.gguf.check.json"]
    assert f"Quantising to q4_k_m with {tool}…" in said and export.check.words() in said
    assert export.check.ok and export.check.identical == 3  # a copy of the f16 file
    assert "quantising to Q4_K_M" in (run / "logs" / "export.log").read_text()
