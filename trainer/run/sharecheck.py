"""Judging a run archive before a byte of it is written: names, sizes, kinds, manifest.

An archive is untrusted input. Every member must be a kind of file a shared run
holds (settings and results JSON, examples JSONL, adapter weights in
safetensors, tokenizer files, logs, and a checkpoint's five safetensors and JSON
files so a stopped run can be finished elsewhere), listed in the archive's
manifest with its size and SHA-256; nothing that could be executed or unpickled
(.bin/.pt/.pkl/.py files, or anything else in a checkpoint) is ever accepted.
Standard library only: the app imports it.
"""
from __future__ import annotations

import json
import re
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from trainer.run import files
from trainer.run.errors import UserError

MANIFEST = files.PACK_MANIFEST
ROOT_FILES = (files.CONFIG_FILE, files.STATUS_FILE, files.PROGRESS_FILE, files.EVAL_FILE, files.SAMPLES_FILE,
              "README.md")
ADAPTER_SUFFIXES = (".safetensors", ".json", ".model", ".txt", ".jinja", ".md")
_DRIVE = re.compile(r"^[A-Za-z]:")
_SAFE_NAME = re.compile(r"^[^\\/:*?\"<>|\x00-\x1f]+$")
_RESERVED = re.compile(r"^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(\..*)?$", re.IGNORECASE)
_SHA = re.compile(r"^[0-9a-f]{64}$")
_STEP = re.compile(r"^step-[0-9]{1,9}$")
MAX_PART = 120      # characters in one file or folder name
MAX_PATH = 160      # characters in a path inside the run (Windows paths stop near 260 in all)


@dataclass(frozen=True)
class Limits:
    member_bytes: int = 4 << 30      # one file
    total_bytes: int = 8 << 30       # the whole run (a big model's adapter plus its examples)
    members: int = 1_000             # a run holds a few dozen files
    ratio: float = 200.0             # uncompressed / compressed, for one member over ratio_floor
    ratio_floor: int = 1 << 20
    archive_ratio: float = 50.0      # uncompressed / archive size, for archives over archive_floor unpacked
    archive_floor: int = 64 << 20
    free_margin: int = 256 << 20     # left free on the disk after unpacking


def refuse(archive: Path, what: str) -> UserError:
    return UserError(f"{archive.name} cannot be imported: {what}",
                     "Only import .zip files made with DragonFarm's Share (pack), from people you trust.")


def name_problem(part: str) -> str | None:
    """Why one file or folder name cannot be used on Windows, macOS or Linux, or None."""
    if not _SAFE_NAME.match(part) or part in (".", ".."):
        return "has characters that are not allowed in file names"
    if part != part.rstrip(" ."):
        return "ends with a dot or a space, which Windows cannot store"
    if _RESERVED.match(part):
        return "is a name Windows reserves for devices"
    if len(part) > MAX_PART:
        return f"is longer than {MAX_PART} characters"
    return None


def allowed_kind(rel: str) -> bool:
    """A file a shared run may hold (rel: its path inside the run folder)."""
    parts = PurePosixPath(rel).parts
    if len(parts) == 1:
        return rel in ROOT_FILES
    if len(parts) == 3:  # checkpoints/step-N/NAME: only the files the trainer's safe loader reads
        return parts[0] == files.CHECKPOINTS_DIR and bool(_STEP.match(parts[1])) and parts[2] in files.CHECKPOINT_FILES
    if len(parts) != 2:
        return False
    folder, name = parts
    suffix = PurePosixPath(name).suffix.lower()
    if folder == files.DATA_DIR:
        return suffix == ".jsonl" or rel == files.IMPORT_FILE
    if folder in (files.ADAPTER_DIR, files.ADAPTER_BEST_DIR):
        return suffix in ADAPTER_SUFFIXES
    if folder == files.LOGS_DIR:
        return suffix == ".log"
    return False


