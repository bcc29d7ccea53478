"""The llama.cpp converter plumbing, without converting anything."""
from __future__ import annotations

import os

import pytest

from trainer.run.errors import UserError
from trainer.results.export import llamacpp


def test_k_quants_need_llama_quantize(tmp_path, monkeypatch):
    from dfhelpers import example_chats, write_run
    from trainer.results.export.gguf import export_gguf

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("LLAMA_CPP_DIR", raising=False)
    run = write_run(tmp_path / "r", "x", example_chats(2), example_chats(1))
    with pytest.raises(UserError, match="q4_k_m needs llama.cpp's llama-quantize program, which was not found"):
        export_gguf(run, "q4_k_m")
    with pytest.raises(UserError, match="'q3' is not a GGUF format DragonFarm knows"):
        export_gguf(run, "q3")


def test_llama_cpp_dir_is_used_and_checked(tmp_path, monkeypatch):
    monkeypatch.setenv("LLAMA_CPP_DIR", str(tmp_path))
    with pytest.raises(UserError, match="has no convert_hf_to_gguf.py and gguf-py folder"):
        llamacpp.find_converter()
    (tmp_path / "convert_hf_to_gguf.py").write_text("")
    (tmp_path / "gguf-py").mkdir()
    found = llamacpp.find_converter(fetch=False)
    assert found.script == tmp_path / "convert_hf_to_gguf.py"
    assert found.env()["PYTHONPATH"].split(os.pathsep)[:2] == [str(tmp_path / "gguf-py"), str(tmp_path)]
    tool = tmp_path / "build" / "bin" / "llama-quantize"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert llamacpp.find_quantize() == str(tool)


def test_converter_failures_in_words():
    out = "INFO: loading\nTraceback (most recent call last):\n  File x\nModuleNotFoundError: No module named 'sentencepiece'\n"
    assert llamacpp.explain_failure(out, "llama.cpp's converter") == (
        "llama.cpp's converter needs the Python package 'sentencepiece', which the training environment lacks "
        "(pip install sentencepiece).")
    out = "NotImplementedError: Architecture 'FooForCausalLM' not supported!\n"
    assert llamacpp.explain_failure(out, "llama.cpp's converter").startswith(
        "llama.cpp's converter does not support this model yet: NotImplementedError")
    assert llamacpp.explain_failure("", "llama-quantize") == "llama-quantize failed: no output"


def test_extract_takes_only_the_converter_parts(tmp_path):
    import io
    import tarfile

    archive = tmp_path / "llama_cpp_python-0.0.0.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name in ("vendor/llama.cpp/convert_hf_to_gguf.py", "vendor/llama.cpp/conversion/llama.py",
                     "vendor/llama.cpp/gguf-py/gguf/__init__.py", "vendor/llama.cpp/ggml/src/big.c",
                     "llama_cpp/llama.py"):
            data = b"x"
            info = tarfile.TarInfo(f"llama_cpp_python-0.0.0/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("llama_cpp_python-0.0.0/vendor/llama.cpp/conversion/evil.py")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    target = tmp_path / "out"
    target.mkdir()
    llamacpp._extract(archive, target)
    assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file()) == [
        "conversion/llama.py", "convert_hf_to_gguf.py", "gguf-py/gguf/__init__.py"]
