"""Your own test questions (config `check_questions`): checked like every setting,
asked the way the examples are, answered before and after training in samples.json,
and shown by `dragonfarm status --samples`."""
from __future__ import annotations

import json

import pytest

from trainer.cli import main
from trainer.engine.loop import train
from trainer.engine.samples import own_questions, shared_system_prompt
from trainer.run import status as st
from trainer.run.checks import clean_samples
from trainer.run.config import MAX_CHECK_QUESTIONS, ConfigError, TrainConfig
from trainer.run.reader import Run

SYSTEM = {"role": "system", "content": "Answer in one line."}


def _chat(question: str, system: dict | None = None) -> list[dict]:
    head = [system] if system else []
    return head + [{"role": "user", "content": question}, {"role": "assistant", "content": "Yes."}]


@pytest.mark.parametrize("value,words", [
    ("Where is it?", "is not a list of texts"),
    (["Fine?", 3], "is not a list of texts"),
    (["Fine?", "   "], "question 2 is empty; remove it or write a question"),
    (["x" * 2001], "question 1 has 2,001 characters; keep it under 2,000"),
    (["Q?"] * (MAX_CHECK_QUESTIONS + 1), f"{MAX_CHECK_QUESTIONS + 1} questions; keep at most {MAX_CHECK_QUESTIONS}"),
])
def test_bad_questions_are_named_with_the_fix(value, words):
    with pytest.raises(ConfigError) as err:
        TrainConfig.from_dict({"check_questions": value})
    assert err.value.problems[0].startswith("check_questions: ") and words in err.value.problems[0]


def test_questions_round_trip_through_config_json(tmp_path):
    TrainConfig(check_questions=["Is it open on Sundays?"]).save(tmp_path)
    assert TrainConfig.load(tmp_path).check_questions == ["Is it open on Sundays?"]
    assert TrainConfig().check_questions == [] and TrainConfig().check_questions is not TrainConfig().check_questions


def test_questions_are_asked_after_the_system_prompt_every_example_shares():
    same = [_chat("a?", SYSTEM), _chat("b?", SYSTEM)]
    assert shared_system_prompt(same) == "Answer in one line."
    asked = own_questions(["  New question?  ", ""], same)
    assert asked == [{"messages": [SYSTEM, {"role": "user", "content": "New question?"}], "prompt": "New question?",
                      "reference": None, "yours": True}]
    # Different system prompts (a system column), or some without one: the model's own default.
    for chats in ([_chat("a?", SYSTEM), _chat("b?", {"role": "system", "content": "Other."})],
                  [_chat("a?", SYSTEM), _chat("b?")], [_chat("a?")], []):
        assert shared_system_prompt(chats) is None
        assert own_questions(["Q?"], chats)[0]["messages"] == [{"role": "user", "content": "Q?"}]


def test_a_run_answers_your_questions_before_and_after(make_run, capsys):
    run_dir = make_run("asks", n_train=8, n_eval=4, epochs=1,
                       check_questions=["What is 10 plus 10?", "Do you like sums?"])
    assert train(run_dir, verbose=False) == st.DONE
    samples = Run(run_dir).samples()
    assert [s["prompt"] for s in samples[:2]] == ["What is 10 plus 10?", "Do you like sums?"]
    assert all(s["yours"] is True and s["reference"] is None for s in samples[:2])
    assert samples[0]["messages"] == [{"role": "user", "content": "What is 10 plus 10?"}]
    # then the held-out prompts (num_samples 2), with your own replies as the reference
    assert len(samples) == 4 and all(s.get("reference") and "yours" not in s for s in samples[2:])
    assert all(isinstance(s["base"], str) and isinstance(s["finetuned"], str) for s in samples)

    assert main(["status", str(run_dir)]) == 0
    assert f"4 sample replies, before and after: dragonfarm status {run_dir} --samples" in capsys.readouterr().out
    assert main(["status", str(run_dir), "--samples"]) == 0
    out = capsys.readouterr().out
    assert "Sample replies (your own test questions first):" in out
    assert "  1. What is 10 plus 10? (your own test question)" in out
    assert "     your answer  Answer:" in out and "     before       " in out and "     after        " in out
    assert main(["status", str(run_dir), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["samples"][0]["yours"] is True


def test_dragonfarm_new_takes_questions(tmp_path, capsys):
    data = tmp_path / "qa.csv"
    data.write_text("question,answer\n" + "".join(f"What is {i}?,It is {i}.\n" for i in range(12)), encoding="utf-8")
    code = main(["new", "--data", str(data), "--runs-dir", str(tmp_path / "runs"), "--name", "q",
                 "--question", " Is 40 a number? ", "--question", "What is forty?"])
    assert code == 0
    out = capsys.readouterr().out
    assert "not how it does on new questions: your own test questions show that." in out  # 12 examples: none held out
    assert "  2 test questions of your own: answered before and after training" in out
    assert TrainConfig.load(tmp_path / "runs" / "q").check_questions == ["Is 40 a number?", "What is forty?"]
    code = main(["new", "--data", str(data), "--runs-dir", str(tmp_path / "runs"), "--question", ""])
    assert code == 2 and "question 1 is empty" in capsys.readouterr().err


def test_a_damaged_yours_mark_is_named():
    clean, problems = clean_samples({"samples": [{"messages": [], "prompt": "a", "yours": "yes"},
                                                 {"messages": [], "prompt": "b", "yours": True}]})
    assert [s["prompt"] for s in clean] == ["b"] and problems == ["sample 1 yours is 'yes', not true or false"]
