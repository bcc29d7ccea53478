"""Batches for training and evaluation: the one place that decides how
examples become tensors. `Batches` pads length-grouped examples side by side;
`trainer.engine.packing.PackedBatches` (the default) packs them end to end.
`make_batches` picks one.

Batches are length-grouped to waste little on padding, yet shuffled, and the
order of each epoch depends only on (seed, epoch): a resumed run finds its
place from the step count alone.
"""
from __future__ import annotations

import math
import random
from typing import Any

from trainer.engine.encode import IGNORE, Example


class Batches:
    def __init__(self, examples: list[Example], batch_size: int, pad_id: int, seed: int):
        self.examples = examples
        self.batch_size = batch_size
        self.pad_id = pad_id
        self.seed = seed

    def __len__(self) -> int:
        return math.ceil(len(self.examples) / self.batch_size)

    def epoch_order(self, epoch: int) -> list[list[int]]:
        rng = random.Random(self.seed * 1_000_003 + epoch)
        order = list(range(len(self.examples)))
        rng.shuffle(order)
        window = self.batch_size * 50
        batches: list[list[int]] = []
        for start in range(0, len(order), window):
            chunk = sorted(order[start:start + window], key=lambda i: len(self.examples[i].input_ids))
            batches += [chunk[i:i + self.batch_size] for i in range(0, len(chunk), self.batch_size)]
        rng.shuffle(batches)
        return batches

    def in_order(self) -> list[list[int]]:
        """Every example once, for evaluation (sorted by length: less padding)."""
        order = sorted(range(len(self.examples)), key=lambda i: len(self.examples[i].input_ids))
        return [order[i:i + self.batch_size] for i in range(0, len(order), self.batch_size)]

    def pieces(self, indices: list[int], budget: int | None) -> list[list[int]]:
        """Padded batches run as they are (see PackedBatches.pieces)."""
        return [indices]

    def trained_tokens(self, indices: list[int]) -> int:
        """Tokens that carry loss (labels shift by one: the first never counts)."""
        return sum(sum(1 for x in self.examples[i].labels[1:] if x != IGNORE) for i in indices)

    def collate(self, indices: list[int], device: Any) -> dict[str, Any]:
        import torch

        rows = [self.examples[i] for i in indices]
        width = max(len(r.input_ids) for r in rows)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        labels = torch.full((len(rows), width), IGNORE, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for n, r in enumerate(rows):
            ids[n, : len(r.input_ids)] = torch.tensor(r.input_ids)
            labels[n, : len(r.labels)] = torch.tensor(r.labels)
            mask[n, : len(r.input_ids)] = 1
        targets = torch.full_like(labels, IGNORE)
        targets[:, :-1] = labels[:, 1:]  # position t is scored on token t + 1
        return {"input_ids": ids.to(device), "labels": labels.to(device), "targets": targets.to(device),
                "attention_mask": mask.to(device), "position_ids": None, "segments": None,
                "tokens": int(mask.sum())}


def make_batches(examples: list[Example], batch_size: int, pad_id: int, seed: int, packed: bool) -> Any:
    """Packed batches (about batch_size examples' worth of tokens each) or padded ones."""
    if packed:
        from trainer.engine.packing import PackedBatches

        return PackedBatches(examples, batch_size, pad_id, seed, share_beginning=True)  # packed: our attention
    return Batches(examples, batch_size, pad_id, seed)
