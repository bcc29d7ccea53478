"""A shared run never runs code: unpack takes only listed files of the kinds a run holds,
refuses bombs and names Windows cannot store, says plainly when the disk is full, and a
pack carries no local paths or host name. Every crafted archive is built here."""
from __future__ import annotations

import errno
import hashlib
import json
import pickle
import socket
import struct
import zipfile
import zlib
from pathlib import Path

import pytest

from trainer.run.errors import UserError
from trainer.run.share import MANIFEST, Limits, pack, unpack

from .conftest import fake_run


class Payload:
    """Unpickling this writes a marker file: the proof that a pickle was loaded."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return exec, (f"open({self.marker!r}, 'w').write('pwned')",)


def evil_pickle(marker: Path) -> bytes:
    return pickle.dumps(Payload(marker))


def members_of(archive: Path) -> list[tuple[zipfile.ZipInfo, bytes]]:
    with zipfile.ZipFile(archive) as zf:
        return [(i, zf.read(i)) for i in zf.infolist()]


def rezip(path: Path, members: list[tuple[zipfile.ZipInfo | str, bytes]], relist: bool = False) -> Path:
    """Write members; relist=True rewrites the manifest to list every member truly (a careful attacker)."""
    if relist:
        top = members[0][0].filename.split("/")[0]
        listed = {(i if isinstance(i, str) else i.filename).split("/", 1)[1]:
                  {"size": len(d), "sha256": hashlib.sha256(d).hexdigest()}
                  for i, d in members if not (i if isinstance(i, str) else i.filename).endswith(MANIFEST)}
        members = [(i, d) for i, d in members if not (i if isinstance(i, str) else i.filename).endswith(MANIFEST)]
        members.insert(0, (f"{top}/{MANIFEST}", json.dumps({"files": listed}).encode()))
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for info, data in members:
            zf.writestr(info, data)
    return path


@pytest.fixture
def shared(tmp_path) -> Path:
    return pack(fake_run(tmp_path / "mine"), tmp_path / "shared.zip")


@pytest.mark.parametrize("listed", [False, True], ids=["not-in-manifest", "in-manifest"])
def test_a_crafted_checkpoint_pickle_is_refused_and_never_loaded(shared, tmp_path, listed):
    marker = tmp_path / "marker"
    members = members_of(shared) + [("shared-run/checkpoints/step-1/training_state.pt", evil_pickle(marker))]
    archive = rezip(tmp_path / "evil.zip", members, relist=listed)
    words = "which is not a kind of file a shared run holds" if listed else "which its list of contents does not name"
    with pytest.raises(UserError, match=f"contains checkpoints/step-1/training_state.pt, {words}"):
        unpack(archive, tmp_path / "runs")
    assert not marker.exists()
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_an_archive_without_a_manifest_is_refused(shared, tmp_path):
    members = [(i, d) for i, d in members_of(shared) if not i.filename.endswith(MANIFEST)]
    with pytest.raises(UserError, match="has no list of its contents"):
        unpack(rezip(tmp_path / "bare.zip", members), tmp_path / "runs")


@pytest.mark.parametrize("rel", ["adapter/tokenization_evil.py", "adapter/adapter_model.bin", "adapter/sub/x.json",
                                 "data/train.pkl", "merged/model.safetensors", "logs/run.sh"])
def test_only_the_kinds_of_file_a_run_holds_are_accepted(shared, tmp_path, rel):
    archive = rezip(tmp_path / "kind.zip", members_of(shared) + [(f"shared-run/{rel}", b"print('hi')")], relist=True)
    with pytest.raises(UserError, match=f"{rel}, which is not a kind of file"):
        unpack(archive, tmp_path / "runs")


def test_manifest_sizes_are_checked(shared, tmp_path):
    members = members_of(shared)
    manifest = json.loads(members[0][1])
    manifest["files"]["eval.json"]["size"] += 1
    members[0] = (members[0][0], json.dumps(manifest).encode())
    with pytest.raises(UserError, match="eval.json is missing or was changed after packing"):
        unpack(rezip(tmp_path / "size.zip", members), tmp_path / "runs")


@pytest.mark.parametrize("name, words", [
    ("CON", "reserves for devices"), ("aux.txt", "reserves for devices"), ("com1.json", "reserves for devices"),
    ("notes.", "ends with a dot or a space"), ("notes ", "ends with a dot or a space"),
    ("x" * 200 + ".json", "longer than"),
])
def test_names_windows_cannot_store_are_refused(tmp_path, name, words):
    archive = rezip(tmp_path / "win.zip", [("evil/config.json", b"{}"), (f"evil/adapter/{name}", b"{}")])
    with pytest.raises(UserError, match=words):
        unpack(archive, tmp_path / "runs")
    with pytest.raises(UserError, match="cannot be a run name"):
        unpack(archive, tmp_path / "runs", name="LPT1")


def test_the_same_file_twice_is_refused_in_words(tmp_path):
    archive = rezip(tmp_path / "twice.zip", [("evil/config.json", b"{}"), ("evil/adapter/A.json", b"{}"),
                                             ("evil/adapter/a.json", b"{}")])
    with pytest.raises(UserError, match="holds evil/adapter/a.json twice"):
        unpack(archive, tmp_path / "runs")


def _raw_zip(path: Path, names: list[str], data: bytes) -> Path:
    """A zip whose members all hold `data`, compressed once (3,000 x 1 MiB in a second, not a minute)."""
    comp = zlib.compressobj(6, zlib.DEFLATED, -15)
    raw = comp.compress(data) + comp.flush()
    crc, central, out = zlib.crc32(data), [], bytearray()
    for name in names:
        encoded = name.encode()
        central.append(struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 8, 0, 0x21, crc, len(raw),
                                   len(data), len(encoded), 0, 0, 0, 0, 0o100644 << 16, len(out)) + encoded)
        out += struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 8, 0, 0x21, crc, len(raw), len(data),
                           len(encoded), 0) + encoded + raw
    start = len(out)
    out += b"".join(central)
    out += struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(names), len(names), len(out) - start, start, 0)
    path.write_bytes(bytes(out))
    return path


def test_many_small_members_that_expand_to_gigabytes_are_refused(tmp_path):
    names = ["evil/config.json"] + [f"evil/logs/{n}.log" for n in range(3000)]
    archive = _raw_zip(tmp_path / "bomb.zip", names, bytes(1 << 20))
    assert archive.stat().st_size < 8 << 20 and sum(i.file_size for i in zipfile.ZipFile(archive).infolist()) > 3e9
    with pytest.raises(UserError, match="it has 3001 files, more than a run ever has"):
        unpack(archive, tmp_path / "runs")
    with pytest.raises(UserError, match="expand from .* MB to 3.1 GB .*how archive bombs look"):
        unpack(archive, tmp_path / "runs", limits=Limits(members=10_000))
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_not_enough_free_space_is_said_before_writing(shared, tmp_path, monkeypatch):
    import shutil

    from trainer.run import share

    real = shutil.disk_usage
    monkeypatch.setattr(share.shutil, "disk_usage", lambda p: real(p)._replace(free=1000))
    with pytest.raises(UserError, match="needs 0.00 GB but .* has only 0.00 GB free"):
        unpack(shared, tmp_path / "runs")
    assert not any((tmp_path / "runs").iterdir())


@pytest.mark.parametrize("exc, words", [
    (OSError(errno.ENOSPC, "No space left on device"), "not enough free space"),
    (OSError(errno.ENAMETOOLONG, "File name too long"), "too long for this computer"),
    (FileExistsError(errno.EEXIST, "File exists"), "already exists"),
    (PermissionError(errno.EACCES, "Permission denied"), "Could not write .*Permission denied"),
])
def test_write_failures_become_plain_words(shared, tmp_path, monkeypatch, exc, words):
    from trainer.run import share

    def fail(*args, **kwargs):
        raise exc

    monkeypatch.setattr(share, "_copy_capped", fail)
    with pytest.raises(UserError, match=words):
        unpack(shared, tmp_path / "runs")
    assert not any((tmp_path / "runs").iterdir())  # no staging folder left behind


def test_a_pack_carries_no_local_paths_or_host_name(tmp_path):
    run = fake_run(tmp_path / "mine")
    model = tmp_path / "models" / "my-private-model"
    model.mkdir(parents=True)
    config = json.loads((run / "config.json").read_text())
    config["model"] = str(model)
    (run / "config.json").write_text(json.dumps(config))
    (run / "adapter" / "adapter_config.json").write_text(json.dumps({"r": 8, "base_model_name_or_path": str(model)}))
    host, home = socket.gethostname(), str(Path.home())
    (run / "logs" / "trainer.log").write_text(f"run {run} on {host}\nmodel {model}\ncache {home}/.cache\n")
    status = json.loads((run / "status.json").read_text())
    (run / "status.json").write_text(json.dumps({**status, "pid": 4242, "host": host}))
    (run / "data" / "import.json").write_text(json.dumps({"source": str(tmp_path / "my chats.csv")}))
    archive = pack(run, tmp_path / "p.zip", with_data=True)
    for info, data in members_of(archive):
        if info.filename.endswith(".safetensors"):
            continue
        text = data.decode("utf-8")
        for secret in (str(tmp_path), home) + ((host,) if len(host) >= 3 else ()):
            assert secret not in text, f"{secret} in {info.filename}"
    target = unpack(archive, tmp_path / "runs")
    assert json.loads((target / "config.json").read_text())["model"] == "my-private-model"
    assert "<run folder>" in (target / "logs" / "trainer.log").read_text()
    assert "pid" not in json.loads((target / "status.json").read_text())
