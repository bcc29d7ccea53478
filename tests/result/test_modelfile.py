"""Ollama Modelfiles from chat templates: family detection, exact text, and the
rendering check against the model's own (Jinja) template."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import jinja2
import pytest

from trainer.run.errors import UserError
from trainer.results.export import modelfile as mf
from trainer.results.export.ollama import spec_for_tokenizer, template_check

# Written here in the Llama 3 and Gemma formats (not copied from a model).
LLAMA3_TEMPLATE = (
    "{{ bos_token }}{% if messages[0]['role'] != 'system' %}"
    "{{ '<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant.<|eot_id|>' }}{% endif %}"
    "{% for m in messages %}{{ '<|start_header_id|>' + m['role'] + '<|end_header_id|>\n\n' + m['content'] | trim"
    " + '<|eot_id|>' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}")
GEMMA_TEMPLATE = (
    "{{ bos_token }}{% set ns = namespace(system='') %}{% for m in messages %}"
    "{% if m['role'] == 'system' %}{% set ns.system = m['content'] + '\n\n' %}{% else %}"
    "{{ '<start_of_turn>' + ('model' if m['role'] == 'assistant' else 'user') + '\n' }}"
    "{% if m['role'] == 'user' %}{{ ns.system }}{% set ns.system = '' %}{% endif %}"
    "{{ m['content'] | trim + '<end_of_turn>\n' }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %}")

CONVERSATIONS = [
    [{"role": "user", "content": "What is 3 plus 4?"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
     {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "And you?"}],
]


class JinjaTokenizer:
    """Just enough of a tokenizer for the Modelfile code: a template, BOS and EOS."""

    def __init__(self, template: str, bos: str, eos: str):
        self.chat_template, self.bos_token, self.eos_token = template, bos, eos

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True):
        env = jinja2.Environment()
        return env.from_string(self.chat_template).render(messages=messages, bos_token=self.bos_token,
                                                          add_generation_prompt=add_generation_prompt)


def test_family_detection(smollm2_tokenizer):
    assert mf.detect_family(smollm2_tokenizer.chat_template) == mf.CHATML
    assert mf.detect_family(LLAMA3_TEMPLATE) == mf.LLAMA3
    assert mf.detect_family(GEMMA_TEMPLATE) == mf.GEMMA
    from trainer.engine.models import DEFAULT_CHAT_TEMPLATE

    assert mf.detect_family(DEFAULT_CHAT_TEMPLATE) == mf.DRAGONFARM
    assert mf.detect_family("{{ messages }}") is None and mf.detect_family(None) is None


def test_chatml_modelfile_exact(smollm2_tokenizer):
    spec = spec_for_tokenizer(smollm2_tokenizer, "./merged", "Made by DragonFarm.")
    assert spec.family == mf.CHATML
    assert mf.build_modelfile(spec) == (
        "# Made by DragonFarm.\n"
        "FROM ./merged\n"
        'TEMPLATE """{{- range .Messages }}<|im_start|>{{ .Role }}\n'
        "{{ .Content }}<|im_end|>\n"
        "{{ end }}<|im_start|>assistant\n"
        '"""\n'
        'SYSTEM """You are a helpful AI assistant named SmolLM, trained by Hugging Face"""\n'
        'PARAMETER stop "<|im_start|>"\n'
        'PARAMETER stop "<|im_end|>"\n')
    ok, words = template_check(smollm2_tokenizer, spec, CONVERSATIONS)
    assert ok, words
    assert words.startswith("Template check passed: the Modelfile (ChatML (SmolLM2, Qwen) format) formats 2 of 2")


def test_llama3_modelfile_exact():
    tok = JinjaTokenizer(LLAMA3_TEMPLATE, "<|begin_of_text|>", "<|eot_id|>")
    spec = spec_for_tokenizer(tok, "./export/my-run-q8_0.gguf")
    assert mf.build_modelfile(spec) == (
        "FROM ./export/my-run-q8_0.gguf\n"
        'TEMPLATE """{{- range .Messages }}<|start_header_id|>{{ .Role }}<|end_header_id|>\n\n'
        "{{ .Content }}<|eot_id|>{{ end }}<|start_header_id|>assistant<|end_header_id|>\n\n"
        '"""\n'
        'SYSTEM """You are a helpful assistant."""\n'
        'PARAMETER stop "<|start_header_id|>"\n'
        'PARAMETER stop "<|end_header_id|>"\n'
        'PARAMETER stop "<|eot_id|>"\n')
    ok, words = template_check(tok, spec, CONVERSATIONS)  # the BOS token is llama.cpp's to add
    assert ok, words


def test_gemma_and_default_templates_render_like_the_model():
    tok = JinjaTokenizer(GEMMA_TEMPLATE, "<bos>", "<eos>")
    spec = spec_for_tokenizer(tok, "./merged")
    assert spec.system is None and spec.stops == ["<start_of_turn>", "<end_of_turn>", "<eos>"]
    assert template_check(tok, spec, CONVERSATIONS)[0]
    assert 'PARAMETER stop "<end_of_turn>"' in mf.build_modelfile(spec)
    from trainer.engine.models import DEFAULT_CHAT_TEMPLATE

    tok = JinjaTokenizer(DEFAULT_CHAT_TEMPLATE.replace("eos_token", "'</s>'"), "<s>", "</s>")
    spec = spec_for_tokenizer(tok, "./merged")
    assert template_check(tok, spec, CONVERSATIONS)[0]
    assert "{{ .Content }}</s>\n" in mf.build_modelfile(spec)


