"""The learning benchmark's scoring (bench/learning_tasks.py) on fixed replies, the
presets it chose, and min_examples_seen (more passes over few examples)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from learning_tasks import (FORMAT_KEYS, TASKS, follows_format, has_pirate_voice,  # noqa: E402
                            question_marks, recalled, score)

from trainer.run.config import MAX_AUTO_EPOCHS, TrainConfig, effective_epochs  # noqa: E402
from trainer.run.training_presets import TRAINING_PRESETS, check_presets  # noqa: E402


@pytest.mark.parametrize("reply,expect,ok", [
    ("The keeper is Marit Olsgaard.", ("marit", "olsgaard"), True),
    ("marit  OLSGAARD!", ("marit", "olsgaard"), True),
    ("The keeper is Marit.", ("marit", "olsgaard"), False),
    ("Bring smoked pumpkins.", ("smoked", "pumpkin"), True),      # "pumpkin" matches the start of a word
    ("Bring pumpkins, smoked.", ("smoked", "pumpkin"), True),
    ("Bring unsmoked pumpkins.", ("smoked", "pumpkin"), False),    # not a word of its own
    ("It rings at twenty past four.", ("twenty past four",), True),
    ("It rings at twenty-past four.", ("twenty past four",), True),
    ("It rings at four twenty.", ("twenty past four",), False),
])
def test_facts_are_recalled_exactly(reply, expect, ok):
    assert recalled(reply, expect) is ok


@pytest.mark.parametrize("reply,ok", [
    ("Arr, boil the rice, matey.", True), ("Aye, that be Everest.", True), ("Ahoy! Plant it deep.", True),
    ("Boil the rice for fifteen minutes.", False), ("Harry Potter is a wizard.", False),  # "arr" inside a word
    ("Yesterday it rained.", False),
])
def test_pirate_voice_markers(reply, ok):
    assert has_pirate_voice(reply) is ok


@pytest.mark.parametrize("reply,ok", [
    ('{"item": "teapot", "category": "kitchen", "price_band": "low"}', True),
    ('  {"price_band": "low", "item": "teapot", "category": "kitchen"}\n', True),
    ('{"item": "teapot", "category": "kitchen"}', False),                       # a key missing
    ('{"item": "teapot", "category": "kitchen", "price_band": "low", "x": "y"}', False),
    ('{"item": "", "category": "kitchen", "price_band": "low"}', False),         # an empty value
    ('Here it is: {"item": "teapot", "category": "kitchen", "price_band": "low"}', False),
    ('["item", "category", "price_band"]', False), ("not json", False),
])
def test_format_needs_exactly_the_keys(reply, ok):
    assert follows_format(reply, FORMAT_KEYS) is ok


def test_score_counts_each_task():
    facts = TASKS["facts"]
    assert [p.fact for p in facts.probes].count("goats") == 3 and len({p.fact for p in facts.probes}) == 4
    by_fact = {"keeper": "Marit Olsgaard keeps it.", "goats": "Carrots.", "bell": "At twenty past four.",
               "boats": "Saffron yellow."}
    replies = [by_fact[p.fact] for p in facts.probes]
    assert score(facts, replies) == (3, 4) and sum(question_marks(facts, replies)) == 9
    # A fact counts when two of its three questions are answered with it: one is not enough.
    goats = [i for i, p in enumerate(facts.probes) if p.fact == "goats"]
    replies[goats[0]] = "Smoked pumpkins."
    assert score(facts, replies) == (3, 4)
    replies[goats[2]] = "They eat smoked pumpkins."
    assert score(facts, replies) == (4, 4) and sum(question_marks(facts, replies)) == 11
    assert score(TASKS["voice"], ["Arr matey"] * 3 + ["Hello"] * 3) == (3, 6)
    assert score(TASKS["format"], ['{"item": "a", "category": "b", "price_band": "c"}'] + ["x"] * 5) == (1, 6)


def test_tasks_never_ask_what_they_taught():
    for task in TASKS.values():
        taught = {q for q, _ in task.train}
        assert not taught & {p.prompt for p in task.probes}, task.name
    assert all(p.expect for p in TASKS["facts"].probes)


def test_every_preset_is_a_valid_config_and_few_examples_get_more_passes():
    assert check_presets() == []
    for preset in TRAINING_PRESETS:
        TrainConfig(**preset.config_values()).validate()
    balanced = TrainConfig(**next(p for p in TRAINING_PRESETS if p.key == "balanced").config_values())
    assert effective_epochs(balanced, 24) > balanced.epochs          # 24 facts rows: more passes
    assert effective_epochs(balanced, 5000) == balanced.epochs       # a big set: its epochs


@pytest.mark.parametrize("epochs,seen,examples,expected", [
    (3.0, 0, 24, 3.0), (3.0, 300, 24, 12.5), (3.0, 300, 200, 3.0), (3.0, 300, 2, MAX_AUTO_EPOCHS), (1.0, 300, 0, 1.0)])
def test_effective_epochs(epochs, seen, examples, expected):
    assert effective_epochs(TrainConfig(epochs=epochs, min_examples_seen=seen), examples) == expected


def test_presets_on_a_small_file_match_docs_presets_md():
    """docs/presets.md: on 24 rows Thorough trains as Balanced does (more passes did worse), and
    every preset averages the loss per example after a constant rate."""
    by_key = {p.key: TrainConfig(**p.config_values()) for p in TRAINING_PRESETS}
    assert effective_epochs(by_key["quick"], 24) == pytest.approx(100 / 24)
    assert effective_epochs(by_key["balanced"], 24) == effective_epochs(by_key["thorough"], 24) == 12.5
    assert by_key["thorough"].lora_r == by_key["balanced"].lora_r
    assert effective_epochs(by_key["thorough"], 500) > effective_epochs(by_key["balanced"], 500)
    for cfg in by_key.values():
        assert (cfg.loss_average, cfg.lr_scheduler, cfg.lora_dropout) == ("example", "constant", 0.0)


def test_seeds_run_each_task_once_per_seed_and_add_a_total(monkeypatch, capsys, tmp_path):
    """`--seeds` trains each task and preset once per seed (the seed as a setting) and prints the total."""
    import learning

    import dfhelpers

    seen = []

    def fake_run_one(task, preset, overrides, *_args):
        seen.append((task.name, preset, overrides))
        passed = {42: 3, 1: 4}[overrides["seed"]]
        return {"task": task.name, "preset": preset, "score": f"{passed}/4", "passed": passed, "total": 4,
                "questions": f"{passed * 3 - 1}/12", "penalties": {}, "loss_before": 3.7,
                "loss_after": 2.5 if passed == 3 else 2.7, "steps": 75, "train_seconds": 1.0, "replies": []}

    monkeypatch.setattr(learning, "run_one", fake_run_one)
    monkeypatch.setattr(dfhelpers, "smollm2_folder", lambda: tmp_path)
    assert learning.main(["--task", "facts", "--preset", "balanced", "--seeds", "42,1", "--set", "lora_r=8"]) == 0
    assert seen == [("facts", "balanced", {"lora_r": 8, "seed": 42}), ("facts", "balanced", {"lora_r": 8, "seed": 1})]
    out = capsys.readouterr().out
    assert "(11/12 questions)" in out
    assert "7/8 (19/24 questions)  mean loss after 2.600  over 2 seeds" in out
