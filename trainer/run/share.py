"""`dragonfarm pack RUN_DIR` and `dragonfarm unpack FILE.zip`: a run as one .zip.

A pack holds the config, adapter, eval, samples, progress, status and logs (the
training data only when asked; never checkpoints, merged/ or exports) under
one folder named after the run, plus a manifest of sizes and SHA-256 hashes.

Unpacking treats the archive as untrusted: it refuses absolute paths, `..`,
links and other special members, encrypted members, oversized members and
archives, and members that compress suspiciously well; it counts the bytes it
actually reads (never trusting the declared sizes), checks the manifest, and
never overwrites an existing run. Standard library only: the app imports it.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import time
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path

from trainer.run.reader import Run, is_run_dir
from trainer.run import files
from trainer.run.files import CONFIG_FILE
from trainer.run.errors import UserError

MANIFEST = files.PACK_MANIFEST
PACK_FILES = (files.CONFIG_FILE, files.STATUS_FILE, files.PROGRESS_FILE, files.EVAL_FILE, files.SAMPLES_FILE)
PACK_DIRS = (files.ADAPTER_DIR, files.ADAPTER_BEST_DIR, files.LOGS_DIR)
DATA_DIR = files.DATA_DIR
CHUNK = 1 << 20


@dataclass(frozen=True)
class Limits:
    member_bytes: int = 4 << 30      # one file
    total_bytes: int = 16 << 30      # the whole run
    members: int = 10_000
    ratio: float = 200.0             # uncompressed / compressed, for members over ratio_floor
    ratio_floor: int = 1 << 20


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def pack_members(run_dir: Path, with_data: bool = False, last: bool = False) -> list[str]:
    """The run's files that go into a pack, as POSIX paths relative to the run folder. The best adapter
    (adapter-best/) goes too unless `last`, so the unpacked run's Try it uses the same adapter."""
    found = [name for name in PACK_FILES if (run_dir / name).is_file()]
    dirs = tuple(d for d in PACK_DIRS if not (last and d == files.ADAPTER_BEST_DIR))
    for folder in dirs + ((DATA_DIR,) if with_data else ()):
        base = run_dir / folder
        if base.is_dir():
            found += sorted(p.relative_to(run_dir).as_posix() for p in base.rglob("*")
                            if p.is_file() and not p.is_symlink())
    return found


def _free_path(path: Path) -> Path:
    candidate, n = path, 2
    while candidate.exists():
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
        n += 1
    return candidate


def pack(run_dir: str | Path, out: str | Path | None = None, with_data: bool = False, last: bool = False) -> Path:
    run_dir = Path(run_dir)
    if not is_run_dir(run_dir):
        raise UserError(f"{run_dir} is not a DragonFarm run folder (it has no config.json).",
                        "Give the run's folder.")
    run = Run(run_dir)
    if run.status().get("live"):
        raise UserError(f"The run {run.name} is still training.", "Pack it when it has finished or been stopped.")
    if not run.has_adapter():
        raise UserError(f"The run {run.name} has no trained adapter yet, so there is nothing to share.",
                        "Train it first.")
    out = Path(out) if out else _free_path(Path.cwd() / f"{run.name}.zip")
    if out.is_dir():
        out = _free_path(out / f"{run.name}.zip")
    if out.suffix.lower() != ".zip":
        out = out.with_name(out.name + ".zip")
    if out.exists():
        raise UserError(f"{out} already exists.", "Choose another file name, or move the old file away.")
    members = pack_members(run_dir, with_data, last)
    manifest = {"format": "dragonfarm-run", "version": 1, "name": run.name, "with_data": with_data,
                "packed_at": time.time(),
                "files": {m: {"size": (run_dir / m).stat().st_size, "sha256": _sha256(run_dir / m)} for m in members}}
    partial = out.with_name(out.name + ".partial")
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
        zf.writestr(f"{run.name}/{MANIFEST}", json.dumps(manifest, indent=2))
        for member in members:
            zf.write(run_dir / member, f"{run.name}/{member}")
    os.replace(partial, out)
    return out


def _refuse(archive: Path, what: str) -> UserError:
    return UserError(f"{archive.name} cannot be imported: {what}",
                     "Only import .zip files made with DragonFarm's Share (pack), from people you trust.")


_DRIVE = re.compile(r"^[A-Za-z]:")
_SAFE_NAME = re.compile(r"^[^\\/:*?\"<>|\x00-\x1f]+$")


