"""llama.cpp's own converter (convert_hf_to_gguf.py and its gguf-py), found or fetched.

From the checkout named by LLAMA_CPP_DIR if set; else from a pinned
llama-cpp-python source distribution, fetched once through pip into
DragonFarm's cache, from which only the converter, its `conversion` package
and gguf-py are extracted. It runs as a subprocess with the trainer's Python.
K-quants need a `llama-quantize` program (PATH, or LLAMA_CPP_DIR/build/bin).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from trainer.run.errors import UserError

LLAMA_CPP_PYTHON_VERSION = "0.3.36"   # vendors llama.cpp with the split `conversion` package
SCRIPT = "convert_hf_to_gguf.py"
WANTED = (SCRIPT, "conversion/", "gguf-py/", "LICENSE")
MARKER = "dragonfarm-converter.json"
CONVERTER_TYPES = ("f32", "f16", "bf16", "q8_0")


@dataclass
class Converter:
    root: Path          # the folder holding convert_hf_to_gguf.py
    source: str         # in words: where it came from

    @property
    def script(self) -> Path:
        return self.root / SCRIPT

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        extra = [str(self.root / "gguf-py"), str(self.root)]
        if env.get("PYTHONPATH"):
            extra.append(env["PYTHONPATH"])
        env["PYTHONPATH"] = os.pathsep.join(extra)
        env.setdefault("PYTHONIOENCODING", "utf-8")
        return env


def cached_root() -> Path:
    from trainer.engine.models import cache_dir

    return cache_dir() / "llama.cpp" / f"llama-cpp-python-{LLAMA_CPP_PYTHON_VERSION}"


def find_converter(on_progress: Callable[[str], None] | None = None, fetch: bool = True) -> Converter:
    env_dir = os.environ.get("LLAMA_CPP_DIR")
    if env_dir:
        root = Path(env_dir).expanduser()
        if not (root / SCRIPT).is_file() or not (root / "gguf-py").is_dir():
            raise UserError(f"LLAMA_CPP_DIR points at {root}, which has no {SCRIPT} and gguf-py folder.",
                            "Point LLAMA_CPP_DIR at a llama.cpp checkout, or unset it to let DragonFarm fetch one.")
        return Converter(root, f"your llama.cpp checkout at {root}")
    root = cached_root()
    if not (root / MARKER).is_file():
        if not fetch:
            raise UserError("llama.cpp's converter has not been fetched yet.", "Export once with a network connection.")
        fetch_converter(root, on_progress)
    return Converter(root, f"llama.cpp from llama-cpp-python {LLAMA_CPP_PYTHON_VERSION} (cached in {root})")


def fetch_converter(root: Path, on_progress: Callable[[str], None] | None = None) -> None:
    """pip download the pinned source distribution and extract the converter parts."""
    if on_progress:
        on_progress(f"Fetching llama.cpp's converter (llama-cpp-python {LLAMA_CPP_PYTHON_VERSION} sources, "
                    "about 75 MB, once)…")
    with tempfile.TemporaryDirectory(prefix="dragonfarm-llamacpp-") as tmp:
        archive = _download_sdist(Path(tmp))
        staging = root.with_name(root.name + f".partial-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        _extract(archive, staging)
        if not (staging / SCRIPT).is_file() or not (staging / "gguf-py").is_dir():
            raise UserError("The llama-cpp-python sources did not contain llama.cpp's converter.",
                            "Set LLAMA_CPP_DIR to a llama.cpp checkout instead.")
        (staging / MARKER).write_text(json.dumps({"llama_cpp_python": LLAMA_CPP_PYTHON_VERSION}), encoding="utf-8")
        shutil.rmtree(root, ignore_errors=True)
        staging.replace(root)


def _download_sdist(folder: Path) -> Path:
    """With pip when the trainer's Python has it; else (uv-made environments have no pip)
    straight from PyPI's JSON API, checking the published SHA-256."""
    import importlib.util

    spec = f"llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION}"
    fix = "Check the internet connection and try again, or set LLAMA_CPP_DIR to a llama.cpp checkout."
    if importlib.util.find_spec("pip") is not None:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", spec, "-d", str(folder),
               "--quiet"]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        archives = list(folder.glob("llama_cpp_python-*.tar.gz"))
        if done.returncode == 0 and archives:
            return archives[0]
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise UserError(f"Could not fetch llama.cpp's converter through pip ({spec}): {tail[0][:300]}", fix)
    import hashlib
    import urllib.request

    try:
        with urllib.request.urlopen(f"https://pypi.org/pypi/llama-cpp-python/{LLAMA_CPP_PYTHON_VERSION}/json",
                                    timeout=60) as response:
            release = json.load(response)
        sdist = next(u for u in release["urls"] if u.get("packagetype") == "sdist")
        target = folder / sdist["filename"]
        digest = hashlib.sha256()
        with urllib.request.urlopen(sdist["url"], timeout=60) as response, open(target, "wb") as out:
            for chunk in iter(lambda: response.read(1 << 20), b""):
                digest.update(chunk)
                out.write(chunk)
    except (OSError, ValueError, KeyError, StopIteration) as exc:
        raise UserError(f"Could not fetch llama.cpp's converter from PyPI ({spec}): {exc}", fix) from exc
    if digest.hexdigest() != sdist.get("digests", {}).get("sha256"):
        raise UserError("The downloaded llama.cpp sources do not match PyPI's checksum.", fix)
    return target


