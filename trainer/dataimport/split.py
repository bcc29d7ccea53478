"""The held-out split: how many examples to keep aside, and which (seeded)."""
from __future__ import annotations

import random

from trainer.dataimport.problems import DataImportError
from trainer.run.config import DEFAULT_SEED, MAX_EVAL_FRACTION

MIN_EXAMPLES_FOR_EVAL = 5   # fewer than this: everything trains, no held-out check
MAX_EVAL = 500              # more held-out examples only make each check slower


def eval_count(usable: int, fraction: float) -> int:
    """round(usable * fraction), at least 1 once there are 5 examples, at most
    500 and never all of them; 0 when fraction is 0 or there are under 5."""
    if not isinstance(fraction, (int, float)) or not 0 <= fraction <= MAX_EVAL_FRACTION:
        raise DataImportError(f"The held-out fraction {fraction!r} is out of range.",
                              f"Use a number from 0 to {MAX_EVAL_FRACTION:g}, such as 0.1 for 10%.")
    if fraction == 0 or usable < MIN_EXAMPLES_FOR_EVAL:
        return 0
    k = max(1, round(usable * fraction))
    return min(k, MAX_EVAL, usable - 1)


def split_indices(usable: int, count: int, seed: int = DEFAULT_SEED) -> set[int]:
    """Which usable examples (0-based, in file order) are held out; the same
    seed and count always pick the same ones."""
    if count <= 0:
        return set()
    return set(random.Random(seed).sample(range(usable), count))
