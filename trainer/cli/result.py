"""`dragonfarm chat | serve | merge | export | push | pack | unpack`: using a trained run.

Each takes the best adapter (adapter-best/, the lowest held-out loss) where the
run kept one, unless --last asks for the adapter from the last step."""
from __future__ import annotations

import argparse
import threading
from pathlib import Path

from trainer.cli.train import _run_dir
from trainer.cli.options import add_decoding_arguments, decoding_from_args


LAST_HELP = "use the adapter from the last step, not the one from the best held-out point"


def _say(text: str) -> None:
    print(text, flush=True)


def cmd_serve(args: argparse.Namespace) -> int:
    from trainer.results.chatserver import main

    return main(_run_dir(args.run_dir), compare=args.compare, last=args.last)


def cmd_chat(args: argparse.Namespace) -> int:
    from trainer.results.chatserver import ChatEngine

    run_dir = _run_dir(args.run_dir)
    print("Loading the model…", flush=True)
    engine = ChatEngine.load(run_dir, last=args.last)
    sides = ["base", "finetuned"] if args.compare and engine.has_adapter else \
        (["finetuned"] if engine.has_adapter else ["base"])
    histories: dict[str, list[dict[str, str]]] = {side: [] for side in sides}
    if args.system:
        for history in histories.values():
            history.append({"role": "system", "content": args.system})
    decoding = decoding_from_args(args)
    print("Type a message and press Enter. /reset forgets the conversation, /temp 0.7 sets the temperature, "
          "/quit ends. Ctrl+C stops a reply.", flush=True)
    while True:
        try:
            text = input("\nyou> ").strip()
        except (EOFError, KeyboardInterrupt):
            print()
            return 0
        if not text:
            continue
        if text in ("/quit", "/exit"):
            return 0
        if text == "/reset":
            for history in histories.values():
                del history[1 if args.system else 0:]
            print("(conversation forgotten)")
            continue
        if text.startswith("/temp"):
            try:
                decoding = decoding.with_changes(temperature=max(0.0, float(text.split()[1])))
                print(f"(temperature {decoding.temperature:g})")
            except (IndexError, ValueError):
                print("(use: /temp 0.7)")
            continue
        for side in sides:
            histories[side].append({"role": "user", "content": text})
            label = {"base": "base model", "finetuned": "fine-tuned"}[side] if len(sides) > 1 else "model"
            print(f"\n{label}> ", end="", flush=True)
            stop = threading.Event()
            try:
                reply, _ = engine.stream(histories[side], side, decoding, stop.is_set,
                                         lambda piece: print(piece, end="", flush=True))
            except KeyboardInterrupt:
                stop.set()
                reply = ""
                print(" (stopped)", end="")
            print(flush=True)
            histories[side].append({"role": "assistant", "content": reply})


def cmd_merge(args: argparse.Namespace) -> int:
    from trainer.results.merge import merge

    result = merge(_run_dir(args.run_dir), _say, force=True, check=not args.no_check, last=args.last, dtype=args.dtype)
    return 0 if result.check is None or result.check.ok else 1


def cmd_export(args: argparse.Namespace) -> int:
    run_dir = _run_dir(args.run_dir)
    if args.format == "ollama":
        from trainer.results.export.ollama import export_ollama

        result = export_ollama(run_dir, args.quant, _say, check=not args.no_check, last=args.last)
        merge_ok = (result.merge_check or {}).get("ok", True)
        return 0 if result.template_ok and merge_ok else 1
    from trainer.results.export.gguf import export_gguf

    gguf = export_gguf(run_dir, args.quant or "f16", _say, check=not args.no_check, last=args.last)
    return 0 if gguf.check is None or gguf.check.ok else 1


def cmd_pack(args: argparse.Namespace) -> int:
    from trainer.run.share import pack_run

    path, plan = pack_run(_run_dir(args.run_dir), args.output, with_data=args.with_data, last=args.last,
                          model=args.model)
    print(f"Packed into {path} ({path.stat().st_size / 1e6:.1f} MB).")
    for line in plan.lines():
        print("  " + line)
    return 0


def cmd_push(args: argparse.Namespace) -> int:
    from trainer.results.push import push

    what = "merged" if args.merged else "gguf" if args.gguf else "adapter"
    push(_run_dir(args.run_dir), args.repo, private=args.private, what=what, last=args.last,
         samples=not args.no_samples, update=args.update, on_progress=_say)
    return 0


