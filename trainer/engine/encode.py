"""From chats to token ids and labels, with loss on the assistant turns only.

Each conversation is rendered once with the model's chat template and
tokenised with character offsets. Every assistant turn's span (its content
plus the end-of-turn marker the template adds) is found by rendering the
conversation up to that turn with and without the reply; tokens inside a span
get their id as label, every other token gets -100.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainer.run.errors import UserError

log = logging.getLogger("dragonfarm.encode")
IGNORE = -100


@dataclass
class Example:
    input_ids: list[int]
    labels: list[int]

    @property
    def trained_tokens(self) -> int:
        return sum(1 for x in self.labels if x != IGNORE)


@dataclass
class EncodeStats:
    total: int = 0
    kept: int = 0
    truncated: int = 0
    skipped: int = 0
    skipped_lines: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, int]:
        return {"total": self.total, "kept": self.kept, "truncated": self.truncated, "skipped": self.skipped}


def read_chats(path: Path) -> list[list[dict[str, str]]]:
    """data/*.jsonl: one {"messages": [...]} per line; a bad line is an error naming it."""
    if not path.is_file():
        raise UserError(f"The data file {path} is missing.", "Make the run again from your examples.")
    chats = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                messages = record["messages"]
                if not isinstance(messages, list) or not all(
                        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
                        for m in messages):
                    raise ValueError("messages must be a list of {role, content} texts")
            except (ValueError, KeyError, TypeError) as exc:
                raise UserError(f"{path.name}, line {number}: not a chat example ({exc}).",
                                "Each line must look like {\"messages\": [{\"role\": \"user\", \"content\": \"...\"}, ...]}.") from None
            chats.append([{"role": m["role"], "content": m["content"]} for m in messages])
    return chats


def _render(tokenizer: Any, messages: list[dict[str, str]], generation_prompt: bool) -> str:
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation_prompt)


def assistant_char_spans(tokenizer: Any, messages: list[dict[str, str]]) -> tuple[str, list[tuple[int, int]]]:
    """The rendered text and the [start, end) characters of every assistant reply,
    end including the end-of-turn marker (trailing whitespace excluded)."""
    text = _render(tokenizer, messages, False)
    spans: list[tuple[int, int]] = []
    cursor = 0
    for i, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        before = _render(tokenizer, messages[:i], True) if i else ""
        upto = _render(tokenizer, messages[: i + 1], False).rstrip()
        if text.startswith(before) and text.startswith(upto) and len(upto) > len(before) >= cursor:
            start, end = len(before), len(upto)
        else:
            # A template that rewrites earlier turns: find the reply text itself.
            start = text.find(message["content"], cursor)
            if start < 0:
                continue
            end = start + len(message["content"])
            eos = getattr(tokenizer, "eos_token", None)
            if eos and text.startswith(eos, end):
                end += len(eos)
        spans.append((start, end))
        cursor = end
    return text, spans


def encode_chat(tokenizer: Any, messages: list[dict[str, str]], max_length: int) -> tuple[Example, bool]:
    """(example, truncated). Labels are the token ids inside assistant spans, else -100."""
    text, spans = assistant_char_spans(tokenizer, messages)
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    ids: list[int] = list(enc["input_ids"])
    labels = [IGNORE] * len(ids)
    for index, (a, b) in enumerate(enc["offset_mapping"]):
        if b <= a:
            continue
        for start, end in spans:
            if a >= start and b <= end:
                labels[index] = ids[index]
                break
    truncated = len(ids) > max_length
    return Example(ids[:max_length], labels[:max_length]), truncated


def encode_file(tokenizer: Any, path: Path, max_length: int, what: str = "training") -> tuple[list[Example], EncodeStats]:
    chats = read_chats(path)
    stats = EncodeStats(total=len(chats))
    examples = []
    for number, chat in enumerate(chats, 1):
        example, truncated = encode_chat(tokenizer, chat, max_length)
        stats.truncated += truncated
        if example.trained_tokens == 0:
            stats.skipped += 1
            stats.skipped_lines.append(number)
            continue
        examples.append(example)
    stats.kept = len(examples)
    if stats.truncated:
        log.warning("%d %s examples were longer than %d tokens and were cut short", stats.truncated, what, max_length)
    if stats.skipped:
        log.warning("%d %s examples had no reply left to learn from and were skipped (lines %s)",
                    stats.skipped, what, ", ".join(map(str, stats.skipped_lines[:20])))
    if what == "training" and not examples:
        if not chats:
            raise UserError(f"{path.name} holds no examples.", "Import your examples again.")
        raise UserError(
            f"None of the {len(chats)} training examples has a reply to learn from"
            + (f" within the maximum length of {max_length} tokens." if stats.truncated else "."),
            "Make sure every example has an assistant reply" + (", or raise the maximum length." if stats.truncated else "."))
    return examples, stats
