"""`dragonfarm pack RUN_DIR` and `dragonfarm unpack FILE.zip`: a run as one .zip.

A pack holds the config, adapter, eval, samples, progress, status and logs (the
training data only when asked; never merged/ or exports) under one folder named
after the run, plus a manifest of sizes and SHA-256 hashes. A run not trained
yet packs its settings and examples, and its newest checkpoint if it has one,
to be trained on another machine (trainer/run/elsewhere.py decides what goes).
A run that is training is refused, and the pack holds the run's trainer lock
while it reads, so no trainer can start and change the files half-way.

The pack leaves out what says where and on which computer it was made: the
model's local path becomes its name, and the home folder, the run folder and
the host name are replaced in logs, status and adapter settings.

Unpacking treats the archive as untrusted (trainer/run/sharecheck.py judges
it first): only the files its manifest lists, of the kinds a run holds, with
the sizes and hashes listed; no archive bombs, unsafe or Windows-reserved
names, or more than the disk can take. It counts the bytes it actually reads,
says in words what it refused, and never overwrites an existing run.
Standard library only: the app imports it.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import socket
import time
import uuid
import zipfile
from pathlib import Path
from typing import Callable

from trainer.run.reader import Run, is_run_dir
from trainer.run import files
from trainer.run import status as st
from trainer.run.elsewhere import PackPlan, looks_local, plan_pack
from trainer.run.errors import UserError
from trainer.run.lock import LockHeld, TrainerLock
from trainer.run.sharecheck import (MANIFEST, Limits, check_against_manifest, check_members,
                                    name_problem, read_manifest, refuse)

DATA_DIR = files.DATA_DIR
CHUNK = 1 << 20


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def pack_members(run_dir: Path, with_data: bool = False, last: bool = False) -> list[str]:
    """The run's files that go into a pack, as POSIX paths relative to the run folder. The best adapter
    (adapter-best/) goes too unless `last`, so the unpacked run's Try it uses the same adapter."""
    return plan_pack(Path(run_dir), with_data, last).members


def _free_path(path: Path) -> Path:
    candidate, n = path, 2
    while candidate.exists():
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
        n += 1
    return candidate


def pack(run_dir: str | Path, out: str | Path | None = None, with_data: bool = False, last: bool = False,
         model: str | None = None) -> Path:
    return pack_run(run_dir, out, with_data, last, model)[0]


def pack_run(run_dir: str | Path, out: str | Path | None = None, with_data: bool = False, last: bool = False,
             model: str | None = None) -> tuple[Path, PackPlan]:
    """Pack the run; the .zip and what it holds. `model` names the base model for the other machine."""
    run_dir = Path(run_dir)
    if not is_run_dir(run_dir):
        raise UserError(f"{run_dir} is not a DragonFarm run folder (it has no config.json).",
                        "Give the run's folder.")
    run = Run(run_dir)
    training = UserError(f"The run {run.name} is still training.", "Pack it when it has finished or been stopped.")
    if run.status().get("live"):
        raise training
    try:  # held while reading, so no trainer starts half-way; a folder without a lock file is left without one
        lock = TrainerLock(run_dir, wait=0.5, create=False).acquire()
    except LockHeld:
        raise training from None
    except OSError:
        lock = None  # no lock file (no trainer of this version has run here), or a folder we cannot write to
    try:
        plan = plan_pack(run_dir, with_data, last, model)
        return _write_pack(run_dir, run, plan, out), plan
    finally:
        if lock is not None:
            lock.release()


def _write_pack(run_dir: Path, run: Run, plan: PackPlan, out: str | Path | None) -> Path:
    out = Path(out) if out else _free_path(Path.cwd() / f"{run.name}.zip")
    if out.is_dir():
        out = _free_path(out / f"{run.name}.zip")
    if out.suffix.lower() != ".zip":
        out = out.with_name(out.name + ".zip")
    if out.exists():
        raise UserError(f"{out} already exists.", "Choose another file name, or move the old file away.")
    members = plan.members
    scrub = Scrubber(run_dir, run.config_dict().get("model"), plan.model if plan.model_changed else None)
    # The examples are the person's own words, packed as they are; everything else is scrubbed.
    cleaned = {m: scrub.file(run_dir, m) for m in members if not m.endswith(".jsonl") or not m.startswith(DATA_DIR)}
    manifest = {"format": "dragonfarm-run", "version": 2, "name": run.name, "with_data": plan.with_data,
                "kind": plan.kind, "model_from_path": bool(scrub.model_name and not plan.model_changed),
                "packed_at": time.time(), "files": {}}
    for m in members:
        data = cleaned.get(m)
        manifest["files"][m] = ({"size": len(data), "sha256": hashlib.sha256(data).hexdigest()} if data is not None
                                else {"size": (run_dir / m).stat().st_size, "sha256": _sha256(run_dir / m)})
    partial = out.with_name(out.name + ".partial")
    try:
        with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
            zf.writestr(f"{run.name}/{MANIFEST}", json.dumps(manifest, indent=2))
            for member in members:
                if cleaned.get(member) is not None:
                    zf.writestr(f"{run.name}/{member}", cleaned[member])
                else:
                    zf.write(run_dir / member, f"{run.name}/{member}")
        os.replace(partial, out)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise UserError(f"Could not write {out}: {exc.strerror or exc}.",
                        "Choose a folder with enough free space that you can write to.") from exc
    return out


