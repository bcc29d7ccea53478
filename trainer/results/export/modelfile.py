"""An Ollama Modelfile from a model's own chat template (standard library only).

Ollama does not run Jinja chat templates: its TEMPLATE is a Go template. We
recognise the template family from the Jinja text (ChatML for SmolLM2 and
Qwen, Llama 3, Gemma, and DragonFarm's own default), write the matching Go
template, and take the stop parameters from the family's end-of-turn tokens
plus the tokenizer's end-of-text tokens. A missing template or stop token is
the top reason an exported model rambles, so an unknown family is an error,
never a guess.

`render_like_ollama` renders a conversation the way the Go template below
does, so the export can check itself against the model's own template.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from trainer.run.errors import UserError

CHATML, LLAMA3, GEMMA, DRAGONFARM = "chatml", "llama3", "gemma", "dragonfarm"

TEMPLATES = {
    CHATML: ("{{- range .Messages }}<|im_start|>{{ .Role }}\n"
             "{{ .Content }}<|im_end|>\n"
             "{{ end }}<|im_start|>assistant\n"),
    LLAMA3: ("{{- range .Messages }}<|start_header_id|>{{ .Role }}<|end_header_id|>\n\n"
             "{{ .Content }}<|eot_id|>{{ end }}<|start_header_id|>assistant<|end_header_id|>\n\n"),
    GEMMA: ('{{- $system := "" }}{{- range .Messages }}{{- if eq .Role "system" }}{{ $system = .Content }}'
            '{{- else }}<start_of_turn>{{ if eq .Role "assistant" }}model{{ else }}user{{ end }}\n'
            '{{ if and $system (eq .Role "user") }}{{ $system }}\n\n{{ $system = "" }}{{ end }}'
            "{{ .Content }}<end_of_turn>\n{{ end }}{{- end }}<start_of_turn>model\n"),
    DRAGONFARM: ("{{- range .Messages }}<|{{ .Role }}|>\n{{ .Content }}{EOS}\n"
                 "{{ end }}<|assistant|>\n"),
}
# Llama 3.1+ templates always write a system turn that starts with fixed text
# ("Cutting Knowledge Date: …"), with the person's system prompt after it.
LLAMA3_WITH_PREFIX = (
    '{{- if or (not .Messages) (ne (index .Messages 0).Role "system") }}'
    "<|start_header_id|>system<|end_header_id|>\n\n{PREFIX}<|eot_id|>{{ end }}"
    "{{- range .Messages }}<|start_header_id|>{{ .Role }}<|end_header_id|>\n\n"
    '{{ if eq .Role "system" }}{PREFIX}{{ end }}{{ .Content }}<|eot_id|>{{ end }}'
    "<|start_header_id|>assistant<|end_header_id|>\n\n")

TURN_STOPS = {
    CHATML: ["<|im_start|>", "<|im_end|>"],
    LLAMA3: ["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
    GEMMA: ["<start_of_turn>", "<end_of_turn>"],
    DRAGONFARM: ["<|user|>", "<|assistant|>", "<|system|>"],
}

FAMILY_NAMES = {CHATML: "ChatML (SmolLM2, Qwen)", LLAMA3: "Llama 3", GEMMA: "Gemma",
                DRAGONFARM: "DragonFarm's default"}


def detect_family(chat_template: str | None) -> str | None:
    """The template family from the Jinja text, or None when it is not one we can translate."""
    text = chat_template or ""
    if "<|im_start|>" in text and "<|im_end|>" in text:
        return CHATML
    if "<|start_header_id|>" in text and "<|eot_id|>" in text:
        return LLAMA3
    if "<start_of_turn>" in text and "<end_of_turn>" in text:
        return GEMMA
    if "'<|' + message['role'] + '|>" in text:
        return DRAGONFARM
    return None


_SYSTEM_PATTERNS = {
    CHATML: r"^<\|im_start\|>system\n(.*?)<\|im_end\|>\n<\|im_start\|>user\n",
    LLAMA3: r"^<\|start_header_id\|>system<\|end_header_id\|>\n\n(.*?)<\|eot_id\|><\|start_header_id\|>user<",
    DRAGONFARM: r"^<\|system\|>\n(.*?)\n?<\|user\|>\n",
}


def default_system_from(family: str, rendered: str, bos: str | None = None) -> str | None:
    """The system prompt a template adds by itself, read from its rendering of
    one user turn without a system message (SmolLM2 and Qwen add one)."""
    pattern = _SYSTEM_PATTERNS.get(family)
    if not pattern:
        return None
    match = re.match(pattern, rendered, re.S)
    if match is None and bos and rendered.startswith(bos):  # a leading BOS token (Llama 3)
        match = re.match(pattern, rendered[len(bos):], re.S)
    return match.group(1) if match else None


@dataclass
class ModelfileSpec:
    family: str
    source: str                      # what FROM points at, e.g. "./merged"
    stops: list[str] = field(default_factory=list)
    system: str | None = None        # the template's own default system prompt
    eos: str = ""                    # the end-of-text token (DragonFarm's default template)
    comment: str = ""
    system_prefix: str = ""          # fixed text the template puts before every system prompt (Llama 3.1+)


def stop_tokens(family: str, eos_tokens: list[str]) -> list[str]:
    """The family's turn markers plus the tokenizer's end tokens, in order, without repeats."""
    seen: list[str] = []
    for token in TURN_STOPS.get(family, []) + [t for t in eos_tokens if t]:
        if token not in seen:
            seen.append(token)
    return seen


def _quote(text: str) -> str:
    if '"""' in text:
        raise UserError("The chat template contains three double quotes in a row, which a Modelfile cannot hold.",
                        "Export as GGUF instead; LM Studio and llama.cpp read the template from the file.")
    return f'"""{text}"""'