def _extract(archive: Path, target: Path) -> None:
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar:
            parts = member.name.split("/")
            # llama_cpp_python-X/vendor/llama.cpp/<rest>
            if len(parts) < 4 or parts[1:3] != ["vendor", "llama.cpp"]:
                continue
            rest = "/".join(parts[3:])
            if not member.isfile() or not any(rest == w or (w.endswith("/") and rest.startswith(w)) for w in WANTED):
                continue
            if ".." in parts or rest.startswith("/"):
                continue
            dest = target / rest
            dest.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            if source is not None:
                with source, open(dest, "wb") as out:
                    shutil.copyfileobj(source, out)


def run_converter(converter: Converter, model_dir: Path, outfile: Path, outtype: str, log_path: Path) -> None:
    cmd = [sys.executable, str(converter.script), str(model_dir), "--outtype", outtype, "--outfile", str(outfile)]
    _run_logged(cmd, converter.env(), log_path, "llama.cpp's converter")
    if not outfile.is_file():
        raise UserError("llama.cpp's converter ended without writing the GGUF file.", f"See {log_path}.")


def find_quantize() -> str | None:
    found = shutil.which("llama-quantize")
    if found:
        return found
    env_dir = os.environ.get("LLAMA_CPP_DIR")
    if env_dir:
        for name in ("build/bin/llama-quantize", "build/bin/llama-quantize.exe", "llama-quantize"):
            path = Path(env_dir) / name
            if path.is_file() and os.access(path, os.X_OK):
                return str(path)
    return None


def run_quantize(program: str, source: Path, outfile: Path, quant: str, log_path: Path) -> None:
    _run_logged([program, str(source), str(outfile), quant.upper()], dict(os.environ), log_path, "llama-quantize")


def _run_logged(cmd: list[str], env: dict[str, str], log_path: Path, what: str) -> None:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "a", encoding="utf-8") as log:
        log.write(f"\n$ {' '.join(cmd)}\n")
        log.flush()
        done = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        raise UserError(explain_failure(log_path.read_text(encoding="utf-8", errors="replace"), what),
                        f"The full output is in {log_path}.")


def explain_failure(output: str, what: str) -> str:
    """The converter's last words, turned into a sentence."""
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    for line in reversed(lines):
        if line.startswith("ModuleNotFoundError") or line.startswith("ImportError"):
            module = line.split("'")[1] if "'" in line else line.split(":", 1)[-1].strip()
            return (f"{what} needs the Python package '{module}', which the training environment lacks "
                    f"(pip install {module.split('.')[0]}).")
        if "is not supported" in line or "NotImplementedError" in line:
            return f"{what} does not support this model yet: {line[:300]}"
    last = lines[-1][:300] if lines else "no output"
    return f"{what} failed: {last}"
