"""Training on a rented GPU: pack a run not trained yet at home, unpack and train it on
"the other machine", pack it there, import it back home as a finished run. The two
machines are two folders here; the model is the tiny one."""
from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from dfhelpers import example_chats, write_run
from trainer.cli import main
from trainer.run import status as st
from trainer.run.errors import UserError
from trainer.run.files import CHECKPOINT_FILES
from trainer.run.reader import Run
from trainer.run.share import MANIFEST, pack, unpack

from .conftest import fake_run
from .test_share_trust import members_of, rezip

HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"


def hashes(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def untrained(folder: Path, model: str = HUB_ID, name: str = "rent-me") -> Path:
    """What `dragonfarm new` leaves: config.json and the examples, nothing trained."""
    run = write_run(folder / name, model, example_chats(24), example_chats(6, 100), precision="fp32")
    (run / "data" / "import.json").write_text(json.dumps({"source": {"file": str(folder / "my chats.csv")}}))
    return run


def test_an_untrained_run_trains_on_the_other_machine_and_comes_home(tmp_path, tiny_model_dir, capsys):
    import torch

    torch.set_num_threads(2)
    home = tmp_path / "home"
    run = untrained(home)
    mine = hashes(run)
    assert main(["pack", str(run), "-o", str(tmp_path / "to-rent.zip")]) == 0
    out = capsys.readouterr().out
    assert "a run set up but not trained yet" in out and "`dragonfarm train` on the other machine" in out
    assert "includes your 24 training examples and 6 held-out examples" in out
    assert f"will train {HUB_ID}" in out
    with zipfile.ZipFile(tmp_path / "to-rent.zip") as zf:
        manifest = json.loads(zf.read(f"rent-me/{MANIFEST}"))
    assert manifest["version"] == 2 and manifest["kind"] == "untrained" and manifest["with_data"] is True
    assert sorted(manifest["files"]) == ["config.json", "data/eval.jsonl", "data/import.json", "data/train.jsonl"]

    # the rented machine: unpack, train (its copy of the model is at a path of its own), pack
    assert main(["unpack", str(tmp_path / "to-rent.zip"), "--runs-dir", str(tmp_path / "rented")]) == 0
    out = capsys.readouterr().out
    there = tmp_path / "rented" / "rent-me"
    assert "set up but not trained yet. Train it with: dragonfarm train " + str(there) in out
    assert hashes(there)["data/train.jsonl"] == mine["data/train.jsonl"]
    assert main(["train", str(there), "--model", str(tiny_model_dir)]) == 0
    assert f"now uses the model {tiny_model_dir} (it named {HUB_ID})" in capsys.readouterr().out
    assert main(["pack", str(there), "-o", str(tmp_path / "as-there.zip")]) == 0
    out = capsys.readouterr().out
    assert "It holds a trained run" in out and "training data was left out" in out
    assert f"the pack names it only {tiny_model_dir.name}: add --model" in out
    assert main(["unpack", str(tmp_path / "as-there.zip"), "--runs-dir", str(tmp_path / "elsewhere")]) == 0
    assert f"Its model, {tiny_model_dir.name} (a folder or file on the computer that packed it), is not on this " \
           "computer" in capsys.readouterr().out
    # packed again naming the model as home has it (here: the same path)
    assert main(["pack", str(there), "-o", str(tmp_path / "trained.zip"), "--model", str(tiny_model_dir)]) == 0
    capsys.readouterr()

    # home again: File > Import run's unpack; the person's own run is not touched
    assert main(["unpack", str(tmp_path / "trained.zip"), "--runs-dir", str(home)]) == 0
    out = capsys.readouterr().out
    back = home / "rent-me-2"
    assert "A run called rent-me was already there, so this one is called rent-me-2" in out
    assert "It is a trained run" in out
    assert hashes(run) == mine
    came = Run(back)
    s = came.status()
    assert s["state"] == st.DONE and not s["live"] and not s["damaged"] and came.has_adapter()
    assert came.train_records() and came.eval()["after"]["loss"] > 0 and came.samples()
    assert came.verdict() is not None and not (back / "data").exists() and not (back / "checkpoints").exists()

    from trainer.results.generate import generate
    from trainer.run.decoding import Decoding

    assert isinstance(generate(back, "What is 2 plus 3?", decoding=Decoding(max_new_tokens=4)), str)  # Try it


def test_a_local_model_must_be_named_for_the_other_machine(tmp_path, capsys):
    model = tmp_path / "models" / "my-model"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    for local in (str(model), str(tmp_path / "models" / "smol.Q4.gguf")):
        run = untrained(tmp_path / "home", local, name=f"r{len(local)}")
        with pytest.raises(UserError, match="on this computer, which the other machine will not have(?s:.*)"
                                            "--model HUB_ID"):
            pack(run, tmp_path / "x.zip")
        assert not (tmp_path / "x.zip").exists()
    assert main(["pack", str(run), "-o", str(tmp_path / "named.zip"), "--model", HUB_ID]) == 0
    assert f"will train {HUB_ID} (it gets the model from the Hugging Face Hub), as --model said" in \
        capsys.readouterr().out
    with zipfile.ZipFile(tmp_path / "named.zip") as zf:
        assert json.loads(zf.read(f"{run.name}/config.json"))["model"] == HUB_ID

    # a path the other machine lacks: unpack says so, train refuses in words (no traceback)
    elsewhere = tmp_path / "nowhere" / "my-model"
    pack(run, tmp_path / "path.zip", model=str(elsewhere))
    assert main(["unpack", str(tmp_path / "path.zip"), "--runs-dir", str(tmp_path / "rented")]) == 0
    out = capsys.readouterr().out
    there = tmp_path / "rented" / run.name
    assert f"Its model, {elsewhere}, is not on this computer" in out and f"dragonfarm train {there} --model" in out
    assert main(["train", str(there)]) == 1
    words = capsys.readouterr().out
    assert f"The model folder {elsewhere} does not exist" in words and "dragonfarm train RUN --model" in words
    assert Run(there).status()["state"] == st.FAILED


def test_unpack_can_name_the_model_here(tmp_path, capsys):
    run = untrained(tmp_path / "home")
    archive = pack(run, tmp_path / "p.zip")
    assert main(["unpack", str(archive), "--runs-dir", str(tmp_path / "rented"), "--model", "Qwen/Qwen2.5-0.5B-Instruct"]) == 0
    assert "now uses the model Qwen/Qwen2.5-0.5B-Instruct" in capsys.readouterr().out
    assert Run(tmp_path / "rented" / "rent-me").config.model == "Qwen/Qwen2.5-0.5B-Instruct"


def test_a_tampered_untrained_pack_is_refused(tmp_path):
    archive = pack(untrained(tmp_path / "home"), tmp_path / "p.zip")
    members = members_of(archive)
    extra = members + [("rent-me/data/more.jsonl", b'{"messages": []}\n')]
    with pytest.raises(UserError, match="contains data/more.jsonl, which its list of contents does not name"):
        unpack(rezip(tmp_path / "extra.zip", extra), tmp_path / "runs")
    changed = [(i, d.replace(b"plus", b"minus") if i.filename.endswith("train.jsonl") else d) for i, d in members]
    with pytest.raises(UserError, match="data/train.jsonl is missing or was changed after packing"):
        unpack(rezip(tmp_path / "changed.zip", changed), tmp_path / "runs")
    odd = members + [("rent-me/checkpoints/step-3/optimizer.pt", b"pickle"),
                     ("rent-me/checkpoints/step-3/trainer_state.json", b"{}")]
    with pytest.raises(UserError, match="checkpoints/step-3/optimizer.pt, which is not a kind of file"):
        unpack(rezip(tmp_path / "odd.zip", odd, relist=True), tmp_path / "runs")
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def _checkpoint(run: Path, step: int, complete: bool = True) -> None:
    folder = run / "checkpoints" / f"step-{step}"
    folder.mkdir(parents=True)
    for name in CHECKPOINT_FILES[:None if complete else -1]:
        (folder / name).write_text(json.dumps({"step": step, "home": str(Path.home())}))


def test_a_stopped_run_carries_its_newest_checkpoint_with_its_examples(tmp_path, capsys):
    run = untrained(tmp_path / "home")
    (run / "status.json").write_text(json.dumps({"state": "training", "pid": 1, "host": "x", "heartbeat_at": 1}))
    _checkpoint(run, 2)
    _checkpoint(run, 4)
    _checkpoint(run, 6, complete=False)  # a half-written one is never what resume uses
    assert main(["pack", str(run), "-o", str(tmp_path / "p.zip")]) == 0
    assert "checkpoint from step 4" in capsys.readouterr().out
    assert main(["unpack", str(tmp_path / "p.zip"), "--runs-dir", str(tmp_path / "rented")]) == 0
    assert "--resume (it continues from its checkpoint)" in capsys.readouterr().out
    there = tmp_path / "rented" / "rent-me"
    assert sorted(p.name for p in (there / "checkpoints").iterdir()) == ["step-4"]
    # the training state is packed byte for byte (a text replacement could only damage it)
    assert hashes(there)["checkpoints/step-4/training_state.json"] == hashes(run)["checkpoints/step-4/training_state.json"]
    assert Run(there).status()["state"] == st.INTERRUPTED and Run(there).can_resume()

    # a cancelled run with an adapter: the checkpoint travels only with the examples
    done = fake_run(tmp_path / "mine")
    (done / "status.json").write_text('{"state": "cancelled"}')
    _checkpoint(done, 5)
    names = zipfile.ZipFile(pack(done, tmp_path / "no-data.zip")).namelist()
    assert not any("checkpoints/" in n or "/data/" in n for n in names)
    assert "shared-run/checkpoints/step-5/training_state.safetensors" in \
        zipfile.ZipFile(pack(done, tmp_path / "data.zip", with_data=True)).namelist()
    (done / "status.json").write_text('{"state": "done"}')  # a finished run never carries checkpoints
    assert not any("checkpoints/" in n for n in zipfile.ZipFile(pack(done, tmp_path / "d.zip", with_data=True)).namelist())


def test_examples_outside_the_run_cannot_travel(tmp_path):
    run = untrained(tmp_path / "home")
    config = json.loads((run / "config.json").read_text())
    (tmp_path / "elsewhere.jsonl").write_bytes((run / "data" / "train.jsonl").read_bytes())
    (run / "config.json").write_text(json.dumps({**config, "train_file": str(tmp_path / "elsewhere.jsonl")}))
    with pytest.raises(UserError, match="training examples .* are not in its data folder"):
        pack(run, tmp_path / "p.zip")
    (run / "config.json").write_text(json.dumps({**config, "train_file": "data/gone.jsonl"}))
    with pytest.raises(UserError, match=r"training examples \(data/gone.jsonl\) are missing"):
        pack(run, tmp_path / "p.zip")


def test_packing_holds_the_trainer_lock_and_refuses_a_live_run(tmp_path, monkeypatch):
    from trainer.run import share
    from trainer.run.lock import TrainerLock, lock_held

    run = untrained(tmp_path / "home")
    pack(run, tmp_path / "a.zip")
    assert not (run / "trainer.lock").exists()  # a folder without a lock file is left without one
    (run / "trainer.lock").touch()
    seen = []
    real = share._write_pack
    monkeypatch.setattr(share, "_write_pack", lambda *a: seen.append(lock_held(run)) or real(*a))
    pack(run, tmp_path / "b.zip")
    assert seen == [True] and lock_held(run) is False  # held while reading, so no trainer starts half-way
    with TrainerLock(run):
        with pytest.raises(UserError, match="still training"):
            pack(run, tmp_path / "c.zip")


def test_the_checkpoint_files_are_the_ones_resume_reads():
    from trainer.engine.checkpoint import COMPLETE

    assert set(CHECKPOINT_FILES) == set(COMPLETE)


def test_file_import_run_says_what_came_in(tmp_path):
    from dragonfarm_gui.widgets.import_run import imported_words

    def import_run(archive, runs_dir):  # what File > Import run's worker does, then says
        path = unpack(archive, runs_dir)
        return path, imported_words(path)

    run = untrained(tmp_path / "home")
    path, words = import_run(pack(run, tmp_path / "a.zip"), tmp_path / "runs")
    assert path == tmp_path / "runs" / "rent-me"
    assert words == "Imported the run as rent-me. It is set up but not trained yet: select it and press Start."
    gone = str(tmp_path / "gone" / "model")
    _path, words = import_run(pack(run, tmp_path / "b.zip", model=gone), tmp_path / "runs")
    assert words.startswith("Imported the run as rent-me-2.") and f"Its model, {gone}, is not on this computer" in words
    done = fake_run(tmp_path / "mine")
    assert import_run(pack(done, tmp_path / "c.zip"), tmp_path / "runs")[1] == "Imported the run as shared-run."