def check_members(archive: Path, infos: list[zipfile.ZipInfo], limits: Limits) -> str:
    """Every member judged before anything is written; the run's folder name."""
    if len(infos) > limits.members:
        raise refuse(archive, f"it has {len(infos)} files, more than a run ever has ({limits.members}).")
    tops, seen, total = set(), set(), 0
    for info in infos:
        name = info.filename
        if name.startswith(("/", "\\")) or _DRIVE.match(name):
            raise refuse(archive, f"it contains a file with an absolute path ({name}).")
        if "\\" in name or "\x00" in name:
            raise refuse(archive, f"it contains a file name with a backslash ({name}).")
        parts = name.rstrip("/").split("/")
        if ".." in parts or "." in parts or "" in parts:
            raise refuse(archive, f"it contains a path that climbs out of its folder ({name}).")
        for part in parts:
            problem = name_problem(part)
            if problem:
                raise refuse(archive, f"the file name '{part[:80]}' ({name[:200]}) {problem}.")
        if len(name) > MAX_PATH:
            raise refuse(archive, f"the path {name[:80]}… is longer than {MAX_PATH} characters.")
        key = name.rstrip("/").casefold()
        if key in seen and not info.is_dir():
            raise refuse(archive, f"it holds {name} twice (names that differ only in upper/lower case count "
                                  "as the same on Windows and macOS).")
        seen.add(key)
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise refuse(archive, f"it contains a link ({name}), which could point anywhere on your computer.")
        if stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):  # 0: no type recorded (a plain file)
            raise refuse(archive, f"it contains a special file ({name}).")
        if info.flag_bits & 0x1:
            raise refuse(archive, f"it contains an encrypted file ({name}).")
        if info.file_size > limits.member_bytes:
            raise refuse(archive, f"{name} would be {info.file_size / 1e9:.1f} GB, larger than any run file "
                                  f"({limits.member_bytes / 1e9:.1f} GB at most).")
        if info.file_size > limits.ratio_floor and info.file_size > limits.ratio * max(info.compress_size, 1):
            raise refuse(archive, f"{name} expands {info.file_size / max(info.compress_size, 1):.0f} times, "
                                  "which is how archive bombs look.")
        total += info.file_size
        if total > limits.total_bytes:
            raise refuse(archive, f"it would unpack to more than {limits.total_bytes / 1e9:.1f} GB, "
                                  "more than a shared run ever needs.")
        tops.add(parts[0])
    size = max(archive.stat().st_size, 1)
    if total > limits.archive_floor and total > limits.archive_ratio * size:
        raise refuse(archive, f"it would expand from {size / 1e6:.1f} MB to {total / 1e9:.1f} GB "
                              f"({total / size:.0f} times), which is how archive bombs look.")
    if len(tops) != 1:
        raise refuse(archive, "it does not hold exactly one run folder.")
    top = tops.pop()
    if not any(i.filename == f"{top}/{files.CONFIG_FILE}" for i in infos):
        raise refuse(archive, "it holds no run (there is no config.json).")
    return top


def read_manifest(zf: zipfile.ZipFile, top: str, archive: Path) -> dict[str, tuple[int, str]]:
    """{path inside the run: (size, sha256)} from the archive's manifest; refused when missing or odd."""
    try:
        info = zf.getinfo(f"{top}/{MANIFEST}")
    except KeyError:
        raise refuse(archive, f"it has no list of its contents ({MANIFEST}), so its files cannot be checked. "
                              "Ask for a new .zip made with DragonFarm's Share.") from None
    if info.file_size > 4 << 20:
        raise refuse(archive, "its list of contents is implausibly large.")
    try:
        with zf.open(info) as fh:
            listed = json.loads(fh.read(4 << 20).decode("utf-8"))["files"]
        out = {}
        for rel, meta in listed.items():
            size, sha = meta["size"], meta["sha256"]
            if not isinstance(size, int) or size < 0 or not isinstance(sha, str) or not _SHA.match(sha):
                raise ValueError(rel)
            out[rel] = (size, sha)
    except (ValueError, KeyError, TypeError, AttributeError, zipfile.BadZipFile, EOFError) as exc:
        raise refuse(archive, "its list of contents is damaged.") from exc
    return out


def check_against_manifest(archive: Path, infos: list[zipfile.ZipInfo], top: str,
                           manifest: dict[str, tuple[int, str]]) -> None:
    present = {}
    for info in infos:
        rel = info.filename.split("/", 1)[1] if "/" in info.filename else ""
        if info.is_dir() or not rel or rel == MANIFEST:
            continue
        if rel not in manifest:
            raise refuse(archive, f"it contains {rel}, which its list of contents does not name "
                                  "(it was added after packing).")
        present[rel] = info
    for rel, (size, _sha) in manifest.items():
        if not allowed_kind(rel):
            raise refuse(archive, f"it contains {rel}, which is not a kind of file a shared run holds "
                                  "(only settings, examples, .safetensors adapter weights, tokenizer files, "
                                  "logs and a checkpoint's safetensors and JSON files are accepted; "
                                  "pickles and program files never are).")
        if rel not in present:
            raise refuse(archive, f"{rel} is missing or was changed after packing.")
        if present[rel].file_size != size:
            raise refuse(archive, f"{rel} is missing or was changed after packing (its size differs).")
