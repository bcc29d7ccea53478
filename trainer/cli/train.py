"""`dragonfarm check | presets | train | cancel | generate | status`."""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from trainer.run import status as st
from trainer.cli.options import add_decoding_arguments, decoding_from_args
from trainer.run.config import DEVICES
from trainer.run.reader import Run, is_run_dir
from trainer.run.errors import UserError


def _run_dir(value: str) -> Path:
    """A run folder's path, or the name of a run in the runs folder."""
    from trainer.run.settings import runs_dir

    path = Path(value).expanduser()
    if not is_run_dir(path) and len(path.parts) == 1 and is_run_dir(runs_dir() / value):
        path = runs_dir() / value
    if not is_run_dir(path):
        raise UserError(f"{path} is not a DragonFarm run folder (it has no config.json).",
                        "Give the folder that `dragonfarm new` printed, or make one with `dragonfarm new`.")
    return path


def gpus_argument(value: str) -> str:
    """--gpus: a whole number from 1, or "all"."""
    if value == "all" or (value.isdigit() and int(value) >= 1):
        return value
    raise argparse.ArgumentTypeError(f"{value!r} is not a number of GPUs (1, 2, ... or all)")


def cmd_check(args: argparse.Namespace) -> int:
    from trainer.engine.device import check, check_text

    result = check(args.device)
    print(json.dumps(result, indent=2) if args.json else check_text(result))
    return 0


