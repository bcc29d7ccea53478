"""`dragonfarm export RUN_DIR --format ollama [--quant q8_0]`: a Modelfile next to
the merged model (or a GGUF file), and the one `ollama create` command.

It checks itself twice: the merged model answers like the fine-tuned one (the
merge check), and the Modelfile's TEMPLATE + SYSTEM render the held-out
prompts into exactly the text the model's own chat template makes (the
beginning-of-text token aside, which llama.cpp adds by itself).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from trainer.run.files import MERGED_DIR
from trainer.run.reader import Run
from trainer.run.errors import UserError
from trainer.results.export import modelfile as mf

MODELFILE = "Modelfile"
Progress = Callable[[str], None]


@dataclass
class OllamaExport:
    modelfile: Path
    name: str
    command: str
    family: str
    template_ok: bool
    template_words: str
    merge_check: dict[str, Any] | None


def spec_for_tokenizer(tokenizer: Any, source: str, comment: str = "") -> mf.ModelfileSpec:
    """The Modelfile settings that reproduce this tokenizer's chat template."""
    template = tokenizer.chat_template if isinstance(tokenizer.chat_template, str) else None
    family = mf.detect_family(template)
    if family is None:
        raise UserError("This model's chat template is not one DragonFarm can translate for Ollama "
                        "(it knows ChatML, Llama 3 and Gemma).",
                        "Export as GGUF instead (--format gguf): LM Studio and llama.cpp read the template "
                        "from the file.")
    probe = [{"role": "user", "content": "PROBE"}]
    rendered = tokenizer.apply_chat_template(probe, tokenize=False, add_generation_prompt=True)
    system = mf.default_system_from(family, rendered, tokenizer.bos_token)
    prefix = ""
    if system:  # is it a default, or fixed text that comes before any system prompt too?
        given = tokenizer.apply_chat_template([{"role": "system", "content": "PROBESYS"}] + probe, tokenize=False,
                                              add_generation_prompt=True)
        with_given = mf.default_system_from(family, given, tokenizer.bos_token) or ""
        if with_given.endswith("PROBESYS") and with_given[:-len("PROBESYS")] == system:
            prefix, system = system, None
    eos = [tokenizer.eos_token] if tokenizer.eos_token else []
    return mf.ModelfileSpec(family, source, mf.stop_tokens(family, eos), system, tokenizer.eos_token or "", comment,
                            system_prefix=prefix)


def template_check(tokenizer: Any, spec: mf.ModelfileSpec, prompts: list[list[dict[str, str]]]) -> tuple[bool, str]:
    """Does Ollama's rendering equal the model's own template on these prompts?"""
    bos = tokenizer.bos_token or ""
    for messages in prompts:
        own = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        ours = mf.render_like_ollama(spec.family, messages, spec.system, spec.eos, spec.system_prefix)
        if bos and own.startswith(bos) and not ours.startswith(bos):
            own = own[len(bos):]  # the template writes the BOS token, which llama.cpp adds by itself
        if own != ours:
            at = next((i for i, (a, b) in enumerate(zip(own, ours)) if a != b), min(len(own), len(ours)))
            return False, (f"The Modelfile's template formats a held-out conversation differently from the model's "
                           f"own template (from character {at}: expected {own[at:at + 40]!r}, "
                           f"Ollama would send {ours[at:at + 40]!r}). Replies in Ollama may differ.")
    return True, (f"Template check passed: the Modelfile ({mf.FAMILY_NAMES[spec.family]} format) formats "
                  f"{len(prompts)} of {len(prompts)} held-out conversations exactly like the model's own template.")


def export_ollama(run_dir: str | Path, quant: str | None = None, on_progress: Progress = print,
                  check: bool = True, last: bool = False) -> OllamaExport:
    from trainer.results.merge import ensure_merged, merge_info
    from trainer.engine.models import load_tokenizer

    run = Run(run_dir)
    info = ensure_merged(run.path, on_progress, last=last)
    if quant:
        from trainer.results.export.gguf import export_gguf

        gguf = export_gguf(run.path, quant, on_progress, check=check, last=last)
        source = "./" + gguf.path.relative_to(run.path).as_posix()
    else:
        source = f"./{MERGED_DIR}"
    tokenizer = load_tokenizer(run.path / MERGED_DIR)
    name = mf.ollama_name(run.name)
    path = run.path / MODELFILE
    command = mf.create_command(name, str(path))
    comment = (f"Made by DragonFarm from the run {run.name} (base model {run.config_dict().get('model', '?')}).\n"
               f"Create the Ollama model with:  {command}")
    spec = spec_for_tokenizer(tokenizer, source, comment)
    prompts = (info.get("reference") or {}).get("prompts") or [[{"role": "user", "content": "Hello!"}]]
    ok, words = template_check(tokenizer, spec, prompts) if check else (True, "")
    path.write_text(mf.build_modelfile(spec), encoding="utf-8")
    merge_check = (merge_info(run.path).get("check") or None)
    if merge_check:
        on_progress(merge_check.get("words", ""))
    if words:
        on_progress(words)
    on_progress(f"Modelfile: {path}")
    on_progress(f"To use it in Ollama, run:\n    {command}\nthen: ollama run {name}")
    return OllamaExport(path, name, command, spec.family, ok, words, merge_check)