def test_a_template_mismatch_is_reported_in_words():
    tok = JinjaTokenizer(LLAMA3_TEMPLATE.replace("| trim", ""), "<|begin_of_text|>", "<|eot_id|>")
    spec = spec_for_tokenizer(tok, "./merged")
    spec.system = "Something else."
    ok, words = template_check(tok, spec, CONVERSATIONS)
    assert not ok
    assert words.startswith("The Modelfile's template formats a held-out conversation differently")
    assert "'You are a helpful assistant." in words and "'Something else." in words


def test_unknown_template_is_refused_not_guessed():
    with pytest.raises(UserError, match="not one DragonFarm can translate for Ollama"):
        spec_for_tokenizer(JinjaTokenizer("{{ messages }}", "", "</s>"), "./merged")


def test_names_and_command():
    assert mf.ollama_name("My Run: v2!") == "my-run-v2"
    assert mf.ollama_name("***") == "dragonfarm-model"
    assert mf.create_command("my-run", "/runs/my run/Modelfile") == 'ollama create my-run -f "/runs/my run/Modelfile"'
    assert mf.create_command("x", "/r/Modelfile") == "ollama create x -f /r/Modelfile"


LLAMA31_TEMPLATE = (  # always a system turn, opening with fixed text; the person's prompt follows it
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{% set sys = messages[0]['content'] %}"
    "{% set messages = messages[1:] %}{% else %}{% set sys = '' %}{% endif %}"
    "{{ '<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n\n' + sys + '<|eot_id|>' }}"
    "{% for m in messages %}{{ '<|start_header_id|>' + m['role'] + '<|end_header_id|>\n\n' + m['content'] + '<|eot_id|>' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}")


def test_llama31_fixed_system_text_is_kept_with_and_without_a_system_prompt():
    tok = JinjaTokenizer(LLAMA31_TEMPLATE, "<|begin_of_text|>", "<|eot_id|>")
    spec = spec_for_tokenizer(tok, "./merged")
    assert spec.system is None and spec.system_prefix == "Cutting Knowledge Date: December 2023\n\n"
    ok, words = template_check(tok, spec, CONVERSATIONS)
    assert ok, words
    assert mf.build_modelfile(spec) == (
        "FROM ./merged\n"
        'TEMPLATE """{{- if or (not .Messages) (ne (index .Messages 0).Role "system") }}'
        "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n\n<|eot_id|>{{ end }}"
        "{{- range .Messages }}<|start_header_id|>{{ .Role }}<|end_header_id|>\n\n"
        '{{ if eq .Role "system" }}Cutting Knowledge Date: December 2023\n\n{{ end }}{{ .Content }}<|eot_id|>{{ end }}'
        "<|start_header_id|>assistant<|end_header_id|>\n\n"
        '"""\n'
        'PARAMETER stop "<|start_header_id|>"\n'
        'PARAMETER stop "<|end_header_id|>"\n'
        'PARAMETER stop "<|eot_id|>"\n')


@pytest.mark.skipif(shutil.which("go") is None, reason="needs the Go toolchain (apt install golang-go)")
def test_the_go_templates_render_like_the_python_mirror(tmp_path):
    """Ollama's TEMPLATE is Go text/template: run each one through Go itself."""
    import json
    import subprocess

    source = Path(__file__).parent / "gotemplate" / "main.go"
    (tmp_path / "main.go").write_text(source.read_text())
    (tmp_path / "go.mod").write_text("module gotemplate\n\ngo 1.18\n")
    conversations = CONVERSATIONS + [[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"},
                                      {"role": "user", "content": "Again"}]]
    cases, expected = [], []
    variants = [(family, "") for family in mf.TEMPLATES] + [(mf.LLAMA3, "Cutting Knowledge Date: December 2023\n\n")]
    for family, prefix in variants:
        text = mf.build_modelfile(mf.ModelfileSpec(family, "./merged", eos="</s>", system_prefix=prefix))
        template = text.split('TEMPLATE """', 1)[1].split('"""', 1)[0]
        for messages in conversations:
            cases.append({"Template": template,
                          "Messages": [{"Role": m["role"], "Content": m["content"]} for m in messages]})
            expected.append(mf.render_like_ollama(family, messages, None, "</s>", prefix))
    env = dict(os.environ, GOFLAGS="-mod=mod", GOCACHE=str(tmp_path / "cache"), GOPATH=str(tmp_path / "gopath"))
    done = subprocess.run(["go", "run", "main.go"], cwd=tmp_path, input=json.dumps(cases), capture_output=True,
                          text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == expected
    assert len(expected) == 15  # 5 templates x 3 conversations
