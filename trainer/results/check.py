"""Every export checks itself: greedy replies to a few held-out prompts, compared
token by token with the fine-tuned (adapter) model's, and judged in words."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from trainer.run.files import EVAL_DATA
from trainer.run.reader import Run
from trainer.engine.evaluation import prompt_of

CHECK_PROMPTS = 3
CHECK_TOKENS = 24
FALLBACK_PROMPTS = ["Hello! Who are you?", "Give me one tip for a good day.", "What is 2 plus 3?"]

# Share of each reference reply that must come out identically from its start.
TOLERANCE = {"merged": 1.0, "f32": 1.0, "f16": 0.9, "bf16": 0.75, "q8_0": 0.75}
K_QUANT_TOLERANCE = 0.4
TOLERANCE_WHY = {1.0: "it must be identical", 0.9: "f16 rounds each weight a little",
                 0.75: "8-bit rounding changes a few close calls", 0.4: "small quantisations change replies"}


def tolerance_for(kind: str) -> float:
    return TOLERANCE.get(kind.lower(), K_QUANT_TOLERANCE)


def held_out_prompts(run_dir: str | Path, count: int = CHECK_PROMPTS) -> list[list[dict[str, str]]]:
    """Prompts the model did not train on: the run's samples, else its eval file, else a fixed few."""
    run = Run(run_dir)
    prompts = [s["messages"] for s in run.samples() if s.get("messages")][:count]
    if len(prompts) < count:
        eval_file = run.path / run.config_dict().get("eval_file", EVAL_DATA)
        try:
            lines = eval_file.read_text(encoding="utf-8").splitlines()
        except OSError:
            lines = []
        for line in lines:
            if len(prompts) >= count:
                break
            try:
                found = prompt_of(json.loads(line)["messages"])
            except (ValueError, KeyError, TypeError):
                continue
            if found and found[0] not in prompts:
                prompts.append(found[0])
    for text in FALLBACK_PROMPTS:
        if len(prompts) >= count:
            break
        prompts.append([{"role": "user", "content": text}])
    return prompts


def prompt_ids(tokenizer: Any, messages: list[dict[str, str]]) -> list[int]:
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def end_ids(tokenizer: Any) -> list[int]:
    ids = [tokenizer.eos_token_id]
    for token in ("<|im_end|>", "<|eot_id|>", "<end_of_turn>"):
        tid = tokenizer.convert_tokens_to_ids(token) if token in tokenizer.get_vocab() else None
        if isinstance(tid, int) and tid not in ids:
            ids.append(tid)
    return [i for i in ids if isinstance(i, int)]


def greedy_ids(model: Any, tokenizer: Any, prompts: list[list[dict[str, str]]],
               max_new_tokens: int = CHECK_TOKENS, device: str = "cpu") -> list[list[int]]:
    """The most likely reply to each prompt, as token ids (end token excluded)."""
    import torch

    stops = end_ids(tokenizer)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else stops[0]
    replies = []
    model.eval()
    for messages in prompts:
        ids = torch.tensor([prompt_ids(tokenizer, messages)], device=device)
        with torch.no_grad():
            out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens,
                                 do_sample=False, temperature=None, top_p=None, top_k=None,
                                 eos_token_id=stops, pad_token_id=pad)
        reply = out[0, ids.shape[1]:].tolist()
        for i, tok in enumerate(reply):
            if tok in stops:
                reply = reply[:i]
                break
        replies.append(reply)
    return replies


@dataclass
class CheckResult:
    label: str                     # what was checked, e.g. "GGUF q8_0"
    kind: str                      # tolerance key: merged, f16, q8_0, ...
    prompts: int
    identical: int
    agreement: float               # mean share of each reference reply matched from its start
    needed: float
    ok: bool
    examples: list[dict[str, str]] = field(default_factory=list)  # first differing replies, decoded

    def words(self) -> str:
        if self.identical == self.prompts:
            return (f"Check passed: the {self.label} gave exactly the same replies as your fine-tuned model "
                    f"on {self.prompts} of {self.prompts} held-out prompts.")
        share = f"{self.identical} of {self.prompts} replies were identical and on average the first " \
                f"{self.agreement:.0%} of each reply matched"
        why = TOLERANCE_WHY.get(self.needed, "")
        if self.ok:
            return (f"Check passed: {share} (at least {self.needed:.0%} needed for {self.kind}; {why}).")
        example = self.examples[0] if self.examples else None
        detail = (f' For "{example["prompt"][:80]}" your model said "{example["expected"][:120]}" but the '
                  f'export said "{example["got"][:120]}".') if example else ""
        return (f"Check FAILED: the {self.label} does not answer like your fine-tuned model: {share}, "
                f"and {self.needed:.0%} was needed for {self.kind}.{detail} Do not share this export; "
                "try a larger format (f16), and if that fails too, report it with the run's logs.")

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["words"] = self.words()
        return data


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def compare(label: str, kind: str, prompts: list[list[dict[str, str]]], reference: list[list[int]],
            candidate: list[list[int]], tokenizer: Any = None, needed: float | None = None) -> CheckResult:
    needed = tolerance_for(kind) if needed is None else needed
    identical = sum(1 for r, c in zip(reference, candidate) if r == c)
    shares = [common_prefix(r, c) / max(len(r), len(c)) if (r or c) else 1.0 for r, c in zip(reference, candidate)]
    agreement = sum(shares) / len(shares) if shares else 1.0
    ok = identical == len(reference) or (needed < 1.0 and agreement >= needed)
    examples = []
    for messages, r, c in zip(prompts, reference, candidate):
        if r != c and tokenizer is not None:
            last = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
            examples.append({"prompt": last, "expected": tokenizer.decode(r, skip_special_tokens=True),
                             "got": tokenizer.decode(c, skip_special_tokens=True)})
    return CheckResult(label, kind, len(reference), identical, round(agreement, 4), needed, ok, examples[:2])
