"""How many parameters a local model has, read from its files' headers with
the standard library only (the app never imports torch or the gguf package).

* a .gguf file: the GGUF header and tensor infos (every tensor's shape); the
  tensor data itself is never read.
* a model folder: model.safetensors, or the shards named in
  model.safetensors.index.json (8-byte little-endian header length, then a
  JSON header with every tensor's shape); else its config.json (a formula for
  decoder-only transformers).

Everything here is untrusted input: any damage or oddity gives None ("size
unknown"), never an exception. No Qt.
"""
from __future__ import annotations

import json
import math
import os
import struct
from functools import lru_cache
from pathlib import Path

MAX_SAFETENSORS_HEADER = 100 * 1024 * 1024  # real headers are kilobytes to a few MB
MAX_COUNT = 10_000_000                       # tensors, metadata entries or array items

# GGUF value types: fixed sizes (bytes) by type id; 8 = string, 9 = array.
_GGUF_FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_GGUF_STRING, _GGUF_ARRAY = 8, 9


class _Bad(Exception):
    """The file is not what it claims; the caller answers None."""


def model_params(path: str | os.PathLike) -> int | None:
    """The parameter count of a local .gguf file or model folder, or None."""
    p = Path(path).expanduser()
    try:
        stat = p.stat()
    except (OSError, ValueError):
        return None
    return _cached(str(p.resolve()), stat.st_mtime_ns, stat.st_size)


def model_params_b(path: str | os.PathLike) -> float | None:
    """The same in billions (what the estimates use), or None."""
    n = model_params(path)
    return n / 1e9 if n else None


@lru_cache(maxsize=64)
def _cached(path: str, _mtime: int, _size: int) -> int | None:
    p = Path(path)
    try:
        if p.is_file():
            return gguf_params(p) if p.suffix.lower() == ".gguf" else None
        if p.is_dir():
            return folder_params(p)
    except (OSError, _Bad, ValueError, TypeError, KeyError, OverflowError, struct.error, RecursionError):
        return None
    return None


# ----- GGUF ----------------------------------------------------------------
class _Reader:
    def __init__(self, fh):
        self.fh = fh

    def take(self, n: int) -> bytes:
        data = self.fh.read(n)
        if len(data) != n:
            raise _Bad("file ends early")
        return data

    def u32(self) -> int:
        return struct.unpack("<I", self.take(4))[0]

    def u64(self) -> int:
        return struct.unpack("<Q", self.take(8))[0]

    def count(self) -> int:
        n = self.u64()
        if n > MAX_COUNT:
            raise _Bad("implausible count")
        return n

    def skip(self, n: int) -> None:
        self.fh.seek(n, os.SEEK_CUR)

    def skip_string(self) -> None:
        self.skip(self.count())

    def string(self) -> str:
        return self.take(self.count()).decode("utf-8", "replace")

    def skip_value(self, kind: int, depth: int = 0) -> None:
        if kind in _GGUF_FIXED:
            self.skip(_GGUF_FIXED[kind])
        elif kind == _GGUF_STRING:
            self.skip_string()
        elif kind == _GGUF_ARRAY and depth < 4:
            item, n = self.u32(), self.count()
            if item in _GGUF_FIXED:
                self.skip(_GGUF_FIXED[item] * n)
            else:
                for _ in range(n):
                    self.skip_value(item, depth + 1)
        else:
            raise _Bad(f"unknown GGUF value type {kind}")


def gguf_params(path: Path) -> int:
    """Sum of every tensor's element count, from the header (GGUF v2 and v3)."""
    with open(path, "rb") as fh:
        r = _Reader(fh)
        if r.take(4) != b"GGUF":
            raise _Bad("not a GGUF file")
        if r.u32() not in (2, 3):
            raise _Bad("unsupported GGUF version")
        tensors, entries = r.count(), r.count()
        for _ in range(entries):
            r.skip_string()
            r.skip_value(r.u32())
        total = 0
        for _ in range(tensors):
            r.skip_string()
            dims = r.u32()
            if dims > 8:
                raise _Bad("implausible tensor rank")
            total += math.prod(r.u64() for _ in range(dims))
            r.take(4 + 8)  # type, data offset (read, so a cut-off file is caught)
    if total <= 0:
        raise _Bad("no tensors")
    return total


# ----- safetensors and config.json -------------------------------------------
def safetensors_params(path: Path) -> int:
    with open(path, "rb") as fh:
        raw = fh.read(8)
        if len(raw) != 8:
            raise _Bad("file ends early")
        size = struct.unpack("<Q", raw)[0]
        if not 2 <= size <= MAX_SAFETENSORS_HEADER:
            raise _Bad("implausible header size")
        header = json.loads(fh.read(size).decode("utf-8"))
    if not isinstance(header, dict):
        raise _Bad("header is not an object")
    total = 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        shape = info.get("shape") if isinstance(info, dict) else None
        if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise _Bad(f"tensor {name!r} has no shape")
        total += math.prod(shape)
    return total


def folder_params(folder: Path) -> int | None:
    single = folder / "model.safetensors"
    if single.is_file():
        return safetensors_params(single) or None
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        weight_map = json.loads(index.read_text(encoding="utf-8")).get("weight_map")
        if isinstance(weight_map, dict) and weight_map:
            shards = sorted({str(v) for v in weight_map.values()})
            if all((folder / s).is_file() and Path(s).name == s for s in shards):
                return sum(safetensors_params(folder / s) for s in shards) or None
    config = folder / "config.json"
    if config.is_file():
        return config_params(json.loads(config.read_text(encoding="utf-8")))
    return None


def config_params(cfg: dict) -> int | None:
    """A decoder-only transformer's size from its config (Llama, Qwen, SmolLM,
    Gemma...): embeddings, attention with grouped KV heads, a gated MLP."""
    if not isinstance(cfg, dict):
        return None
    cfg = cfg.get("text_config") if isinstance(cfg.get("text_config"), dict) else cfg
    try:
        hidden, layers = int(cfg["hidden_size"]), int(cfg["num_hidden_layers"])
        vocab, inter = int(cfg["vocab_size"]), int(cfg.get("intermediate_size") or 4 * hidden)
        heads = int(cfg.get("num_attention_heads") or 1)
        kv_heads = int(cfg.get("num_key_value_heads") or heads)
        head_dim = int(cfg.get("head_dim") or hidden // max(heads, 1))
    except (KeyError, TypeError, ValueError):
        return None
    if min(hidden, layers, vocab, inter, heads, kv_heads, head_dim) <= 0:
        return None
    attention = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2
    per_layer = attention + 3 * hidden * inter + 2 * hidden
    embeddings = vocab * hidden * (1 if cfg.get("tie_word_embeddings", True) else 2)
    return embeddings + layers * per_layer + hidden
