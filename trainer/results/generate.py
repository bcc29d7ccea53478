"""Replies from a run's fine-tuned model (or its base model)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from trainer.run.reader import Run
from trainer.run.decoding import Decoding
from trainer.run.errors import UserError


def load_for_run(run_dir: str | Path, base: bool = False, device: str | None = None,
                 last: bool = False) -> tuple[Any, Any, str]:
    """(model, tokenizer, device) for the run's adapter (the best one unless `last`), or the bare base model."""
    from trainer.engine.device import check
    from trainer.engine.models import load_model, load_tokenizer, resolve_model_path

    run = Run(run_dir)
    cfg = run.config
    if not base and not run.has_adapter():
        raise UserError(f"The run {run.name} has no trained adapter yet.",
                        "Train it first (or wait for it to finish), or use --base to ask the base model.")
    device = device or check(cfg.device)["device"]
    folder = resolve_model_path(cfg.model)
    adapter = run.adapter_for(last)
    tokenizer = load_tokenizer(adapter if run.has_adapter() else folder)
    model = load_model(folder, device)
    if not base:
        model = load_adapter(model, adapter)
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


def load_adapter(model: Any, adapter_dir: Path) -> Any:
    """The run's adapter onto the base model: safetensors weights only (a .bin is a pickle and never loaded)."""
    from peft import PeftConfig, PeftModel

    if not (adapter_dir / "adapter_model.safetensors").is_file():
        raise UserError(f"The adapter in {adapter_dir} has no adapter_model.safetensors file.",
                        "Train the run again; DragonFarm never loads adapter weights from other file kinds.")
    try:
        config = PeftConfig.from_pretrained(str(adapter_dir), trust_remote_code=False)
    except (ValueError, OSError, TypeError) as exc:
        raise UserError(f"The adapter settings in {adapter_dir} are damaged: {str(exc)[:300]}",
                        "Train the run again.") from exc
    if getattr(config, "peft_type", None) is None or str(getattr(config.peft_type, "value", config.peft_type)) != "LORA":
        raise UserError(f"The adapter in {adapter_dir} is not a LoRA adapter.", "Train the run again.")
    config.inference_mode = True
    from trainer.engine.models import peft_quietly

    with peft_quietly():
        return PeftModel.from_pretrained(model, str(adapter_dir), config=config, trust_remote_code=False)
