"""Packed batches: examples end to end in one row, no padding.

A micro-batch is one row holding about `batch_size` examples' worth of tokens
(a token budget: the row's length varies little, the number of examples in it
varies with their lengths). Position ids restart at each example and the row
carries its examples' lengths ("segments") so that attention stays inside each
example (trainer.engine.attention). Targets are shifted inside each example,
so the last token of one example is never scored on the first of the next:
the loss is exactly the unpacked loss.

An epoch has as many micro-batches as the padded batching would
(ceil(examples / batch_size)), so the user's batch size keeps its meaning and
steps per epoch do not change. Each epoch shuffles with (seed, epoch) and deals
the examples, in that order, to whichever row holds the fewest tokens so far:
the order depends only on seed and epoch, so a resumed run finds its place from
the step count alone.

Examples in a row that begin with the same untrained tokens (the chat
template's system prompt and the start of the user's turn, the same in every
example of a file) hold that beginning once, at the front of the row
(`shared_prefix`; attention lets every example see it; `share_beginning`,
which the engine sets: a model that runs its own attention on the row would
not know where the examples start): the same loss, and the
beginning runs once per row instead of once per example. On the compare data
it is 24 of about 180 tokens an example; on short question-and-answer rows
nearly half of each example.

On a CPU a row of more than CPU_ROW_TOKENS tokens runs as several passes
(`pieces`): the same loss, less memory. A pass of about a thousand tokens
already keeps a CPU's cores busy (on the compare data, 1,500-token rows in two
passes trained as fast as in one, with a 17% lower peak).
"""
from __future__ import annotations

import heapq
import math
import random
from typing import Any

from trainer.engine.encode import IGNORE, Example

CPU_ROW_TOKENS = 1024


def shared_prefix(examples: list[Example]) -> int:
    """How many first tokens these examples share that carry no loss, leaving each at least one token.

    A token's loss is on the next one (targets shift by one), so the shared tokens' next labels
    must be untrained too: the last shared token must not be scored on what follows it."""
    if len(examples) < 2:
        return 0
    first = examples[0].input_ids
    most = min(len(e.input_ids) for e in examples) - 1
    for e in examples:
        trained = next((i for i, x in enumerate(e.labels[1:most + 2], start=1) if x != IGNORE), most + 1)
        most = min(most, trained - 1)
        same = next((i for i, (a, b) in enumerate(zip(first[:most], e.input_ids[:most])) if a != b), most)
        most = min(most, same)
        if most <= 0:
            return 0
    return most


def deal(order: list[int], lengths: list[int], rows: int) -> list[list[int]]:
    """Deal examples (in this order) to `rows` rows, each to the row with the fewest tokens so far."""
    heap = [(0, r) for r in range(rows)]
    out: list[list[int]] = [[] for _ in range(rows)]
    for i in order:
        load, r = heapq.heappop(heap)
        out[r].append(i)
        heapq.heappush(heap, (load + lengths[i], r))
    return [row for row in out if row]


class PackedBatches:
    packed = True

    def __init__(self, examples: list[Example], batch_size: int, pad_id: int, seed: int,
                 share_beginning: bool = False):
        self.examples = examples
        self.share_beginning = share_beginning  # only where the row runs with trainer.engine.attention
        self.batch_size = batch_size
        self.pad_id = pad_id
        self.seed = seed
        self.lengths = [len(e.input_ids) for e in examples]

    def __len__(self) -> int:
        return math.ceil(len(self.examples) / self.batch_size)

    @property
    def token_budget(self) -> int:
        """Tokens a row holds on average."""
        return math.ceil(sum(self.lengths) / max(1, len(self)))

    def epoch_order(self, epoch: int) -> list[list[int]]:
        rng = random.Random(self.seed * 1_000_003 + epoch)
        order = list(range(len(self.examples)))
        rng.shuffle(order)
        rows = deal(order, self.lengths, len(self))
        rng.shuffle(rows)
        return rows

    def in_order(self) -> list[list[int]]:
        """Every example once, for evaluation: longest first, well balanced rows."""
        order = sorted(range(len(self.examples)), key=lambda i: -self.lengths[i])
        return deal(order, self.lengths, len(self))

    def pieces(self, indices: list[int], budget: int | None) -> list[list[int]]:
        """A row split into rows of about `budget` tokens at most (None: as it is).

        The loss of a step is a sum over its examples, so passes over the pieces
        add up to the same loss and gradients: only the memory for activations,
        which grows with the tokens of one pass, goes down. A longer single
        example stays whole.
        """
        total = sum(self.lengths[i] for i in indices)
        if not budget or total <= budget or len(indices) < 2:
            return [indices]
        order = sorted(indices, key=lambda i: -self.lengths[i])
        return deal(order, self.lengths, min(len(indices), math.ceil(total / budget)))

    def trained_tokens(self, indices: list[int]) -> int:
        """Tokens that carry loss (labels shift by one inside each example: its first never counts)."""
        return sum(sum(1 for x in self.examples[i].labels[1:] if x != IGNORE) for i in indices)

    def collate(self, indices: list[int], device: Any) -> dict[str, Any]:
        """One row: the shared beginning once, then each example's other tokens. `tokens` counts
        the examples' own tokens (what was trained on), `segments` the lengths after the beginning."""
        import torch

        examples = [self.examples[i] for i in indices]
        prefix = shared_prefix(examples) if self.share_beginning else 0
        ids: list[int] = list(examples[0].input_ids[:prefix])
        positions: list[int] = list(range(prefix))
        targets: list[int] = [IGNORE] * prefix
        lengths: list[int] = []
        for e in examples:
            ids += e.input_ids[prefix:]
            positions += range(prefix, len(e.input_ids))
            targets += list(e.labels[prefix + 1:]) + [IGNORE]
            lengths.append(len(e.input_ids) - prefix)
        as_row = lambda values: torch.tensor([values], dtype=torch.long, device=device)  # noqa: E731
        return {"input_ids": as_row(ids), "position_ids": as_row(positions), "targets": as_row(targets),
                "attention_mask": None, "segments": lengths, "prefix": prefix,
                "tokens": sum(len(e.input_ids) for e in examples)}