def check_members(archive: Path, infos: list[zipfile.ZipInfo], limits: Limits) -> str:
    """Every member judged before anything is written; the run's folder name."""
    if len(infos) > limits.members:
        raise _refuse(archive, f"it has {len(infos)} files, more than a run ever has ({limits.members}).")
    tops, total = set(), 0
    for info in infos:
        name = info.filename
        if name.startswith(("/", "\\")) or _DRIVE.match(name):
            raise _refuse(archive, f"it contains a file with an absolute path ({name}).")
        if "\\" in name or "\x00" in name:
            raise _refuse(archive, f"it contains a file name with a backslash ({name}).")
        parts = name.rstrip("/").split("/")
        if ".." in parts or "." in parts or "" in parts:
            raise _refuse(archive, f"it contains a path that climbs out of its folder ({name}).")
        if any(not _SAFE_NAME.match(p) for p in parts):
            raise _refuse(archive, f"it contains a file name that is not allowed ({name}).")
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise _refuse(archive, f"it contains a link ({name}), which could point anywhere on your computer.")
        if stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):  # 0: no type recorded (a plain file)
            raise _refuse(archive, f"it contains a special file ({name}).")
        if info.flag_bits & 0x1:
            raise _refuse(archive, f"it contains an encrypted file ({name}).")
        if info.file_size > limits.member_bytes:
            raise _refuse(archive, f"{name} would be {info.file_size / 1e9:.1f} GB, larger than any run file "
                                   f"({limits.member_bytes / 1e9:.1f} GB at most).")
        if info.file_size > limits.ratio_floor and info.file_size > limits.ratio * max(info.compress_size, 1):
            raise _refuse(archive, f"{name} expands {info.file_size / max(info.compress_size, 1):.0f} times, "
                                   "which is how archive bombs look.")
        total += info.file_size
        if total > limits.total_bytes:
            raise _refuse(archive, f"it would unpack to more than {limits.total_bytes / 1e9:.1f} GB.")
        tops.add(parts[0])
    if len(tops) != 1:
        raise _refuse(archive, "it does not hold exactly one run folder.")
    top = tops.pop()
    if not any(i.filename == f"{top}/{CONFIG_FILE}" for i in infos):
        raise _refuse(archive, "it holds no run (there is no config.json).")
    return top


def _copy_capped(zf: zipfile.ZipFile, info: zipfile.ZipInfo, dest: Path, archive: Path, limits: Limits) -> int:
    cap = min(info.file_size, limits.member_bytes)
    written = 0
    with zf.open(info) as source, open(dest, "xb") as out:
        while True:
            chunk = source.read(min(CHUNK, cap + 1 - written))
            if not chunk:
                break
            written += len(chunk)
            if written > cap:
                raise _refuse(archive, f"{info.filename} holds more data than it declares (an archive bomb).")
            out.write(chunk)
    return written


def unpack(archive: str | Path, runs_dir: str | Path | None = None, name: str | None = None,
           limits: Limits = Limits()) -> Path:
    """Bring a packed run into runs_dir; returns its new folder (never an existing one)."""
    from trainer.run.settings import runs_dir as default_runs_dir

    archive = Path(archive)
    runs_dir = Path(runs_dir) if runs_dir else default_runs_dir()
    if not archive.is_file():
        raise UserError(f"{archive} does not exist.", "Choose the .zip file again.")
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError) as exc:
        raise _refuse(archive, f"it is not a readable .zip file ({exc}).") from exc
    with zf:
        infos = zf.infolist()
        top = check_members(archive, infos, limits)
        if name is not None and (not _SAFE_NAME.match(name) or name in (".", "..")):
            raise UserError(f"'{name}' cannot be a run name.", "Use letters, digits, spaces, '-' or '_'.")
        wanted = name or top
        runs_dir.mkdir(parents=True, exist_ok=True)
        staging = runs_dir / f".unpacking-{uuid.uuid4().hex[:8]}"
        staging.mkdir()
        try:
            total = 0
            for info in infos:
                rel = info.filename.split("/", 1)[1] if "/" in info.filename else ""
                if not rel or info.is_dir():
                    continue
                dest = staging.joinpath(*rel.split("/"))
                dest.parent.mkdir(parents=True, exist_ok=True)
                try:
                    total += _copy_capped(zf, info, dest, archive, limits)
                except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as exc:
                    raise _refuse(archive, f"it is damaged ({info.filename}: {exc}).") from exc
                if total > limits.total_bytes:
                    raise _refuse(archive, f"it unpacks to more than {limits.total_bytes / 1e9:.1f} GB.")
            _verify_manifest(staging, archive)
            return _place(staging, runs_dir, wanted, explicit=name is not None)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise


def _verify_manifest(folder: Path, archive: Path) -> None:
    path = folder / MANIFEST
    if not path.is_file():
        return  # a hand-made zip of a run folder: accepted, without hashes to check
    try:
        files = json.loads(path.read_text(encoding="utf-8"))["files"]
    except (ValueError, KeyError, TypeError) as exc:
        raise _refuse(archive, "its list of contents is damaged.") from exc
    for rel, meta in files.items():
        target = folder / rel
        if not target.is_file() or _sha256(target) != meta.get("sha256"):
            raise _refuse(archive, f"{rel} is missing or was changed after packing.")
    path.unlink()


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
