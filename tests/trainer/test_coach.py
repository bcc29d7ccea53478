"""The coach's verdicts from synthetic progress files, and the best-adapter keeper with a fake model."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from trainer.engine.best import BestKeeper
from trainer.run.coach import coach, eval_points, should_stop
from trainer.run.config import ConfigError, TrainConfig
from trainer.run.files import ADAPTER_BEST_DIR, ADAPTER_DIR, EVAL_FILE, PROGRESS_FILE
from trainer.run.reader import Run, verdict


def records(train: list[float], evals: dict[int, float]) -> list[dict]:
    out = [{"step": i + 1, "loss": v} for i, v in enumerate(train)]
    out += [{"step": s, "eval_loss": v} for s, v in evals.items()]
    return sorted(out, key=lambda r: r["step"])


def write_progress(run_dir: Path, rows: list[dict]) -> None:
    # json.dumps writes NaN as NaN, as the trainer's writer does
    (run_dir / PROGRESS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_still_improving_at_the_end():
    rows = records([2.0, 1.8, 1.5, 1.2], {0: 2.0, 2: 1.6, 4: 1.3})
    said = coach({"before": {"loss": 2.0}, "after": {"loss": 1.3}}, rows)
    assert said["verdict"] == "learned"
    assert "still improving" in said["text"] and said["rising"] == 0 and said["best_step"] == 4


def test_still_improving_while_training():
    rows = records([2.0, 1.8], {0: 2.0, 2: 1.6})
    said = coach({"before": {"loss": 2.0}, "after": None}, rows)
    assert said["verdict"] == "improving" and said["live"] and "still improving" in said["text"]


def test_memorising_names_the_best_step_that_try_it_uses():
    rows = records([2.0] * 10, {0: 2.0, 2: 1.5, 4: 1.2, 6: 1.3, 8: 1.5, 10: 1.6})
    ev = {"before": {"loss": 2.0}, "after": {"loss": 1.6}, "best": {"step": 4, "loss": 1.2, "adapter": ADAPTER_BEST_DIR}}
    said = coach(ev, rows)
    assert said["verdict"] == "overfitting" and said["title"] == "It started to memorise"
    assert "rose for the last 3 checks" in said["text"] and "memorise your examples" in said["text"]
    assert "best point was step 4, which Try it and export use" in said["text"]
    # without a kept best adapter the words do not promise one
    ev.pop("best")
    assert "Try it" not in coach(ev, rows)["text"]


def test_one_rise_or_noise_is_not_memorising():
    rows = records([2.0] * 6, {0: 2.0, 2: 1.5, 4: 1.2, 6: 1.25})
    assert coach({"before": {"loss": 2.0}, "after": {"loss": 1.25}}, rows)["verdict"] == "learned"
    rows = records([2.0] * 6, {0: 2.0, 2: 1.5, 4: 1.200, 6: 1.201, 8: 1.202})   # within 1%: noise
    assert coach({"before": {"loss": 2.0}, "after": {"loss": 1.202}}, rows)["verdict"] == "learned"


def test_loss_did_not_move():
    rows = records([2.0, 2.0, 1.99, 2.0], {0: 2.0, 2: 1.99, 4: 1.99})
    said = coach({"before": {"loss": 2.0}, "after": {"loss": 1.99}}, rows)
    assert said["verdict"] == "little change"
    assert "did not move" in said["text"] and "more epochs or a higher learning rate" in said["next"]


def test_nan_says_lower_the_learning_rate():
    rows = records([2.0, 1.5, float("nan"), float("nan")], {0: 2.0, 2: 1.6})
    said = coach({"before": {"loss": 2.0}, "after": None}, rows)
    assert said["verdict"] == "nan" and "step 3" in said["text"]
    assert "Lower the learning rate" in said["next"]
    # an infinite held-out loss counts too
    assert coach({"before": {"loss": 2.0}, "after": {"loss": math.inf}}, [])["verdict"] == "nan"


def test_worse_and_nothing_to_say():
    assert coach({"before": {"loss": 1.0}, "after": {"loss": 1.2}}, [])["verdict"] == "worse"
    assert coach({"before": {"loss": 1.0}, "after": None}, []) is None
    assert coach({}, records([2.0, 1.0], {})) is None
    assert coach("damaged", None) is None


def test_reader_verdict_and_stopped_early_words():
    rows = records([2.0] * 8, {0: 2.0, 2: 1.2, 4: 1.4, 6: 1.5})
    ev = {"before": {"loss": 2.0}, "after": {"loss": 1.5}, "stopped_early_at": 6}
    said = verdict(ev, rows)
    assert said["verdict"] == "overfitting" and "stopped early at step 6" in said["text"]


def test_eval_points_and_early_stop_rule():
    rows = [{"step": 0, "eval_loss": 3.0}, {"step": 2, "eval_loss": 2.0}, {"step": 2, "eval_loss": 1.9},
            {"step": 4, "eval_loss": 2.1}, {"step": 5, "loss": 1.0}]
    assert eval_points(rows) == [(2, 1.9), (4, 2.1)]
    pts = [(2, 1.0), (4, 1.1), (6, 1.2)]
    assert should_stop(pts, 2) and not should_stop(pts, 3) and not should_stop(pts, 0)
    assert not should_stop([(2, 1.2), (4, 1.1), (6, 1.0)], 2)


def test_early_stop_checks_setting():
    assert TrainConfig().early_stop_checks == 0
    assert TrainConfig(early_stop_checks=3).problems() == []
    with pytest.raises(ConfigError, match="early_stop_checks"):
        TrainConfig.from_dict({"early_stop_checks": -1})


class FakeModel:
    """save_pretrained writes a marker of the step the weights came from."""
    def __init__(self):
        self.step = 0

    def save_pretrained(self, folder: str) -> None:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / "adapter_config.json").write_text(json.dumps({"step": self.step}))


class FakeTokenizer:
    def save_pretrained(self, folder: str) -> None:
        (Path(folder) / "tokenizer.json").write_text("{}")


class FakeStatus:
    def __init__(self):
        self.data = {}

    def update(self, **fields):
        self.data.update(fields)


def run_checks(tmp_path: Path, losses: dict[int, float], checks: int, final_step: int | None = None):
    TrainConfig(model="m").save(tmp_path)
    (tmp_path / EVAL_FILE).write_text(json.dumps({"before": {"loss": 3.0}, "after": None}))
    rows = [{"step": 0, "eval_loss": 3.0}]
    model, status = FakeModel(), FakeStatus()
    keeper = BestKeeper(tmp_path, checks, status)
    stopped = None
    for step, loss in losses.items():
        model.step = step
        rows.append({"step": step, "eval_loss": loss})
        write_progress(tmp_path, rows)
        if keeper.after_eval(step, loss, model, FakeTokenizer(), final=step == final_step):
            stopped = step
            break
    return keeper, status, stopped


def test_best_adapter_kept_and_early_stop(tmp_path):
    _, status, stopped = run_checks(tmp_path, {2: 2.0, 4: 1.5, 6: 1.7, 8: 1.8, 10: 1.9}, checks=2)
    assert stopped == 8
    best = tmp_path / ADAPTER_BEST_DIR
    assert json.loads((best / "adapter_config.json").read_text())["step"] == 4
    assert (best / "tokenizer.json").is_file() and not list(tmp_path.glob("*.partial")) and not list(tmp_path.glob("*.old"))
    ev = json.loads((tmp_path / EVAL_FILE).read_text())
    assert ev["best"] == {"step": 4, "loss": 1.5, "adapter": ADAPTER_BEST_DIR, "checks": 4}
    assert ev["stopped_early_at"] == 8 and ev["before"]["loss"] == 3.0
    assert status.data["best_step"] == 4 and status.data["stopped_early_at"] == 8
    run = Run(tmp_path)
    (tmp_path / ADAPTER_DIR).mkdir()
    (tmp_path / ADAPTER_DIR / "adapter_config.json").write_text("{}")
    assert run.adapter_for() == best and run.adapter_for(last=True) == tmp_path / ADAPTER_DIR


def test_no_early_stop_when_off(tmp_path):
    _, _, stopped = run_checks(tmp_path, {2: 2.0, 4: 1.5, 6: 1.7, 8: 1.8, 10: 1.9}, checks=0, final_step=10)
    assert stopped is None
    assert json.loads((tmp_path / EVAL_FILE).read_text())["best"]["step"] == 4
    assert (tmp_path / ADAPTER_BEST_DIR).is_dir()


def test_last_step_best_means_no_separate_best_adapter(tmp_path):
    _, status, _ = run_checks(tmp_path, {2: 2.0, 4: 1.5, 6: 1.2}, checks=2, final_step=6)
    assert not (tmp_path / ADAPTER_BEST_DIR).exists()   # removed: adapter/ is the best one
    assert json.loads((tmp_path / EVAL_FILE).read_text())["best"]["adapter"] == ADAPTER_DIR
    assert status.data["best_step"] == 6
    assert Run(tmp_path).adapter_for() == tmp_path / ADAPTER_DIR


def test_pack_carries_the_best_adapter_unless_last(tmp_path):
    import shutil
    import zipfile

    from trainer.run.share import pack, unpack

    run = tmp_path / "r"
    run_checks(run, {2: 2.0, 4: 1.5, 6: 1.7, 8: 1.8}, checks=0, final_step=8)
    shutil.copytree(run / ADAPTER_BEST_DIR, run / ADAPTER_DIR)   # stands in for the last step's adapter
    ev = json.loads((run / EVAL_FILE).read_text())
    ev["after"] = {"loss": 1.8}
    (run / EVAL_FILE).write_text(json.dumps(ev))
    names = zipfile.ZipFile(pack(run, tmp_path / "all.zip")).namelist()
    assert "r/adapter-best/adapter_config.json" in names and "r/adapter/adapter_config.json" in names
    only_last = pack(run, tmp_path / "last.zip", last=True)
    assert not any("adapter-best" in n for n in zipfile.ZipFile(only_last).namelist())
    # the unpacked run does not promise a best adapter it lacks
    assert "which Try it and export use" in Run(run).verdict()["text"]
    copy = Run(unpack(only_last, tmp_path / "runs"))
    assert not copy.has_best_adapter() and copy.adapter_for() == copy.adapter_dir
    assert copy.verdict()["verdict"] == "overfitting" and "Try it" not in copy.verdict()["text"]


def test_a_run_that_held_nothing_out_points_to_the_sample_replies():
    nothing = {"loss": None, "perplexity": None, "examples": 0}
    rows = records([4.1, 2.0, 0.9], {})
    said = coach({"before": nothing, "after": nothing}, rows)
    assert said["verdict"] == "unchecked" and said["title"] == "Not checked" and not said["live"]
    assert said["text"] == ("No examples were held out, so no held-out loss can tell whether it learned or only "
                            "memorised. Its training loss went from 4.100 to 0.900.")
    assert said["next"].startswith("Read the sample replies. To see how it does on new questions, Duplicate the run")
    said = coach({"before": nothing, "after": nothing}, rows, own_questions=True)
    assert said["next"].startswith("Read the sample replies: your own test questions show")
    assert coach({"before": nothing, "after": None}, rows) is None  # still training: nothing to say yet
    assert coach({"before": nothing}, []) is None


def test_a_runs_verdict_knows_whether_it_has_your_own_test_questions(tmp_path):
    nothing = {"loss": None, "perplexity": None, "examples": 0}
    TrainConfig().save(tmp_path)
    (tmp_path / EVAL_FILE).write_text(json.dumps({"before": nothing, "after": nothing}))
    write_progress(tmp_path, records([3.0, 1.0], {}))
    samples = [{"messages": [], "prompt": "Seen?", "reference": "Yes."}]
    (tmp_path / "samples.json").write_text(json.dumps({"samples": samples}))
    assert "Duplicate the run" in Run(tmp_path).verdict()["next"]
    samples.insert(0, {"messages": [], "prompt": "New?", "reference": None, "yours": True})
    (tmp_path / "samples.json").write_text(json.dumps({"samples": samples}))
    assert Run(tmp_path).verdict()["next"].startswith("Read the sample replies: your own test questions show")