def cmd_unpack(args: argparse.Namespace) -> int:
    import json
    import zipfile

    from trainer.cli.data import _quote
    from trainer.run.elsewhere import set_model, unpacked_lines
    from trainer.run.share import MANIFEST, unpack

    archive = Path(args.file).expanduser()
    path = unpack(archive, args.runs_dir, args.name)
    print(f"Imported the run into {path}")
    if args.model:
        print("  " + set_model(path, args.model))
    with zipfile.ZipFile(archive) as zf:  # unpack has judged it: one run folder, a manifest that is JSON
        top = zf.namelist()[0].split("/", 1)[0]
        manifest = json.loads(zf.read(f"{top}/{MANIFEST}"))
    local = manifest.get("model_from_path") is True and not args.model
    for line in unpacked_lines(path, args.name or top, _quote(str(path)), model_was_local=local):
        print("  " + line)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("chat", help="talk to the fine-tuned model in the terminal")
    p.add_argument("run_dir")
    p.add_argument("--compare", action="store_true", help="the base model answers each message too")
    p.add_argument("--system", help="a system prompt")
    add_decoding_arguments(p, max_new_tokens=256)
    p.add_argument("--last", action="store_true", help=LAST_HELP)
    p.set_defaults(func=cmd_chat)

    p = sub.add_parser("serve", help="the model process behind the app's Try page (JSON lines on stdin/stdout)")
    p.add_argument("run_dir")
    p.add_argument("--compare", action="store_true", help="also answer as the base model")
    p.add_argument("--last", action="store_true", help=LAST_HELP)
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("merge", help="fold the adapter into the model: a standalone model in merged/")
    p.add_argument("run_dir")
    p.add_argument("--no-check", action="store_true", help="skip comparing replies with the adapter model")
    p.add_argument("--dtype", choices=("bf16", "f16", "f32"),
                   help="how the merged weights are stored (default: the base model's own dtype)")
    p.add_argument("--last", action="store_true", help=LAST_HELP)
    p.set_defaults(func=cmd_merge)

    p = sub.add_parser("export", help="export for Ollama, or as a GGUF file for llama.cpp and LM Studio")
    p.add_argument("run_dir")
    p.add_argument("--format", choices=("ollama", "gguf"), required=True)
    p.add_argument("--quant", help="GGUF type: f16 (default), q8_0, or with llama-quantize q4_k_m, q5_k_m, q6_k…; "
                                   "for ollama, a GGUF type makes Ollama use that file instead of merged/")
    p.add_argument("--no-check", action="store_true", help="skip the export's self-check")
    p.add_argument("--last", action="store_true", help=LAST_HELP)
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("push", help="upload the adapter (or merged model, or GGUF) to the Hugging Face Hub, "
                                    "with a model card; the token comes from HF_TOKEN")
    p.add_argument("run_dir")
    p.add_argument("--repo", required=True, help="the model's name on the Hub: NAME or OWNER/NAME")
    p.add_argument("--private", action="store_true", help="only you (and your organisation) can see it")
    kind = p.add_mutually_exclusive_group()
    kind.add_argument("--merged", action="store_true", help="upload the merged model (merges first if needed)")
    kind.add_argument("--gguf", action="store_true", help="upload the newest GGUF export")
    p.add_argument("--update", action="store_true", help="upload into an existing repo of yours")
    p.add_argument("--no-samples", action="store_true", help="leave the sample replies out of the model card")
    p.add_argument("--last", action="store_true", help=LAST_HELP)
    p.set_defaults(func=cmd_push)

    p = sub.add_parser("pack", help="pack a run into one .zip: to share a trained run, or to train a run on "
                                    "another machine (a run not trained yet carries its settings and examples)")
    p.add_argument("run_dir")
    p.add_argument("--with-data", action="store_true",
                   help="include the training data (always included for a run not trained yet)")
    p.add_argument("--model", help="the base model as the other machine can get it (a Hugging Face id, or a path "
                                   "there), for a run whose model is a folder or .gguf file on this computer")
    p.add_argument("-o", "--output", help="the .zip file (default: RUN_NAME.zip here)")
    p.add_argument("--last", action="store_true", help="pack only the adapter from the last step "
                                                       "(not the best held-out point's too)")
    p.set_defaults(func=cmd_pack)

    p = sub.add_parser("unpack", help="import a packed run (.zip) into the runs folder")
    p.add_argument("file")
    p.add_argument("--runs-dir", help="where runs live (default: the app's runs folder)")
    p.add_argument("--name", help="a name for the imported run")
    p.add_argument("--model", help="the base model as this computer can get it (a Hugging Face id or a path here)")
    p.set_defaults(func=cmd_unpack)