def build_modelfile(spec: ModelfileSpec) -> str:
    if spec.family not in TEMPLATES:
        raise UserError(f"DragonFarm cannot write an Ollama template for the chat format '{spec.family}'.",
                        "Export as GGUF instead; LM Studio and llama.cpp read the template from the file.")
    template = TEMPLATES[spec.family].replace("{EOS}", spec.eos)
    if spec.system_prefix:
        if spec.family != LLAMA3 or "{{" in spec.system_prefix:
            raise UserError("This model's chat template adds text to every system prompt in a way DragonFarm "
                            "cannot write for Ollama.", "Export as GGUF instead.")
        template = LLAMA3_WITH_PREFIX.replace("{PREFIX}", spec.system_prefix)
    lines = [f"# {line}" for line in spec.comment.splitlines()] if spec.comment else []
    lines += [f"FROM {spec.source}", f"TEMPLATE {_quote(template)}"]
    if spec.system:
        lines.append(f"SYSTEM {_quote(spec.system)}")
    lines += [f"PARAMETER stop {_go_string(s)}" for s in spec.stops]
    return "\n".join(lines) + "\n"


def _go_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_like_ollama(family: str, messages: list[dict[str, str]], system: str | None = None,
                       eos: str = "", system_prefix: str = "") -> str:
    """The prompt text Ollama builds from TEMPLATES[family] (SYSTEM goes first when
    the conversation has no system message), ending with the assistant's header."""
    if system and not any(m["role"] == "system" for m in messages):
        messages = [{"role": "system", "content": system}] + list(messages)
    out = []
    if family == LLAMA3 and system_prefix:
        if not messages or messages[0]["role"] != "system":
            out.append(f"<|start_header_id|>system<|end_header_id|>\n\n{system_prefix}<|eot_id|>")
        messages = [dict(m, content=system_prefix + m["content"]) if m["role"] == "system" else m for m in messages]
    if family == CHATML:
        out += [f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages]
        out.append("<|im_start|>assistant\n")
    elif family == LLAMA3:
        out += [f"<|start_header_id|>{m['role']}<|end_header_id|>\n\n{m['content']}<|eot_id|>" for m in messages]
        out.append("<|start_header_id|>assistant<|end_header_id|>\n\n")
    elif family == GEMMA:
        pending = ""
        for m in messages:
            if m["role"] == "system":
                pending = m["content"]
                continue
            role = "model" if m["role"] == "assistant" else "user"
            prefix = f"{pending}\n\n" if pending and role == "user" else ""
            if prefix:
                pending = ""
            out.append(f"<start_of_turn>{role}\n{prefix}{m['content']}<end_of_turn>\n")
        out.append("<start_of_turn>model\n")
    elif family == DRAGONFARM:
        out += [f"<|{m['role']}|>\n{m['content']}{eos}\n" for m in messages]
        out.append("<|assistant|>\n")
    else:
        raise ValueError(family)
    return "".join(out)


def ollama_name(run_name: str) -> str:
    """A model name Ollama accepts: lower case letters, digits, '-', '_' and '.'."""
    name = re.sub(r"[^a-z0-9._-]+", "-", run_name.lower()).strip("-._")
    return name or "dragonfarm-model"


def create_command(name: str, modelfile_path: str) -> str:
    path = f'"{modelfile_path}"' if " " in modelfile_path else modelfile_path
    return f"ollama create {name} -f {path}"
