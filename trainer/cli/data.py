"""`dragonfarm inspect FILE` and `dragonfarm new --data FILE ...`: look at a data
file, then make a run folder from it. Torch-free; the app's wizard calls the
same trainer.dataimport functions."""
from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap

from trainer.cli.flags import add_preset_flag, add_setting_flags, setting_values
from trainer.run.config import (DEFAULT_EVAL_FRACTION, DEFAULT_MODEL, DEFAULT_SEED, MAX_CHECK_QUESTIONS,
                                MAX_EVAL_FRACTION, TrainConfig)
from trainer.run.files import IMPORT_FILE

PREVIEW_CHARS = 400
SHOW_PROBLEMS = 20
_ROLE_WORDS = {"system": "System", "user": "User", "assistant": "Assistant"}
_DELIM_WORDS = {",": "comma", ";": "semicolon", "\t": "tab", "|": "bar"}


def _mapping_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("which columns to use (normally detected)")
    g.add_argument("--sheet", help="the Excel sheet to read (default: the first)")
    g.add_argument("--prompt-column", help="the column with the prompts (what the person asks)")
    g.add_argument("--reply-column", help="the column with the replies the model should learn")
    g.add_argument("--input-column", help="an extra column added under the prompt (Alpaca 'input')")
    g.add_argument("--system-column", help="a column with a system prompt for each row")
    g.add_argument("--system", metavar="TEXT", help="one system prompt for every example")
    g.add_argument("--tokenizer", metavar="MODEL", help="count lengths in this model's tokens (a preset, Hub id, "
                   "model folder or .gguf; loads the model's tokenizer, which takes a few seconds)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("inspect", help="look at a data file: its shape, a preview and any problems",
                       description="Show what DragonFarm finds in a data file: the format, which columns "
                                   "become prompts and replies, the first examples, counts and problems.")
    p.add_argument("file", help="a .csv, .tsv, .xlsx, .json or .jsonl file")
    _mapping_args(p)
    add_setting_flags(p, only=("max_length",))
    p.add_argument("--rows", type=int, default=3, help="how many examples to show (default 3)")
    p.add_argument("--first", type=int, metavar="N", help="look only at the first N rows (quick, for big files)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_inspect)

    n = sub.add_parser("new", help="make a run folder from a data file",
                       description="Import a data file into a new run folder, ready for `dragonfarm train`. "
                                   "Your file is only read, never changed.")
    n.add_argument("--data", required=True, help="your examples: .csv, .tsv, .xlsx, .json or .jsonl")
    n.add_argument("--model", default=DEFAULT_MODEL, help=f"the model to teach (default {DEFAULT_MODEL})")
    n.add_argument("--name", help="the run's name (default: the data file's name)")
    n.add_argument("--runs-dir", help="where runs are kept (default: the app's runs folder)")
    n.add_argument("--eval-fraction", type=float, default=DEFAULT_EVAL_FRACTION,
                   help=f"share of examples held out to check progress, 0 to {MAX_EVAL_FRACTION:g} "
                        f"(default {DEFAULT_EVAL_FRACTION:g})")
    n.add_argument("--eval-file", help="a separate file of held-out examples instead")
    n.add_argument("--question", action="append", metavar="TEXT",
                   help="a test question of your own, worded differently from your examples: the sample "
                        "replies answer it before and after training (repeat for more, at most "
                        f"{MAX_CHECK_QUESTIONS})")
    add_preset_flag(n)
    _mapping_args(n)
    add_setting_flags(n)
    n.add_argument("--quiet", action="store_true", help="print only the new run folder")
    n.set_defaults(func=cmd_new)


def _mapping_from(args: argparse.Namespace):
    from trainer.dataimport import Mapping

    m = Mapping(prompt_column=args.prompt_column, reply_column=args.reply_column,
                input_column=args.input_column, system_column=args.system_column, system_prompt=args.system)
    return m if any(v is not None for v in m.to_dict().values()) else None


def _safe_stdout() -> None:
    """A Windows console or pipe may not encode every character in a person's data."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure:
        try:
            reconfigure(errors="replace")
        except (ValueError, OSError):
            pass


def _tokenizer_from(args: argparse.Namespace):
    """The model's tokenizer, as text -> token ids without special tokens, or None."""
    if not getattr(args, "tokenizer", None):
        return None
    from trainer.engine.models import load_tokenizer, resolve_model_path
    from trainer.run.presets import resolve_model_id

    tokenizer = load_tokenizer(resolve_model_path(resolve_model_id(args.tokenizer)))
    return lambda text: tokenizer.encode(text, add_special_tokens=False)


def cmd_inspect(args: argparse.Namespace) -> int:
    from trainer.dataimport import inspect_file

    _safe_stdout()
    report = inspect_file(args.file, sheet=args.sheet, mapping=_mapping_from(args),
                          max_length=args.max_length or TrainConfig().max_length, preview_rows=max(0, args.rows),
                          limit=args.first, tokenizer=_tokenizer_from(args))
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False, default=str))
    else:
        print(render_report(report, args))
    return 0 if report.ok else 2


