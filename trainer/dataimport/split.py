"""The held-out split: how many examples to keep aside, and which (seeded).

Few examples are precious: below MIN_EXAMPLES_FOR_EVAL everything trains and
nothing is held out (the run's sample replies then use training prompts). From
there up to STRATIFY_MAX examples the split is stratified by topic: examples
whose replies share their distinctive words form a group (the rows teaching
one fact, say), and each group gives at most its share of the held-out
examples and never its last member, so no fact loses most of its rows. Rows
that share a topic with no other row are pooled as one group; with no
topics at all the split is plain random. Larger sets are split at random, which is then fair enough.
"""
from __future__ import annotations

import random
import re

from trainer.dataimport.problems import DataImportError
from trainer.run.config import DEFAULT_SEED, MAX_EVAL_FRACTION

MIN_EXAMPLES_FOR_EVAL = 20  # fewer than this: everything trains, no held-out check
MAX_EVAL = 500              # more held-out examples only make each check slower
STRATIFY_MAX = 600          # grouping compares every pair; above this a random split is fair
SAME_TOPIC = 0.25           # word overlap (Jaccard) that puts two replies in one group

_WORD = re.compile(r"[^\W_]{3,}")
_COMMON = frozenset("""the and for are but not you your yours with this that these those from have has had was were
will would can could should what when where which who whom why how its it's they them their there here then than
into onto about over under after before also just only very much many more most some any all each every our ours
his her hers him she he we us me my mine is be been being do does did done so such no yes too out off up down""".split())


def eval_count(usable: int, fraction: float) -> int:
    """round(usable * fraction), at least 1 once there are 20 examples, at most
    500 and never all of them; 0 when fraction is 0 or there are under 20."""
    if not isinstance(fraction, (int, float)) or not 0 <= fraction <= MAX_EVAL_FRACTION:
        raise DataImportError(f"The held-out fraction {fraction!r} is out of range.",
                              f"Use a number from 0 to {MAX_EVAL_FRACTION:g}, such as 0.1 for 10%.")
    if fraction == 0 or usable < MIN_EXAMPLES_FOR_EVAL:
        return 0
    k = max(1, round(usable * fraction))
    return min(k, MAX_EVAL, usable - 1)


ADD_QUESTIONS = "add a few test questions of your own to see that"


def split_sentence(usable: int, fraction: float, separate_file: bool = False, own_questions: bool = False,
                   add_questions: str = ADD_QUESTIONS) -> str:
    """The split in words, the same in the wizard, the summary and `dragonfarm new`.
    own_questions: the run has test questions of its own (config check_questions);
    add_questions: else, how to add them where the sentence is shown."""
    if separate_file:
        return f"All {usable:,} examples train; the separate file is used to check learning."
    held = eval_count(usable, fraction)
    if usable and fraction and usable < MIN_EXAMPLES_FOR_EVAL:
        new = "your own test questions show that" if own_questions else add_questions
        return (f"All {usable:,} examples train: with fewer than {MIN_EXAMPLES_FOR_EVAL} examples each one "
                "matters, so none is held out. The sample replies use questions from your examples, so they show "
                f"what it learned, not how it does on new questions: {new}.")
    if not held:
        return f"All {usable:,} examples train; none is held out to check learning."
    spread = " (spread across your topics)" if usable <= STRATIFY_MAX else ""
    return f"{usable - held:,} examples to train on, {held:,} held out to check learning{spread}."


def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in _COMMON)


def topic_groups(replies: list[str]) -> list[list[int]]:
    """Indices grouped by shared distinctive words (single-link, Jaccard >= SAME_TOPIC)."""
    words = [_words(r) for r in replies]
    parent = list(range(len(replies)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(words)):
        for j in range(i + 1, len(words)):
            a, b = words[i], words[j]
            if a and b and len(a & b) / len(a | b) >= SAME_TOPIC:
                parent[root(j)] = root(i)
    groups: dict[int, list[int]] = {}
    for i in range(len(words)):
        groups.setdefault(root(i), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])


def _stratified(count: int, groups: list[list[int]], rng: random.Random) -> set[int]:
    """Largest-remainder shares of `count`, each group keeping at least one member."""
    total = sum(len(g) for g in groups)
    shares = [count * len(g) / total for g in groups]
    take = [min(int(s), len(g) - 1) for s, g in zip(shares, groups)]
    order = sorted(range(len(groups)), key=lambda i: (shares[i] - int(shares[i]), len(groups[i]), rng.random()),
                   reverse=True)
    for i in order:
        if sum(take) >= count:
            break
        if take[i] < len(groups[i]) - 1 and take[i] < shares[i] + 1:
            take[i] += 1
    held: set[int] = set()
    for n, group in zip(take, groups):
        held.update(rng.sample(group, n))
    return held


def split_indices(usable: int, count: int, seed: int = DEFAULT_SEED, replies: list[str] | None = None) -> set[int]:
    """Which usable examples (0-based, in file order) are held out; the same
    seed, count and replies always pick the same ones. With `replies` (one
    text per usable example) and at most STRATIFY_MAX examples the pick is
    stratified by topic; it may then hold out fewer than `count` rather than
    take a topic's last example."""
    if count <= 0:
        return set()
    rng = random.Random(seed)
    if replies is not None and len(replies) == usable and usable <= STRATIFY_MAX:
        groups = topic_groups(replies)
        topics = [g for g in groups if len(g) > 1]
        if topics:
            # Rows that share a topic with no other row form one pool of their own.
            singles = sorted(i for g in groups if len(g) == 1 for i in g)
            return _stratified(count, topics + ([singles] if singles else []), rng)
    return set(rng.sample(range(usable), count))
