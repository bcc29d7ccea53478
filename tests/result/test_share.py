"""dragonfarm pack / unpack: identical round trip, and every unsafe archive refused in words."""
from __future__ import annotations

import hashlib
import json
import stat
import zipfile
from pathlib import Path

import pytest

from trainer.cli import main
from trainer.run.errors import UserError
from trainer.run.share import MANIFEST, Limits, pack, unpack

from .conftest import fake_run


def hashes(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def run(tmp_path) -> Path:
    return fake_run(tmp_path / "mine")


def test_pack_then_unpack_gives_an_identical_run(run, tmp_path):
    archive = pack(run, tmp_path / "out.zip")
    names = zipfile.ZipFile(archive).namelist()
    assert "shared-run/config.json" in names and f"shared-run/{MANIFEST}" in names
    assert not any("/checkpoints/" in n or "/data/" in n for n in names)
    target = unpack(archive, tmp_path / "runs")
    assert target == tmp_path / "runs" / "shared-run"
    expected = {k: v for k, v in hashes(run).items() if not k.startswith(("checkpoints/", "data/", "status.json"))}
    got = hashes(target)
    assert got.pop("status.json") and got == expected  # status.json loses only the pid and host name
    status = json.loads((target / "status.json").read_text())
    assert "pid" not in status and "host" not in status
    assert status["state"] == json.loads((run / "status.json").read_text())["state"]
    assert len(expected) == 7  # (status apart) config, progress, eval, samples, 2 adapter files, log
    assert [p.name for p in (tmp_path / "runs").iterdir()] == ["shared-run"]  # no staging left behind


def test_a_run_coming_in_is_never_listed_half_made_or_hidden(run, tmp_path):
    from trainer.run.reader import list_runs

    runs = tmp_path / "runs"
    seen, progress = [], []

    def look(done: int, total: int) -> None:
        progress.append((done, total))
        seen.append([r.name for r in list_runs(runs)])  # what the app's run list shows meanwhile
    archive = pack(run, tmp_path / "out.zip")
    unpack(archive, runs, progress=look)
    assert seen and all(names == [] for names in seen)  # the .unpacking-… folder already holds config.json
    assert progress[-1][0] == progress[-1][1] and [d for d, _ in progress] == sorted(d for d, _ in progress)
    assert [r.name for r in list_runs(runs)] == ["shared-run"]
    with pytest.raises(UserError, match="'.quiet' cannot be a run name: it starts with a dot"):
        unpack(archive, runs, name=".quiet")
    # An archive whose folder starts with a dot comes in under a name the list shows.
    hidden = tmp_path / "hidden.zip"
    with zipfile.ZipFile(archive) as src, zipfile.ZipFile(hidden, "w") as out:
        for info in src.infolist():
            out.writestr("." + info.filename, src.read(info))
    assert unpack(hidden, runs).name == "shared-run-2"


def test_with_data_includes_the_examples(run, tmp_path):
    target = unpack(pack(run, tmp_path / "d.zip", with_data=True), tmp_path / "runs")
    assert {k: v for k, v in hashes(target).items() if k.startswith("data/")} == \
        {k: v for k, v in hashes(run).items() if k.startswith("data/")}


def test_never_overwrites_an_existing_run(run, tmp_path):
    archive = pack(run, tmp_path / "out.zip")
    runs = tmp_path / "runs"
    first = unpack(archive, runs)
    (first / "notes.txt").write_text("mine")
    second = unpack(archive, runs)
    assert second.name == "shared-run-2" and (first / "notes.txt").read_text() == "mine"
    with pytest.raises(UserError, match="(?s)A run called shared-run already exists.*never overwrites"):
        unpack(archive, runs, name="shared-run")


def test_cli_pack_and_unpack(run, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["pack", str(run)]) == 0
    assert (tmp_path / "shared-run.zip").is_file()
    assert "training data was left out" in capsys.readouterr().out
    assert main(["pack", str(run)]) == 0  # never overwrites: a new file name
    assert (tmp_path / "shared-run-2.zip").is_file()
    assert main(["unpack", "shared-run.zip", "--runs-dir", str(tmp_path / "runs")]) == 0
    assert "Imported the run into" in capsys.readouterr().out


def _zip(path: Path, members: list[tuple[zipfile.ZipInfo | str, bytes]], manifest: bool = False) -> Path:
    """A hand-made archive; manifest=True adds a true list of its contents, as pack writes it."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        if manifest:
            listed = {}
            for info, data in members:
                name = info.filename if isinstance(info, zipfile.ZipInfo) else info
                listed[name.split("/", 1)[1]] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
            top = (members[0][0] if isinstance(members[0][0], str) else members[0][0].filename).split("/")[0]
            zf.writestr(f"{top}/{MANIFEST}", json.dumps({"files": listed}))
        for info, data in members:
            zf.writestr(info, data)
    return path


CONFIG = ("evil/config.json", b"{}")


@pytest.mark.parametrize("name, words", [
    ("evil/../../escaped.txt", "climbs out of its folder"),
    ("../escaped.txt", "climbs out of its folder"),
    ("/etc/evil.txt", "absolute path"),
    ("C:/Windows/evil.txt", "absolute path"),
    ("evil\\..\\..\\evil.txt", "backslash"),
])
def test_unsafe_paths_are_refused(tmp_path, name, words):
    archive = _zip(tmp_path / "bad.zip", [CONFIG, (name, b"x")])
    with pytest.raises(UserError, match=words) as err:
        unpack(archive, tmp_path / "runs")
    assert str(err.value).startswith("bad.zip cannot be imported")
    assert not (tmp_path / "escaped.txt").exists()
    assert not any((tmp_path / "runs").iterdir()) if (tmp_path / "runs").exists() else True


def test_links_are_refused(tmp_path):
    link = zipfile.ZipInfo("evil/adapter/adapter_model.safetensors")
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    archive = _zip(tmp_path / "link.zip", [CONFIG, (link, b"/etc/passwd")])
    with pytest.raises(UserError, match="contains a link"):
        unpack(archive, tmp_path / "runs")


def test_size_bomb_is_refused(tmp_path):
    archive = _zip(tmp_path / "bomb.zip", [CONFIG, ("evil/logs/trainer.log", b"\0" * (20 << 20))])
    with pytest.raises(UserError, match="expands 1\\d\\d\\d times, which is how archive bombs look"):
        unpack(archive, tmp_path / "runs")


def test_oversized_member_and_archive_are_refused(tmp_path):
    archive = _zip(tmp_path / "big.zip", [CONFIG, ("evil/adapter/a.bin", bytes(range(256)) * 4096)])
    with pytest.raises(UserError, match="larger than any run file"):
        unpack(archive, tmp_path / "runs", limits=Limits(member_bytes=1 << 19))
    with pytest.raises(UserError, match="would unpack to more than"):
        unpack(archive, tmp_path / "runs", limits=Limits(total_bytes=1 << 19))


def test_declared_sizes_are_not_trusted(tmp_path):
    """A member whose header claims 10 bytes but holds a megabyte: the bytes read are capped."""
    archive = _zip(tmp_path / "liar.zip", [CONFIG, ("evil/logs/trainer.log", bytes(range(256)) * 4096)], manifest=True)
    data = bytearray(archive.read_bytes())
    with zipfile.ZipFile(archive) as zf:
        local = zf.getinfo("evil/logs/trainer.log").header_offset
    central = data.rindex(b"evil/logs/trainer.log") - 46  # its central directory entry (46 fixed bytes)
    for offset in (local + 22, central + 24):  # uncompressed size fields
        assert int.from_bytes(data[offset:offset + 4], "little") == 256 * 4096
        data[offset:offset + 4] = (10).to_bytes(4, "little")
    archive.write_bytes(bytes(data))
    assert zipfile.ZipFile(archive).getinfo("evil/logs/trainer.log").file_size == 10
    with pytest.raises(UserError, match="cannot be imported: (it is damaged|.*more data than it declares|"
                                        ".*changed after packing)"):
        unpack(archive, tmp_path / "runs")
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_changed_file_and_not_a_run_are_refused(run, tmp_path):
    archive = pack(run, tmp_path / "out.zip")
    with zipfile.ZipFile(archive) as zf:
        members = [(i, zf.read(i)) for i in zf.infolist()]
    members = [(i, b"tampered" if i.filename.endswith("eval.json") else d) for i, d in members]
    with pytest.raises(UserError, match="eval.json is missing or was changed after packing"):
        unpack(_zip(tmp_path / "changed.zip", members), tmp_path / "runs")
    with pytest.raises(UserError, match="there is no config.json"):
        unpack(_zip(tmp_path / "norun.zip", [("x/readme.txt", b"hi")], manifest=True), tmp_path / "runs")
    (tmp_path / "junk.zip").write_bytes(b"not a zip")
    with pytest.raises(UserError, match="not a readable .zip file"):
        unpack(tmp_path / "junk.zip", tmp_path / "runs")


def test_a_run_without_adapter_packs_its_settings_and_examples(tmp_path, run):
    import shutil

    shutil.rmtree(run / "adapter")
    names = zipfile.ZipFile(pack(run, tmp_path / "x.zip")).namelist()  # to be trained on another machine
    assert "shared-run/data/train.jsonl" in names and not any("/adapter/" in n for n in names)
