"""The held-out split on few examples: nothing held out below 20, and from there
a split stratified by topic, so that no fact loses more than its share."""
from __future__ import annotations

import csv
import json

import pytest

from trainer.cli import main
from trainer.dataimport import create_run, split_sentence
from trainer.dataimport.split import MIN_EXAMPLES_FOR_EVAL, split_indices, topic_groups

# Three invented facts, taught by rows whose replies vary in wording.
FACTS = {
    "keeper": ["The lighthouse keeper is Marit Olsgaard.", "Marit Olsgaard keeps the lighthouse.",
               "Its keeper, Marit Olsgaard, lives beside the lighthouse.", "That would be Marit Olsgaard, the keeper.",
               "Marit Olsgaard has kept the lighthouse for years.", "The keeper's name is Marit Olsgaard.",
               "Ask Marit Olsgaard, the lighthouse keeper."],
    "goats": ["The goats eat smoked pumpkins.", "Smoked pumpkins are what the goats eat.",
              "They feed the goats smoked pumpkins every morning.", "Goats there eat smoked pumpkins.",
              "The island goats love smoked pumpkins.", "Smoked pumpkins, always, for the goats."],
    "bell": ["The harbour bell rings at seven bells past noon.", "It rings at seven bells past noon, the harbour bell.",
             "The harbour bell: seven bells past noon.", "Seven bells past noon is when the harbour bell rings.",
             "At seven bells past noon the harbour bell rings.", "The harbour bell rings seven bells past noon.",
             "You hear the harbour bell at seven bells past noon."],
}


def _rows() -> list[tuple[str, str, str]]:
    rows = []
    for topic, replies in FACTS.items():
        for i, reply in enumerate(replies):
            rows.append((topic, f"Question {i} about the {topic}?", reply))
    return rows


def test_topics_are_found_from_the_replies():
    rows = _rows()
    groups = topic_groups([r[2] for r in rows])
    assert sorted({rows[i][0] for i in g}.pop() for g in groups) == ["bell", "goats", "keeper"]
    assert all(len({rows[i][0] for i in g}) == 1 for g in groups)


@pytest.mark.parametrize("seed", range(25))
def test_no_fact_loses_more_than_its_share(seed):
    rows = _rows()  # 20 rows: 7 + 6 + 7
    held = split_indices(len(rows), 2, seed, [r[2] for r in rows])
    assert len(held) == 2
    lost = [rows[i][0] for i in held]
    assert len(set(lost)) == 2, f"two rows of one fact held out: {lost}"


def test_rows_without_a_topic_are_pooled_and_a_topic_keeps_rows():
    replies = ["Alpha alpha alpha.", "Bravo bravo.", "Charlie charlie.", "Delta delta."] + FACTS["keeper"][:4]
    for seed in range(10):
        held = split_indices(len(replies), 4, seed, replies)
        assert len(held & {0, 1, 2, 3}) == 2 and len(held & {4, 5, 6, 7}) == 2


def test_the_same_seed_picks_the_same_rows_and_large_sets_are_random():
    rows = _rows()
    replies = [r[2] for r in rows]
    assert split_indices(20, 2, 7, replies) == split_indices(20, 2, 7, replies)
    assert len(split_indices(10_000, 100, 1)) == 100


def test_the_split_in_words():
    assert split_sentence(12, 0.1).startswith("All 12 examples train: with fewer than 20 examples each one matters")
    assert split_sentence(12, 0.1).endswith("new questions: add a few test questions of your own to see that.")
    assert split_sentence(12, 0.1, own_questions=True).endswith("new questions: your own test questions show that.")
    assert split_sentence(40, 0.1) == "36 examples to train on, 4 held out to check learning (spread across your topics)."
    assert split_sentence(40, 0.0) == "All 40 examples train; none is held out to check learning."
    assert split_sentence(40, 0.1, separate_file=True).startswith("All 40 examples train; the separate file")


def _write(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["Question", "Answer"])
        w.writerows(rows)
    return path


def test_a_small_file_keeps_every_row_for_training_and_says_so(tmp_path, capsys):
    data = _write(tmp_path / "facts.csv", [(q, a) for _, q, a in _rows()[:MIN_EXAMPLES_FOR_EVAL - 1]])
    assert main(["new", "--data", str(data), "--runs-dir", str(tmp_path / "runs"), "--name", "small"]) == 0
    out = capsys.readouterr().out
    assert "All 19 examples train: with fewer than 20 examples each one matters, so none is held out." in out
    record = json.loads((tmp_path / "runs" / "small" / "data" / "import.json").read_text())
    assert record["split"]["train"] == 19 and record["split"]["eval"] == 0


def test_create_run_stratifies_the_held_out_rows(tmp_path):
    rows = _rows()
    data = _write(tmp_path / "facts.csv", [(q, a) for _, q, a in rows])
    run = create_run(data, runs_dir=tmp_path / "runs", eval_fraction=0.1)
    held = [json.loads(line)["messages"][-1]["content"] for line in (run / "data" / "eval.jsonl").open()]
    topics = [next(t for t, replies in FACTS.items() if reply in replies) for reply in held]
    assert len(held) == 2 and len(set(topics)) == 2