def cmd_presets(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from trainer.run.presets import load_presets, presets_table

    print(json.dumps([asdict(p) for p in load_presets()], indent=2) if args.json else presets_table())
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from trainer.engine.launcher import launch, processes_for
    from trainer.engine.loop import NO_CHECKPOINT_RESTART, train
    from trainer.engine.parallel import world_from_env
    from trainer.engine.threads import wait_briefly
    from trainer.run.config import TrainConfig

    wait_briefly()  # before torch loads (trainer.engine.threads)
    run_dir = _run_dir(args.run_dir)
    world = world_from_env()
    if args.model and world.main:  # a run packed on another computer: the model as this one can get it
        from trainer.run.elsewhere import set_model

        print(set_model(run_dir, args.model), flush=True)
    if world.size == 1:
        processes = processes_for(args.gpus, TrainConfig.load(run_dir).device)
        if processes > 1:  # one process per GPU; process 0 prints what one process would
            return launch(run_dir, processes, resume=args.resume)
    elif not world.main:  # process N > 0 of a data-parallel run: process 0 speaks for the run
        state = train(run_dir, resume=args.resume)
        return 0 if state in (st.DONE, st.CANCELLED) else 1
    if args.resume and not Run(run_dir).checkpoints():
        print(NO_CHECKPOINT_RESTART, flush=True)
    state = train(run_dir, resume=args.resume)  # takes the run's trainer lock first (UserError if held)
    final = Run(run_dir).status()
    if state == st.FAILED:
        print(f"dragonfarm: {final.get('error')}", flush=True)
        return 1
    print(f"{st.STATE_WORDS.get(state, state)}. Adapter: {run_dir / 'adapter'}")
    return 0 if state == st.DONE else 3


def cmd_cancel(args: argparse.Namespace) -> int:
    run = Run(_run_dir(args.run_dir))
    s = run.status()
    if not s.get("live"):
        print(f"{run.name} is not training ({st.STATE_WORDS.get(s['state'], s['state'])}); nothing to stop.")
        return 0
    run.request_cancel()
    print(f"Asked {run.name} to stop; it saves its adapter and ends as 'cancelled'.")
    if args.wait:
        deadline = time.time() + args.wait
        while time.time() < deadline and run.status().get("live"):
            time.sleep(0.5)
        print(f"State: {run.state}")
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    from trainer.results.generate import generate

    reply = generate(_run_dir(args.run_dir), args.prompt, base=args.base, decoding=decoding_from_args(args),
                     system=args.system, stream=not args.quiet_stream)
    if args.quiet_stream:
        print(reply)
    return 0


def _num(value, spec: str = ".4f") -> str:
    return format(value, spec) if isinstance(value, (int, float)) and not isinstance(value, bool) else "not a number"


def status_text(run: Run) -> str:
    s = run.status()
    if s["state"] == st.DAMAGED:
        words = "Damaged"
    else:
        words = "Not started yet" if s.get("written_state") is None else st.STATE_WORDS.get(s["state"], s["state"])
    lines = [f"{run.name}: {words}"]
    cfg = run.config_dict()
    lines.append(f"  model     {cfg.get('model', '?')}")
    for problem in s["damaged"]:
        lines.append(f"  damaged   {problem}")
    if s.get("total_steps"):
        lines.append(f"  step      {s.get('step', 0)} of {s['total_steps']}")
    if s.get("device"):
        lines.append(f"  device    {s['device']} ({s.get('device_name', '')}), {s.get('precision', '')}")
    records = run.train_records()
    if records:
        last = records[-1]
        lines.append(f"  loss      {_num(last['loss'])} (step {last['step']}), "
                     f"{_num(last.get('tokens_per_second', 0), '.0f')} tokens/s")
    if s.get("state") in st.ACTIVE_STATES and s.get("message"):
        lines.append(f"  now       {s['message']}")
    if s.get("error"):
        lines.append(f"  error     {s['error']}")
    v = run.verdict()
    if v:
        lines += [f"  {'so far' if v.get('live') else 'did it learn?'}  {v['title']}: {v['text']}",
                  f"  next      {v['next']}"]
    best = run.best()
    if best and run.has_best_adapter():
        lines.append(f"  best      step {best.get('step')} (held-out loss {best.get('loss', float('nan')):.3f}): "
                     "chat, merge, export, push and pack use it; add --last for the last step's adapter")
    samples = run.samples()
    if any(x.get("finetuned") or x.get("base") for x in samples):
        from trainer.cli.data import _quote

        lines.append(f"  samples   {len(samples)} sample replies, before and after: "
                     f"dragonfarm status {_quote(str(run.path))} --samples")
    if s["state"] == st.INTERRUPTED:
        lines.append(f"  resume    dragonfarm train {run.path} --resume")
    if s["damaged"]:
        lines.append(f"  folder    {run.path} (look at the files named above, or delete the run)")
    return "\n".join(lines)


def cmd_status(args: argparse.Namespace) -> int:
    run = Run(_run_dir(args.run_dir))
    if args.json:
        records = run.train_records()
        print(json.dumps({"status": run.status(), "last": records[-1] if records else None,
                          "eval": run.eval(), "verdict": run.verdict(), "samples": run.samples()}, indent=2))
    else:
        print(status_text(run))
        if args.samples:
            print(samples_text(run.samples()))
    return 0


def samples_text(samples: list[dict]) -> str:
    """The sample replies in words: each question, then the base model's and the fine-tuned model's reply."""
    if not samples:
        return "Sample replies: none yet (they are written when training starts and when it ends)."
    lines = ["Sample replies (your own test questions first):" if any(s.get("yours") is True for s in samples)
             else "Sample replies:"]
    for i, sample in enumerate(samples, 1):
        mark = " (your own test question)" if sample.get("yours") is True else ""
        lines.append(f"  {i}. {_one_line(sample.get('prompt'))}{mark}")
        if sample.get("reference"):
            lines.append(f"     your answer  {_one_line(sample['reference'])}")
        lines.append(f"     before       {_one_line(sample.get('base')) or '(not yet)'}")
        lines.append(f"     after        {_one_line(sample.get('finetuned')) or '(not yet)'}")
    return "\n".join(lines)


def _one_line(text, limit: int = 300) -> str:
    return _short(" ".join(str(text or "").split()), limit)


def cmd_list(args: argparse.Namespace) -> int:
    from trainer.run.reader import list_runs
    from trainer.run.settings import runs_dir

    folder = runs_dir(args.runs_dir)
    runs = list_runs(folder)
    if args.json:
        print(json.dumps([r.summary() for r in runs], indent=2))
        return 0
    if not runs:
        print(f"No runs in {folder} yet. Make one with: dragonfarm new --data YOUR_FILE")
        return 0
    rows = [("Run", "State", "Step", "Model", "Held-out loss")]
    for r in runs:
        s = r.summary()
        loss = f"{s['eval_loss']:.3f}" if isinstance(s["eval_loss"], (int, float)) else ""
        state = f"damaged: {_short(s['damaged'][0])}" if s["damaged"] else s["state"]
        rows.append((s["name"], state, f"{s['step']}/{s['total_steps']}" if s["total_steps"] else "",
                     _short(str(s["model"])), loss))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    print(f"Runs in {folder}:")
    for row in rows:
        print("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    return 0


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("list", help="the runs in the runs folder")
    p.add_argument("--runs-dir", help="where runs are kept (default: the app's runs folder)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("check", help="what will training run on, and why")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--device", default="auto", choices=DEVICES)
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("presets", help="the table of suggested models")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_presets)

    p = sub.add_parser("train", help="train a run folder (same as: python -m trainer train RUN_DIR)")
    p.add_argument("run_dir")
    p.add_argument("--resume", action="store_true", help="continue from the last checkpoint")
    p.add_argument("--model", help="train this base model (a Hugging Face id or a local path) and keep it in the "
                                   "run's settings; for a run made on another computer")
    p.add_argument("--gpus", type=gpus_argument, metavar="N|all",
                   help="train on this many NVIDIA GPUs at once (default: all that training can use)")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("cancel", help="ask a running trainer to stop and save its adapter")
    p.add_argument("run_dir")
    p.add_argument("--wait", type=float, default=0, metavar="SECONDS", help="wait up to this long for it to stop")
    p.set_defaults(func=cmd_cancel)

    p = sub.add_parser("generate", help="a reply from the fine-tuned model")
    p.add_argument("run_dir")
    p.add_argument("prompt")
    p.add_argument("--base", action="store_true", help="ask the base model instead")
    p.add_argument("--system", help="a system prompt")
    add_decoding_arguments(p, max_new_tokens=200)
    p.add_argument("--quiet-stream", action="store_true", help="print the reply at the end, not as it is written")
    p.set_defaults(func=cmd_generate)

    p = sub.add_parser("status", help="a run's state, progress and result in words")
    p.add_argument("run_dir")
    p.add_argument("--samples", action="store_true",
                   help="also the sample replies: your own test questions and held-out prompts, before and after")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_status)