class Scrubber:
    """What a pack must not carry: the model's local path, the home folder, the run folder, the host name."""

    TEXT = (".json", ".jsonl", ".log", ".md", ".txt")

    def __init__(self, run_dir: Path, model: object, new_model: str | None = None):
        pairs: list[tuple[str, str]] = []
        if isinstance(model, str) and looks_local(model):
            local = Path(model).expanduser()
            for form in {model, str(local), str(local.resolve())}:
                pairs.append((form, local.name))
        for form in {str(run_dir), str(run_dir.resolve())}:
            pairs.append((form, "<run folder>"))
        pairs.append((str(Path.home()), "~"))
        host = socket.gethostname()
        if len(host) >= 3:
            pairs.append((host, "<computer>"))
        # JSON writes a Windows path's backslashes doubled: replace that spelling too.
        pairs += [(json.dumps(a)[1:-1], json.dumps(b)[1:-1]) for a, b in pairs if json.dumps(a)[1:-1] != a]
        self.pairs = sorted({(a, b) for a, b in pairs if len(a) > 1}, key=lambda ab: -len(ab[0]))
        self.model_name = Path(model).expanduser().name if isinstance(model, str) and looks_local(model) else None
        self.new_model = new_model  # --model: the model as the other machine knows it, written as given

    def text(self, text: str) -> str:
        for old, new in self.pairs:
            text = text.replace(old, new)
        return text

    def file(self, run_dir: Path, rel: str) -> bytes | None:
        """The member's bytes as packed, or None to copy the file as it is."""
        if Path(rel).suffix.lower() not in self.TEXT:
            return None
        if rel.startswith(files.CHECKPOINTS_DIR + "/") and Path(rel).name != "adapter_config.json":
            return None  # training state: numbers only, which a text replacement could only damage
        raw = (run_dir / rel).read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
        if rel == files.IMPORT_FILE:
            try:
                text = json.dumps(_names_only(json.loads(text)), indent=2)
            except ValueError:
                pass
        if rel in (files.CONFIG_FILE, files.STATUS_FILE):
            try:
                data = json.loads(text)
            except ValueError:
                data = None
            if isinstance(data, dict) and rel == files.CONFIG_FILE and self.model_name:
                data["model"] = self.model_name
                text = json.dumps(data, indent=2)
            if isinstance(data, dict) and rel == files.STATUS_FILE and (
                    {"pid", "host"} & set(data) or data.get("state") in st.ACTIVE_STATES):
                data.pop("pid", None)
                data.pop("host", None)
                if data.get("state") in st.ACTIVE_STATES:  # packing refuses a live run: its trainer is gone
                    data["state"] = st.INTERRUPTED
                text = json.dumps(data, indent=2)
        text = self.text(text)
        if rel == files.CONFIG_FILE and self.new_model:
            try:
                data = json.loads(text)
            except ValueError:
                data = None
            if isinstance(data, dict):
                data["model"] = self.new_model
                text = json.dumps(data, indent=2)
        return text.encode("utf-8")