def cmd_new(args: argparse.Namespace) -> int:
    from trainer.dataimport import create_run
    from trainer.run.presets import resolve_model_id
    from trainer.run.settings import runs_dir

    _safe_stdout()
    overrides = setting_values(args)
    seed = overrides.pop("seed", DEFAULT_SEED)  # the held-out split uses it too
    if args.question:
        overrides["check_questions"] = [q.strip() for q in args.question]
    run = create_run(args.data, runs_dir=runs_dir(args.runs_dir), name=args.name,
                     model=resolve_model_id(args.model), mapping=_mapping_from(args), sheet=args.sheet,
                     eval_fraction=args.eval_fraction, eval_file=args.eval_file, seed=seed,
                     config_overrides=overrides, tokenizer=_tokenizer_from(args))
    if args.quiet:
        print(run)
        return 0
    record = json.loads((run / IMPORT_FILE).read_text(encoding="utf-8"))
    split, warned = record["split"], record["warnings_total"]
    src = record["source"]
    fmt = {"xlsx": "Excel workbook"}.get(src["format"], src["format"].upper())
    how = read_as(src.get("delimiter"), src.get("encoding"))
    sheet = f", sheet '{src['sheet']}'" if src.get("sheet") else ""
    print(f"Made the run folder: {run}")
    print(f"  read {src['file']} as {fmt}{', ' + how if how else ''}{sheet}"
          + (" (encoding guessed: check the examples)" if src.get("encoding_guessed") else ""))
    print("  using:")
    for line in mapping_lines(record["mapping"]):
        print("  " + line)
    if args.eval_file or split["eval"] or not args.eval_fraction:
        print(f"  {split['train']:,} examples to train on, {split['eval']:,} held out to check progress")
    else:
        from trainer.dataimport import split_sentence

        print("  " + split_sentence(split["train"], args.eval_fraction, own_questions=bool(args.question),
                                    add_questions="make the run with --question \"...\" (new wordings of "
                                                  "your own) to see that"))
    if args.question:
        many = len(args.question)
        print(f"  {many} test question{'s' if many > 1 else ''} of your own: answered before and after training")

    if warned:
        print(f"  {warned:,} rows had problems and were skipped or flagged; "
              f"see `dragonfarm inspect {_quote(args.data)}`")
    print(f"Next: dragonfarm train {_quote(str(run))}")
    return 0


# ----- the readable report -------------------------------------------------

def _quote(text: str) -> str:
    """Quoted for a shell only when needed; double quotes work on Windows and macOS."""
    if re.fullmatch(r"[\w@%+=:,./\\-]+", text):
        return text
    return '"' + text.replace('"', '\\"') + '"'


def render_chat(chat: list[dict[str, str]], width: int = 78) -> list[str]:
    lines = []
    for msg in chat:
        label = f"{_ROLE_WORDS.get(msg['role'], msg['role'])}:"
        text = msg["content"]
        if len(text) > PREVIEW_CHARS:
            text = text[:PREVIEW_CHARS].rstrip() + " ..."
        body = []
        for para in text.splitlines() or [""]:
            body += textwrap.wrap(para, width - 15) or [""]
        lines.append(f"    {label:<11}{body[0]}")
        lines += [f"    {'':<11}{b}" for b in body[1:]]
    return lines


