"""The model card (README.md) that `dragonfarm push` uploads, written from the run.

It says what the model is (base model and its license where the preset table
knows it), what it was trained on (example counts and the data file's SHA-256
fingerprint from data/import.json, never the data itself), with which
settings, how the held-out loss changed, and a few sample replies (optional).
"""
from __future__ import annotations

import json
import re
from pathlib import PurePath
from typing import Any

from trainer.run.files import IMPORT_FILE
from trainer.run.presets import find_preset
from trainer.run.reader import Run

# The Hub's license identifiers for the licenses in resources/presets.json
LICENSE_IDS = {"apache 2.0": "apache-2.0", "mit": "mit", "gemma": "gemma", "llama 3.2": "llama3.2",
               "llama 3.1": "llama3.1", "llama 3": "llama3"}
SETTINGS = ("epochs", "max_steps", "learning_rate", "lr_scheduler", "batch_size", "gradient_accumulation",
            "max_length", "lora_r", "lora_alpha", "lora_dropout", "target_modules", "seed")


def _yaml_str(text: str) -> str:
    return json.dumps(str(text), ensure_ascii=False)   # a JSON string is a valid YAML string


def _loss(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, (int, float)) else "not measured"


def _quote(text: str, limit: int = 400) -> str:
    text = " ".join(str(text or "").split())
    text = text if len(text) <= limit else text[:limit] + "…"
    return "> " + (text or "(empty)")


def model_card(run_dir: Any, what: str = "adapter", samples: bool = True, adapter: str = "best",
               repo_id: str = "REPO_ID") -> str:
    """what: "adapter", "merged" or "gguf"; adapter: which adapter it came from ("best" or "last")."""
    run = Run(run_dir)
    cfg = run.config_dict()
    base = str(cfg.get("model", "?"))
    preset = find_preset(base)
    base_id = preset.id if preset else base
    on_hub = bool(re.fullmatch(r"[\w.-]+/[\w.-]+", base_id)) and not base_id.startswith(".")
    if not on_hub:   # a local folder or .gguf file: its name only, never the person's folders
        base_id = PurePath(base_id.replace("\\", "/")).name or "a local model"
    license_words = preset.license if preset else None
    try:
        imported = json.loads((run.path / IMPORT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        imported = {}
    imported = imported if isinstance(imported, dict) else {}
    ev, status = run.eval(), run.status()

    meta = ["---"]
    if on_hub:
        meta.append(f"base_model: {_yaml_str(base_id)}")
    lic = LICENSE_IDS.get((license_words or "").lower())
    if lic:
        meta.append(f"license: {lic}")
    elif license_words:
        meta += ["license: other", f"license_name: {_yaml_str(license_words)}"]
    meta += ["library_name: " + ("peft" if what == "adapter" else "transformers" if what == "merged" else "gguf"),
             "pipeline_tag: text-generation", "tags:", "  - dragonfarm", "  - lora", "---", ""]

    kinds = {"adapter": "a LoRA adapter", "merged": "a model with a LoRA adapter merged in",
             "gguf": "a GGUF file of a model with a LoRA adapter merged in"}
    lines = [f"# {run.name}", "",
             f"This is {kinds[what]} for [{base_id}](https://huggingface.co/{base_id}), fine-tuned with "
             "DragonFarm on the owner's own examples (loss on the replies only)."
             if on_hub else f"This is {kinds[what]} for the base model `{base_id}`, fine-tuned with DragonFarm.",
             ""]
    if license_words:
        lines += [f"The base model's license ({license_words}) applies to this model too.", ""]
    if what == "adapter":
        lines += ["Use it with peft:", "", "```python",
                  "from peft import AutoPeftModelForCausalLM",
                  f"model = AutoPeftModelForCausalLM.from_pretrained({json.dumps(repo_id)})", "```", ""]

    lines += ["## Training data", ""]
    examples = status.get("examples") if isinstance(status.get("examples"), dict) else {}
    split = imported.get("split") if isinstance(imported.get("split"), dict) else {}
    source = imported.get("source") if isinstance(imported.get("source"), dict) else {}
    train_n = examples.get("train", split.get("train"))
    eval_n = examples.get("eval", split.get("eval"))
    lines.append(f"- {train_n if train_n is not None else '?'} training examples, "
                 f"{eval_n if eval_n is not None else '?'} held out for checking")
    if source.get("sha256"):
        lines.append(f"- data file fingerprint (SHA-256): `{source['sha256']}`")
    lines += ["- the examples themselves are not published here", ""]

    lines += ["## Settings", "", "| setting | value |", "|---|---|"]
    lines += [f"| {key} | {cfg[key]} |" for key in SETTINGS if key in cfg]
    lines.append("")

    best = ev.get("best") if isinstance(ev.get("best"), dict) else {}
    before = (ev.get("before") or {}).get("loss") if isinstance(ev.get("before"), dict) else None
    after = (ev.get("after") or {}).get("loss") if isinstance(ev.get("after"), dict) else None
    lines += ["## Results", "", "Held-out loss (lower is better):", "",
              f"- before training: {_loss(before)}", f"- after training: {_loss(after)}"]
    if adapter == "best" and best.get("adapter") == "adapter-best":
        lines.append(f"- this upload is the best point, step {best.get('step')}: {_loss(best.get('loss'))}")
    lines.append("")

    if samples:
        shown = [s for s in run.samples() if isinstance(s, dict) and s.get("finetuned")][:3]
        if shown:
            lines += ["## Sample replies", "", "Prompts the model did not train on (replies of the last step).", ""]
            for s in shown:
                lines += ["**Prompt**", "", _quote(s.get("prompt", "")), "", "**Reply**", "",
                          _quote(s.get("finetuned", "")), ""]
    return "\n".join(meta + lines).rstrip() + "\n"
