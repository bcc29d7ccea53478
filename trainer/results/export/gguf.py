"""`dragonfarm export RUN_DIR --format gguf [--quant f16|q8_0|q4_k_m...]`.

merged/ (made first when missing or stale) goes through llama.cpp's own
converter into export/NAME-QUANT.gguf; K-quants go through llama-quantize from
an f16 file. Then the file checks itself: the gguf reader must find the
tensors and the chat template, and the model loaded back with transformers'
GGUF loader must answer the held-out prompts like the fine-tuned model did.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from trainer.run.files import MERGED_DIR
from trainer.run.reader import Run
from trainer.run.errors import UserError
from trainer.run.files import EXPORT_DIR, EXPORT_LOG
from trainer.results.export import llamacpp
from trainer.results.check import CheckResult, compare, greedy_ids

K_QUANTS = ("q2_k", "q3_k_s", "q3_k_m", "q3_k_l", "q4_0", "q4_1", "q4_k_s", "q4_k_m", "q5_0", "q5_1",
            "q5_k_s", "q5_k_m", "q6_k")
QUANTS = llamacpp.CONVERTER_TYPES + K_QUANTS
Progress = Callable[[str], None]


@dataclass
class GgufExport:
    path: Path
    quant: str
    info: dict[str, Any]
    check: CheckResult | None


def read_gguf_info(path: Path) -> dict[str, Any]:
    """Architecture, tensor names and types, chat template and end token from a GGUF file."""
    from gguf import GGUFReader

    reader = GGUFReader(str(path))

    def field(name: str) -> Any:
        f = reader.fields.get(name)
        if f is None or not f.data:
            return None
        value = f.parts[f.data[0]]
        try:
            return bytes(value).decode("utf-8") if value.dtype.kind == "u" and value.dtype.itemsize == 1 \
                else value.tolist()[0]
        except (AttributeError, UnicodeDecodeError):
            return None

    return {"architecture": field("general.architecture"), "chat_template": field("tokenizer.chat_template"),
            "eos_token_id": field("tokenizer.ggml.eos_token_id"), "file_type": field("general.file_type"),
            "tensors": {t.name: t.tensor_type.name for t in reader.tensors}}


def export_name(run: Run, quant: str) -> str:
    from trainer.results.export.modelfile import ollama_name

    return f"{ollama_name(run.name)}-{quant.lower()}.gguf"


def export_gguf(run_dir: str | Path, quant: str = "f16", on_progress: Progress = print,
                check: bool = True, last: bool = False) -> GgufExport:
    from trainer.results.merge import ensure_merged

    quant = quant.lower()
    if quant not in QUANTS:
        raise UserError(f"'{quant}' is not a GGUF format DragonFarm knows.",
                        f"Use one of: {', '.join(QUANTS)} (f16 keeps the most quality, q8_0 is half the size).")
    run = Run(run_dir)
    quantize = None
    if quant not in llamacpp.CONVERTER_TYPES:
        quantize = llamacpp.find_quantize()
        if quantize is None:
            raise UserError(f"{quant} needs llama.cpp's llama-quantize program, which was not found.",
                            "Install llama.cpp (so llama-quantize is on the PATH) or set LLAMA_CPP_DIR to a built "
                            "checkout; or export f16 or q8_0, which need nothing else.")
    info = ensure_merged(run.path, on_progress, last=last)
    converter = llamacpp.find_converter(on_progress)
    out_dir = run.path / EXPORT_DIR
    out_dir.mkdir(exist_ok=True)
    target = out_dir / export_name(run, quant)
    partial = target.with_name(target.name + ".partial")
    log_path = run.path / EXPORT_LOG
    on_progress(f"Converting merged/ to GGUF {quant} with {converter.source}…")
    first = partial if quantize is None else out_dir / (export_name(run, "f16") + ".partial")
    llamacpp.run_converter(converter, run.path / MERGED_DIR, first, quant if quantize is None else "f16", log_path)
    if quantize is not None:
        on_progress(f"Quantising to {quant} with {quantize}…")
        llamacpp.run_quantize(quantize, first, partial, quant, log_path)
        first.unlink(missing_ok=True)
    os.replace(partial, target)
    meta = read_gguf_info(target)
    result = check_gguf(run.path, target, quant, info, meta, on_progress) if check else None
    report = {"file": target.name, "quant": quant, "converter": converter.source,
              "tensors": len(meta["tensors"]), "architecture": meta["architecture"],
              "check": result.as_dict() if result else None}
    (out_dir / (target.name + ".check.json")).write_text(json.dumps(report, indent=2), encoding="utf-8")
    on_progress(f"GGUF file: {target} ({target.stat().st_size / 1e6:.0f} MB)")
    return GgufExport(target, quant, meta, result)


def check_gguf(run_dir: Path, path: Path, quant: str, merge_info: dict[str, Any], meta: dict[str, Any],
               on_progress: Progress = print) -> CheckResult:
    from trainer.engine.models import load_tokenizer

    tokenizer = load_tokenizer(run_dir / MERGED_DIR)
    if not meta["tensors"]:
        raise UserError(f"The GGUF file {path.name} holds no tensors.", f"See {run_dir / EXPORT_LOG}.")
    if (meta.get("chat_template") or "") != (tokenizer.chat_template or ""):
        raise UserError(f"The GGUF file {path.name} does not carry the model's chat template, so chat apps "
                        "would format conversations wrongly.", f"See {run_dir / EXPORT_LOG}.")
    on_progress("Checking the GGUF file: loading it back and asking the held-out prompts…")
    model = load_gguf_model(path)
    reference = merge_info.get("reference") or {}
    prompts, replies = reference.get("prompts") or [], reference.get("replies") or []
    result = compare(f"GGUF {quant} file", quant, prompts, replies, greedy_ids(model, tokenizer, prompts), tokenizer)
    on_progress(result.words())
    return result


def load_gguf_model(path: Path) -> Any:
    """The GGUF model through transformers' own loader (dequantised to float32)."""
    import torch
    from transformers import AutoModelForCausalLM

    try:
        return AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32,
                                                    trust_remote_code=False)
    except Exception as exc:  # noqa: BLE001 - reported in words
        raise UserError(f"The GGUF file {path.name} could not be loaded back to check it: {exc}",
                        "The file may still work in llama.cpp, but it was not verified.") from exc
