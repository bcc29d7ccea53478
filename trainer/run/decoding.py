"""How replies are decoded: one default for the samples, `dragonfarm generate`,
`dragonfarm chat`, the Try page and the learning benchmark.

Standard library only, so the app can show the defaults and limits. The torch
side (turning a Decoding into generate() arguments, with the model's own
generation defaults where it has them) is trainer.engine.decoding.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

# Greedy replies (the most likely each time) with a light repetition penalty: without
# it, small models loop ("the eighth planet, matey, the eighth planet, ...").
DEFAULT_TEMPERATURE = 0.0
DEFAULT_REPETITION_PENALTY = 1.15
DEFAULT_TOP_P = 0.95
DEFAULT_MAX_NEW_TOKENS = 256

LIMITS = {
    "temperature": (0.0, 2.0),
    "repetition_penalty": (1.0, 2.0),
    "top_p": (0.05, 1.0),
    "max_new_tokens": (1, 4096),
}

HELP = {
    "temperature": "0 gives the most likely reply every time; higher values vary more",
    "repetition_penalty": "Above 1 discourages repeating the same words; 1.15 stops small models looping "
                          "without changing their answers",
}


@dataclass(frozen=True)
class Decoding:
    """What the person chose. None means: the model's own default where it has
    one (its generation_config), else DragonFarm's default."""

    temperature: float = DEFAULT_TEMPERATURE
    repetition_penalty: float | None = None
    top_p: float | None = None
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS

    def with_changes(self, **changes: Any) -> "Decoding":
        """A copy with the given values (None leaves a value as it is), clamped to LIMITS."""
        values = {k: v for k, v in changes.items() if v is not None}
        return replace(self, **values).clamped()

    def clamped(self) -> "Decoding":
        def clamp(name: str, value: Any) -> Any:
            if value is None:
                return None
            low, high = LIMITS[name]
            if isinstance(value, float) and not math.isfinite(value):
                value = low
            return type(high)(min(max(value, low), high))
        return Decoding(temperature=clamp("temperature", float(self.temperature)),
                        repetition_penalty=clamp("repetition_penalty", self.repetition_penalty),
                        top_p=clamp("top_p", self.top_p),
                        max_new_tokens=clamp("max_new_tokens", int(self.max_new_tokens)))

    @classmethod
    def from_request(cls, request: dict[str, Any], default_max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS) -> "Decoding":
        """From a chat-protocol request or other untrusted dict: wrong types fall back to defaults."""
        def number(key: str, kind: type) -> Any:
            value = request.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return None
            return kind(value)
        return cls(temperature=number("temperature", float) or 0.0,
                   repetition_penalty=number("repetition_penalty", float),
                   top_p=number("top_p", float),
                   max_new_tokens=number("max_new_tokens", int) or default_max_new_tokens).clamped()


DEFAULT = Decoding()


def describe(decoding: Decoding) -> str:
    """In words, for logs and the model card."""
    how = "the most likely reply" if decoding.temperature <= 0 else f"sampled at temperature {decoding.temperature:g}"
    rp = decoding.repetition_penalty
    penalty = (f"repetition penalty {rp:g}" if rp is not None
               else f"the model's own repetition penalty, else {DEFAULT_REPETITION_PENALTY:g}")
    return f"{how}, {penalty}, at most {decoding.max_new_tokens} new tokens"
