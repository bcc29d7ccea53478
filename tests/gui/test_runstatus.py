"""The run page's status decisions (logic/runstatus.py), without Qt: for each
state, the badge, the words and which buttons show, are enabled and say what."""
from __future__ import annotations

import pytest

from dragonfarm_gui.logic.runstatus import NOT_STARTED, status_view
from trainer.run import status as st


def _written(state: str, **fields) -> dict:
    return {"state": state, "written_state": True, **fields}


def _buttons(view) -> dict:
    return {k: (b.visible, b.enabled) for k, b in view.buttons.items()}


def test_a_run_never_started_offers_start_and_hides_cancel_and_resume():
    view = status_view({"state": st.QUEUED})
    assert view.badge == "Not started" and view.tone == "neutral" and view.message == NOT_STARTED
    assert _buttons(view) == {"start": (True, True), "cancel": (False, False), "resume": (False, False),
                              "start_again": (False, True), "delete": (True, True), "tools": (True, False)}


def test_training_shows_steps_and_only_cancel():
    view = status_view(_written(st.TRAINING, step=3, total_steps=12))
    assert view.tone == "active" and view.state == st.TRAINING
    assert (view.progress_max, view.progress_value, view.progress_text) == (12, 3, "3 of 12 steps")
    b = view.buttons
    assert not b["start"].visible and b["cancel"].enabled and b["cancel"].text == "Cancel"
    assert not b["resume"].enabled and not b["delete"].enabled and not b["tools"].enabled


def test_cancel_asked_turns_cancel_into_stop_now():
    view = status_view(_written(st.TRAINING, step=3, total_steps=12), cancel_asked=True)
    assert view.buttons["cancel"].text == "Stop now…" and "at once" in view.buttons["cancel"].tip
    done = status_view(_written(st.DONE), cancel_asked=True)
    assert done.buttons["cancel"].text == "Cancel" and not done.buttons["cancel"].enabled


@pytest.mark.parametrize(("state", "adapter", "tone", "resume", "tools"), [
    (st.DONE, True, "good", False, True),
    (st.DONE, False, "good", False, False),
    (st.CANCELLED, True, "warn", True, True),
    (st.FAILED, False, "bad", True, False),
    (st.INTERRUPTED, False, "alert", True, False),
])
def test_finished_states(state, adapter, tone, resume, tools):
    view = status_view(_written(state, error="out of memory"), has_adapter=adapter)
    assert view.tone == tone and view.buttons["resume"].enabled == resume
    assert view.buttons["tools"].enabled == tools and view.buttons["delete"].enabled
    assert view.error == ("out of memory" if state == st.FAILED else "")


def test_a_failed_run_shows_its_error_not_its_last_message():
    view = status_view(_written(st.FAILED, message="Loading the model", error="The GPU ran out of memory."))
    assert view.message == "" and view.error == "The GPU ran out of memory."


def test_interrupted_says_what_resume_will_do():
    with_ckpt = status_view(_written(st.INTERRUPTED), has_checkpoints=True)
    without = status_view(_written(st.INTERRUPTED), has_checkpoints=False)
    assert "continue from the last checkpoint" in with_ckpt.message
    assert "Resume or Start again trains it from the beginning" in without.message
    assert without.buttons["start_again"].visible and without.buttons["resume"].enabled


def test_a_launch_that_is_starting_or_died():
    starting = status_view({"state": st.QUEUED}, launch="starting")
    assert starting.message == "Starting the trainer…" and starting.buttons["cancel"].visible
    died = status_view({"state": st.QUEUED}, launch="failed_to_start", launch_last_words="No module named torch")
    assert died.state == st.FAILED and died.tone == "bad"
    assert died.error == "The trainer stopped before it could start. Its last words: No module named torch"


def test_a_message_that_repeats_the_badge_is_dropped():
    view = status_view(_written(st.DONE, message="Finished."))
    assert view.badge == "Finished" and view.message == ""
    assert status_view(_written(st.DONE, message="Saved the adapter.")).message == "Saved the adapter."


def test_an_early_stop_fills_the_bar_and_says_why():
    view = status_view(_written(st.DONE, step=40, total_steps=60, stopped_early_at=40))
    assert (view.progress_max, view.progress_value) == (40, 40)
    assert view.progress_text.startswith("Stopped early at step 40 of 60")
    full = status_view(_written(st.DONE, step=60, total_steps=60))
    assert (full.progress_max, full.progress_value, full.progress_text) == (60, 60, "60 of 60 steps")
