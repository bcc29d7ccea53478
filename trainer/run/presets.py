"""The model preset table, kept in trainer/resources/presets.json (read by the app too)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

from trainer.run.resources import resource


@dataclass(frozen=True)
class Preset:
    id: str
    name: str
    size: str
    params_b: float
    license: str
    gated: bool
    min_gpu_gb: float
    cpu_ok: bool
    blurb: str

    @property
    def min_memory_words(self) -> str:
        text = f"{self.min_gpu_gb:g} GB"
        return text + ", or CPU" if self.cpu_ok else text


@lru_cache(maxsize=1)
def load_presets() -> tuple[Preset, ...]:
    data = json.loads(resource("presets.json").read_text(encoding="utf-8"))
    return tuple(Preset(**row) for row in data["presets"])


def find_preset(model: str) -> Preset | None:
    key = model.strip().lower()
    for p in load_presets():
        if key in (p.id.lower(), p.id.split("/")[-1].lower(), p.name.lower()):
            return p
    return None


def resolve_model_id(model: str) -> str:
    """A preset's short name ("SmolLM2-135M-Instruct") becomes its Hub id."""
    preset = find_preset(model)
    return preset.id if preset else model


def presets_table() -> str:
    rows = [("Model", "Size", "License", "Needs a token", "Min GPU memory")]
    for p in load_presets():
        rows.append((p.id, p.size, p.license, "yes" if p.gated else "no", p.min_memory_words))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
