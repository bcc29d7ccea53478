"""Nested training state (optimizer, scheduler, RNG) as safetensors + JSON: never a pickle.

A checkpoint may come from someone else (a shared or copied run folder), so
it is read with formats that cannot run code: tensors go into a .safetensors
file, everything else into JSON that only ever holds plain values. Tuples,
dicts with non-string keys (the optimizer's per-parameter state is keyed by
int) and tensors are tagged so the structure comes back exactly.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

_TENSOR, _TUPLE, _DICT, _FLOAT = "__tensor__", "__tuple__", "__dict__", "__float__"


class StateFormatError(ValueError):
    """The state files are damaged or hold something that is not plain data."""


def _encode(obj: Any, tensors: dict[str, Any], path: str) -> Any:
    import torch

    if isinstance(obj, torch.Tensor):
        key = f"t{len(tensors)}"
        tensors[key] = obj.detach().cpu().contiguous()
        return {_TENSOR: key}
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else {_FLOAT: repr(obj)}
    if isinstance(obj, tuple):
        return {_TUPLE: [_encode(v, tensors, f"{path}[{i}]") for i, v in enumerate(obj)]}
    if isinstance(obj, list):
        return [_encode(v, tensors, f"{path}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, dict):
        if all(isinstance(k, str) and not k.startswith("__") for k in obj):
            return {k: _encode(v, tensors, f"{path}.{k}") for k, v in obj.items()}
        return {_DICT: [[_encode(k, tensors, path), _encode(v, tensors, f"{path}[{k!r}]")] for k, v in obj.items()]}
    raise TypeError(f"cannot store {type(obj).__name__} at {path or 'the top'} without pickle")


def _decode(obj: Any, tensors: dict[str, Any]) -> Any:
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, list):
        return [_decode(v, tensors) for v in obj]
    if not isinstance(obj, dict):
        raise StateFormatError(f"unexpected value {type(obj).__name__}")
    if len(obj) == 1:
        (tag, value), = obj.items()
        if tag == _TENSOR:
            if not isinstance(value, str) or value not in tensors:
                raise StateFormatError(f"tensor {value!r} is missing")
            return tensors[value]
        if tag == _TUPLE and isinstance(value, list):
            return tuple(_decode(v, tensors) for v in value)
        if tag == _FLOAT and value in ("inf", "-inf", "nan"):
            return float(value)
        if tag == _DICT and isinstance(value, list):
            out = {}
            for pair in value:
                if not isinstance(pair, list) or len(pair) != 2:
                    raise StateFormatError("a damaged mapping")
                key = _decode(pair[0], tensors)
                if not isinstance(key, (int, str, float, bool, tuple)) and key is not None:
                    raise StateFormatError("a mapping key that is not a plain value")
                out[key] = _decode(pair[1], tensors)
            return out
    return {k: _decode(v, tensors) for k, v in obj.items()}


def save_state(state: dict[str, Any], json_path: Path, tensors_path: Path) -> None:
    from safetensors.torch import save_file

    tensors: dict[str, Any] = {}
    tree = _encode(state, tensors, "")
    save_file(tensors, str(tensors_path))
    json_path.write_text(json.dumps(tree), encoding="utf-8")


def load_state(json_path: Path, tensors_path: Path) -> dict[str, Any]:
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        tensors = load_file(str(tensors_path))
        tree = json.loads(json_path.read_text(encoding="utf-8"))
    except (OSError, ValueError, SafetensorError) as exc:
        raise StateFormatError(str(exc)) from exc
    state = _decode(tree, tensors)
    if not isinstance(state, dict):
        raise StateFormatError("the state is not a mapping")
    return state
