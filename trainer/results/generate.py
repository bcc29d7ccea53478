"""Replies from a run's fine-tuned model (or its base model)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from trainer.run.reader import Run
from trainer.run.decoding import Decoding
from trainer.run.errors import UserError


def load_for_run(run_dir: str | Path, base: bool = False, device: str | None = None) -> tuple[Any, Any, str]:
    """(model, tokenizer, device) for the run's adapter, or the bare base model."""
    from trainer.engine.device import check
    from trainer.engine.models import load_model, load_tokenizer, resolve_model_path

    run = Run(run_dir)
    cfg = run.config
    if not base and not run.has_adapter():
        raise UserError(f"The run {run.name} has no trained adapter yet.",
                        "Train it first (or wait for it to finish), or use --base to ask the base model.")
    device = device or check(cfg.device)["device"]
    folder = resolve_model_path(cfg.model)
    tokenizer = load_tokenizer(run.adapter_dir if run.has_adapter() else folder)
    model = load_model(folder, device)
    if not base:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, str(run.adapter_dir))
    model.eval()
    return model, tokenizer, device


def generate(run_dir: str | Path, prompt: str, base: bool = False, decoding: Decoding | None = None,
             system: str | None = None, stream: bool = False) -> str:
    """One reply, decoded the shared way (trainer.run.decoding) unless `decoding` says otherwise."""
    from trainer.engine.evaluation import generate_reply

    model, tokenizer, device = load_for_run(run_dir, base)
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
    streamer = None
    if stream:
        from transformers import TextStreamer

        streamer = TextStreamer(tokenizer, skip_prompt=True, skip_special_tokens=True)
    return generate_reply(model, tokenizer, messages, device, decoding, streamer)