def _plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def render_report(r, args: argparse.Namespace | None = None) -> str:
    out = []
    fmt = r.format.upper() if r.format != "xlsx" else "Excel workbook"
    out.append(f"File:        {r.file} ({fmt}{', ' + read_as(r.delimiter, r.encoding) if r.encoding else ''})")
    if r.encoding_guessed:
        out.append(f"Encoding:    {r.encoding_words}, guessed (the file is not UTF-8): check the letters in the "
                   "examples below")
    if r.sheets:
        out.append("Sheets:      " + ", ".join(f"{s} (used)" if s == r.sheet else s for s in r.sheets))
    names_row = f" (names from row {r.header_row})" if r.header_row and r.header_row > 1 else ""
    out.append("Columns:     " + (", ".join(r.columns) or "(none)") + names_row)
    out.append(f"Looks like:  {r.shape_words}")
    out.append("Mapping:" + ("     (chosen by what the columns hold; to change it use --prompt-column and "
                             "--reply-column)" if r.mapping_guessed else ""))
    out.extend(mapping_lines(r.mapping))
    if r.preview:
        out.append("")
        out.append(f"The first {_plural(len(r.preview), 'example')}, as the model will see them:")
        for i, chat in enumerate(r.preview, 1):
            out.append(f"  -- Example {i} --")
            out.extend(render_chat(chat))
    c = r.counts
    out.append("")
    parts = [_plural(c.rows, "row"), _plural(c.usable, "usable example")]
    if c.empty:
        parts.append(f"{c.empty:,} empty (skipped)")
    if c.duplicates:
        parts.append(_plural(c.duplicates, "duplicate") + " (used once)")
    if c.skipped:
        parts.append(f"{c.skipped:,} with errors (skipped)")
    if c.too_long:
        parts.append(f"{c.too_long:,} too long (cut off)")
    out.append("Counts:      " + ", ".join(parts) + ("" if r.complete else f" (only the first {c.rows:,} rows were read)"))
    s = r.lengths
    if s.count:
        out.append(f"Lengths:     {s.min:,} to {s.max:,} {s.unit} per example, typically {s.median:,}; "
                   f"95% are at most {s.p95:,}")
    if r.problems_total:
        shown = r.problems[:SHOW_PROBLEMS]
        out.append("")
        out.append(f"Problems ({len(shown)} of {r.problems_total:,} shown):" if r.problems_total > len(shown)
                   else f"Problems ({r.problems_total:,}):")
        for p in shown:
            out.append(f"  {p.severity:<8}{p.message}")
        if r.problems_total > len(shown):
            out.append(f"  ... and {r.problems_total - len(shown):,} more. Use --json to list up to {len(r.problems)}.")
    out.append("")
    out.append(_next_step(r, args))
    return "\n".join(out)


def _col(name: str | None) -> str:
    return f"column '{name}'" if name else "(not chosen)"


def read_as(delimiter: str | None, encoding: str | None) -> str:
    """'comma-separated, UTF-8' for a text table; the encoding in words."""
    from trainer.dataimport.encoding import describe

    extra = [f"{_DELIM_WORDS.get(delimiter, repr(delimiter))}-separated"] if delimiter else []
    return ", ".join(extra + ([describe(encoding)] if encoding else []))


def mapping_lines(m) -> list[str]:
    """Which column becomes the prompt, the reply and the system prompt."""
    from trainer.dataimport import Mapping

    m = Mapping.from_dict(m) if isinstance(m, dict) else m
    out = []
    if m.shape in ("messages", "sharegpt"):
        out.append(f"  chats      <- column '{m.messages_column}'")
    else:
        out.append(f"  prompt     <- {_col(m.prompt_column)}" + (f" + {_col(m.input_column)}" if m.input_column else ""))
        out.append(f"  reply      <- {_col(m.reply_column)}")
    if m.system_column:
        out.append(f"  system     <- {_col(m.system_column)}")
    elif m.system_prompt:
        out.append(f"  system     <- \"{m.system_prompt[:60]}{'...' if len(m.system_prompt) > 60 else ''}\" (every example)")
    return out


def _next_step(r, args: argparse.Namespace | None) -> str:
    if not r.ok:
        return ("Not ready yet: fix the errors above (or choose other columns with --prompt-column and "
                "--reply-column), then run this again.")
    cmd = ["dragonfarm", "new", "--data", _quote(r.path), "--model", DEFAULT_MODEL]
    if r.sheet and r.sheets and r.sheet != r.sheets[0]:
        cmd += ["--sheet", _quote(r.sheet)]
    if args is not None:
        for flag in ("prompt_column", "reply_column", "input_column", "system_column"):
            value = getattr(args, flag, None)
            if value:
                cmd += ["--" + flag.replace("_", "-"), _quote(value)]
        if getattr(args, "system", None):
            cmd += ["--system", _quote(args.system)]
    skipped = r.counts.skipped
    if skipped:
        return (f"Usable, but {_plural(skipped, 'row')} with errors will be left out (see above); fix "
                f"{'it' if skipped == 1 else 'them'} first if {'it matters' if skipped == 1 else 'they matter'}. "
                "To make a run folder:\n  " + " ".join(cmd))
    return "Looks good. Next, make a run folder:\n  " + " ".join(cmd)