def _names_only(value: object) -> object:
    """Absolute paths (where the person's files were) reduced to the file's name."""
    if isinstance(value, dict):
        return {k: _names_only(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_names_only(v) for v in value]
    if isinstance(value, str) and (value.startswith(("/", "~", "\\")) or (len(value) > 2 and value[1:3] in (":\\", ":/"))):
        return value.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    return value


def _copy_capped(zf: zipfile.ZipFile, info: zipfile.ZipInfo, dest: Path, archive: Path, cap: int,
                 on_chunk: Callable[[int], None] | None = None) -> int:
    written = 0
    with zf.open(info) as source, open(dest, "xb") as out:
        while True:
            chunk = source.read(min(CHUNK, cap + 1 - written))
            if not chunk:
                break
            written += len(chunk)
            if written > cap:
                raise refuse(archive, f"{info.filename} holds more data than it declares (an archive bomb).")
            out.write(chunk)
            if on_chunk:
                on_chunk(len(chunk))
    return written


def _write_problem(exc: OSError, runs_dir: Path, what: str) -> UserError:
    if exc.errno == errno.ENOSPC:
        return UserError(f"There is not enough free space in {runs_dir} to import the run.",
                         "Free some space, or choose another runs folder in Settings, and import it again.")
    if exc.errno == errno.ENAMETOOLONG:
        return UserError(f"The path of {what} is too long for this computer.",
                         "Choose a runs folder with a shorter path in Settings, or a shorter run name.")
    if isinstance(exc, FileExistsError):
        return UserError(f"{what} already exists in {runs_dir}.", "Import it again; DragonFarm never overwrites.")
    return UserError(f"Could not write {what} in {runs_dir}: {exc.strerror or exc}.",
                     "Check that the runs folder exists, is writable and has free space.")


def unpack(archive: str | Path, runs_dir: str | Path | None = None, name: str | None = None,
           limits: Limits | None = None, progress: Callable[[int, int], None] | None = None) -> Path:
    """Bring a packed run into runs_dir; returns its new folder (never an existing one).

    progress(bytes written, bytes in all) is called as the files come out; an
    exception raised in it (Cancel) stops the import and leaves nothing behind."""
    limits = limits or Limits()
    from trainer.run.settings import runs_dir as default_runs_dir

    archive = Path(archive)
    runs_dir = Path(runs_dir) if runs_dir else default_runs_dir()
    if not archive.is_file():
        raise UserError(f"{archive} does not exist.", "Choose the .zip file again.")
    if name is not None and (name_problem(name) or name.startswith(".")):
        why = name_problem(name) or "starts with a dot, which hides a folder"
        raise UserError(f"'{name}' cannot be a run name: it {why}.",
                        "Use letters, digits, spaces, '-' or '_'.")
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise refuse(archive, f"it is not a readable .zip file ({exc}).") from exc
    with zf:
        infos = zf.infolist()
        top = check_members(archive, infos, limits)
        manifest = read_manifest(zf, top, archive)
        check_against_manifest(archive, infos, top, manifest)
        need = sum(size for size, _ in manifest.values())
        try:
            runs_dir.mkdir(parents=True, exist_ok=True)
            free = shutil.disk_usage(runs_dir).free
        except OSError as exc:
            raise _write_problem(exc, runs_dir, "the runs folder") from exc
        if need + limits.free_margin > free:
            raise UserError(f"The run needs {need / 1e9:.2f} GB but {runs_dir} has only {free / 1e9:.2f} GB free.",
                            "Free some space, or choose another runs folder in Settings, and import it again.")
        staging = runs_dir / f".unpacking-{uuid.uuid4().hex[:8]}"
        done = 0

        def written(count: int) -> None:
            nonlocal done
            done += count
            progress(done, need)
        try:
            staging.mkdir()
            for info in infos:
                rel = info.filename.split("/", 1)[1] if "/" in info.filename else ""
                if not rel or info.is_dir() or rel == MANIFEST:
                    continue
                dest = staging.joinpath(*rel.split("/"))
                dest.parent.mkdir(parents=True, exist_ok=True)
                try:
                    _copy_capped(zf, info, dest, archive, min(manifest[rel][0], limits.member_bytes),
                                 written if progress else None)
                except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError) as exc:
                    raise refuse(archive, f"it is damaged ({info.filename}: {exc}).") from exc
                if _sha256(dest) != manifest[rel][1]:
                    raise refuse(archive, f"{rel} is missing or was changed after packing.")
            # A folder whose name starts with a dot is hidden, and the run list skips it.
            return _place(staging, runs_dir, name or top.lstrip(".") or "run", explicit=name is not None)
        except OSError as exc:
            raise _write_problem(exc, runs_dir, f"the run {name or top}") from exc
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def _place(staging: Path, runs_dir: Path, wanted: str, explicit: bool) -> Path:
    target, n = runs_dir / wanted, 2
    while True:
        if target.exists():
            if explicit:
                raise UserError(f"A run called {wanted} already exists in {runs_dir}.",
                                "Choose another name; DragonFarm never overwrites a run.")
            target = runs_dir / f"{wanted}-{n}"
            n += 1
            continue
        try:
            os.rename(staging, target)  # fails rather than overwrite when the folder appeared meanwhile
            return target
        except OSError:
            if not target.exists():
                raise
