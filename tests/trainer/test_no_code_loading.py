"""Static guard: nothing in the program can load code or pickles from a model or run folder."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted(p for top in ("trainer", "dragonfarm_gui") for p in (ROOT / top).rglob("*.py"))


def calls(name: str):
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
                if called == name:
                    yield f"{path.relative_to(ROOT)}:{node.lineno}", node


def test_every_from_pretrained_refuses_remote_code():
    found = list(calls("from_pretrained"))
    assert len(found) >= 6  # models, tokenizers, gguf, peft config and adapter
    bad = [where for where, node in found
           if not any(k.arg == "trust_remote_code" and isinstance(k.value, ast.Constant) and k.value.value is False
                      for k in node.keywords)]
    assert bad == []


def test_nothing_unpickles():
    for path in SOURCES:
        text = path.read_text(encoding="utf-8")
        assert "torch.load(" not in text and "import pickle" not in text and "weights_only" not in text, path
