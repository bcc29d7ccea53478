"""A run that travels to another computer and back (a rented GPU machine, say).

What a pack holds depends on how far the run got:

  trained    a finished run: settings, adapter(s), loss, held-out check, sample
             replies and logs; the examples only when asked (--with-data).
  untrained  a run set up but not trained yet, or stopped before it saved an
             adapter: settings and the examples, always (there is nothing to
             train without them), and its newest complete checkpoint when it
             has one, so `dragonfarm train RUN --resume` continues it there.
  stopped    cancelled, interrupted or failed with an adapter: as trained; with
             the examples (--with-data) also the newest checkpoint, to finish it
             elsewhere.

A run that will train on the other computer must name a model that computer
can get: a local folder or .gguf file is refused at pack time unless the
person names the model for the other side (`--model`). `set_model` is that
same fix on the receiving side. Standard library only: the app imports it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from trainer.run import files
from trainer.run import status as st
from trainer.run.config import DEFAULT_MODEL, TrainConfig
from trainer.run.errors import UserError
from trainer.run.reader import Run
from trainer.run.sharecheck import allowed_kind

TRAINED, UNTRAINED, STOPPED = "trained", "untrained", "stopped"
PACK_FILES = (files.CONFIG_FILE, files.STATUS_FILE, files.PROGRESS_FILE, files.EVAL_FILE, files.SAMPLES_FILE)
PACK_DIRS = (files.ADAPTER_DIR, files.ADAPTER_BEST_DIR, files.LOGS_DIR)


@dataclass
class PackPlan:
    kind: str
    members: list[str]
    with_data: bool
    model: str                      # what the packed config.json names
    model_changed: bool = False     # --model named it for the other computer
    train_examples: int = 0
    eval_examples: int = 0
    checkpoint_step: int | None = None

    def lines(self) -> list[str]:
        """What the pack holds, in words, for the person who made it."""
        out = []
        if self.kind == UNTRAINED:
            out.append("It holds a run set up but not trained yet: its settings and examples. Train it with "
                       "`dragonfarm train` on the other machine (first `dragonfarm unpack` the .zip there).")
        elif self.kind == STOPPED:
            out.append("It holds a run that stopped before the end: its settings, adapter so far, loss, "
                       "held-out check, sample replies and logs.")
        else:
            out.append("It holds a trained run: its settings, adapter, loss, held-out check, sample replies and logs.")
        if self.with_data:
            held = f" and {self.eval_examples:,} held-out examples" if self.eval_examples else ""
            out.append(f"It includes your {self.train_examples:,} training examples{held}: whoever gets the file "
                       "can read them.")
        else:
            out.append("The training data was left out (add --with-data to include it"
                       + (", and the last checkpoint, so the run can be finished on another machine)."
                          if self.kind == STOPPED else ")."))
        if self.checkpoint_step is not None:
            out.append(f"It carries the checkpoint from step {self.checkpoint_step}: "
                       "`dragonfarm train RUN --resume` continues from there.")
        if self.kind != TRAINED and self.with_data:
            where = "from the Hugging Face Hub" if not looks_local(self.model) else "from that path"
            out.append(f"The other machine will train {self.model} (it gets the model {where})"
                       + (", as --model said." if self.model_changed else "."))
        elif self.model_changed:
            out.append(f"Its settings name the model {self.model}, as --model said.")
        elif looks_local(self.model):
            out.append(f"Its model is a folder or file on this computer, so the pack names it only "
                       f"{PurePosixPath(self.model.replace(chr(92), '/')).name}: add --model HUB_ID (or the path it has "
                       "on the other computer) so the run works there.")
        return out


def looks_local(model: str) -> bool:
    """A model named by a path on this computer (a folder or a .gguf file), not a Hub id."""
    return (model.startswith((".", "/", "~", "\\")) or "\\" in model or model.count("/") > 1
            or (len(model) > 1 and model[1] == ":") or model.lower().endswith(".gguf")
            or Path(model).expanduser().exists())


def kind_of(run: Run) -> str:
    if not run.has_adapter():
        return UNTRAINED
    return STOPPED if run.status()["state"] in (st.CANCELLED, st.INTERRUPTED, st.FAILED) else TRAINED


def newest_checkpoint(run_dir: Path) -> tuple[int, list[str]] | None:
    """The newest checkpoints/step-N holding every checkpoint file (what resume would use), as its step
    and its files relative to the run folder."""
    folder = run_dir / files.CHECKPOINTS_DIR
    steps = []
    if folder.is_dir():
        for p in folder.glob("step-*"):
            tail = p.name.split("-", 1)[1]
            if tail.isdigit() and not p.is_symlink() and all(
                    (p / n).is_file() and not (p / n).is_symlink() for n in files.CHECKPOINT_FILES):
                steps.append(int(tail))
    if not steps:
        return None
    step = max(steps)
    return step, [f"{files.CHECKPOINTS_DIR}/step-{step}/{n}" for n in files.CHECKPOINT_FILES]


def count_examples(path: Path) -> int:
    try:
        with open(path, "rb") as fh:
            return sum(1 for line in fh if line.strip())
    except OSError:
        return 0


def _tree(run_dir: Path, folder: str) -> list[str]:
    base = run_dir / folder
    if not base.is_dir():
        return []
    return sorted(p.relative_to(run_dir).as_posix() for p in base.rglob("*") if p.is_file() and not p.is_symlink())


def plan_pack(run_dir: Path, with_data: bool = False, last: bool = False, model: str | None = None) -> PackPlan:
    """What `dragonfarm pack` puts in the .zip, or a UserError saying why it cannot be packed yet."""
    run = Run(run_dir)
    kind = kind_of(run)
    config = run.config_dict()
    current = config.get("model") if isinstance(config.get("model"), str) else ""
    if model is not None and not model.strip():
        raise UserError("--model is empty.", f"Give a Hugging Face id such as {DEFAULT_MODEL}, or a path.")
    with_data = with_data or kind == UNTRAINED
    found = [name for name in PACK_FILES if (run_dir / name).is_file()]
    for folder in PACK_DIRS + ((files.DATA_DIR,) if with_data else ()):
        if not (last and folder == files.ADAPTER_BEST_DIR):
            found += _tree(run_dir, folder)
    plan = PackPlan(kind, [rel for rel in found if allowed_kind(rel)], with_data, (model or current).strip(),
                    model_changed=model is not None)
    if not with_data:
        return plan
    train_file, eval_file = config.get("train_file"), config.get("eval_file")
    for rel, what in ((train_file, "training examples"), (eval_file, "held-out examples")):
        if not rel or (what.startswith("held") and not (run_dir / str(rel)).is_file()):
            continue
        posix = PurePosixPath(str(rel).replace("\\", "/")).as_posix()
        if posix not in plan.members:
            missing = not (run_dir / str(rel)).is_file()
            raise UserError(f"The run {run.name}'s {what} ({rel}) "
                            + ("are missing." if missing else "are not in its data folder, so they cannot travel "
                                                              "with it."),
                            "Make the run again with New run or `dragonfarm new`, which keeps the examples in the "
                            "run's data folder.")
    plan.train_examples = count_examples(run_dir / str(train_file))
    plan.eval_examples = count_examples(run_dir / str(eval_file)) if eval_file else 0
    if kind != TRAINED:
        checkpoint = newest_checkpoint(run_dir)
        if checkpoint:
            plan.checkpoint_step = checkpoint[0]
            plan.members += checkpoint[1]
        if model is None and looks_local(current):
            raise UserError(
                f"The run {run.name} trains {current}, a model {'file' if current.lower().endswith('.gguf') else 'folder'} "
                "on this computer, which the other machine will not have (a model is too big to go inside a pack).",
                f"Name the model as the other machine can get it: dragonfarm pack {run.name} --model HUB_ID "
                f"(its Hugging Face id, such as {DEFAULT_MODEL}), or copy the model there yourself and give the "
                "path it will have there: --model PATH.")
    return plan


def set_model(run_dir: Path, model: str) -> str:
    """Point the run at the model as this computer knows it (`dragonfarm train RUN --model ...`); the words to say."""
    run = Run(run_dir)
    model = model.strip()
    if not model:
        raise UserError("--model is empty.", f"Give a Hugging Face id such as {DEFAULT_MODEL}, or a model's path.")
    if run.status().get("live"):
        raise UserError(f"The run {run.name} is training; its model cannot change now.",
                        "Wait for it to finish, or stop it first.")
    config = TrainConfig.load(run_dir)
    if config.model == model:
        return f"The run already uses {model}."
    old = config.model
    config.with_overrides(model=model).save(run_dir)
    return f"The run now uses the model {model} (it named {old})."


def model_missing_here(model: object) -> bool:
    """The run names a model path that this computer does not have (a Hub id is fetched when training)."""
    return isinstance(model, str) and looks_local(model) and not Path(model).expanduser().exists()


def unpacked_lines(path: Path, wanted: str | None, ref: str, model_was_local: bool = False) -> list[str]:
    """What an imported run is and what to do next; `ref` is how to name it in a command; `model_was_local`:
    the pack named a model folder or file of the computer it was made on by its name only."""
    run = Run(path)
    kind = kind_of(run)
    out = []
    if wanted and path.name != wanted:
        out.append(f"A run called {wanted} was already there, so this one is called {path.name} "
                   "(the other was not touched).")
    resumable = newest_checkpoint(path) is not None and (path / files.TRAIN_DATA).is_file()
    if kind == TRAINED:
        out.append("It is a trained run: the app shows its loss, held-out check and sample replies, and "
                   f"Try it uses its adapter (or: dragonfarm chat {ref}).")
    elif kind == UNTRAINED:
        out.append("It is a run set up but not trained yet. Train it with: dragonfarm train "
                   + (f"{ref} --resume (it continues from its checkpoint)" if resumable else ref))
    else:
        out.append("It is a run that stopped before the end, with its adapter so far"
                   + (f"; finish it with: dragonfarm train {ref} --resume" if resumable else "."))
    model = run.config_dict().get("model")
    if model_missing_here(model) or (model_was_local and not Path(str(model)).expanduser().exists()):
        fix = (f"dragonfarm train {ref} --model HUB_ID_OR_PATH (such as {DEFAULT_MODEL})" if kind != TRAINED else
               f"change \"model\" in its {files.CONFIG_FILE} to the model's Hugging Face id or its path here")
        was = " (a folder or file on the computer that packed it)" if model_was_local else ""
        out.append(f"Its model, {model}{was}, is not on this computer. Name it as this computer can get it: {fix}.")
    return out
