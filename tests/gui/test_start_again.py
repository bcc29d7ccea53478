"""Every failed, stopped or interrupted run has a way forward from its page
and the Run menu: Start again (from step 0), and Resume that starts from the
beginning when no checkpoint was saved. With the fake trainer."""
from __future__ import annotations

import pytest

from trainer.run import status as st
from trainer.run.reader import Run

from .helpers import write_status

WAIT = 20_000


def _page(window, qtbot, run):
    qtbot.waitUntil(lambda: window.run_page is not None and window.run_page.run is not None
                    and window.run_page.run.path == run, timeout=5000)
    return window.run_page


def _wait_state(qtbot, page, state, timeout=WAIT):
    qtbot.waitUntil(lambda: page.view_state == state, timeout=timeout)


def _never_asked(run):
    pytest.fail("Start again asked for confirmation although there was nothing to lose")


def test_failed_before_first_checkpoint_can_start_again_from_the_page(window, qtbot, sample_run, fake_python,
                                                                       monkeypatch):
    monkeypatch.setenv("FAKE_FAIL", "The training libraries are missing.")
    page = _page(window, qtbot, sample_run)
    window.start_run(sample_run)
    _wait_state(qtbot, page, st.FAILED)
    assert Run(sample_run).checkpoints() == []
    assert page.buttons["start_again"].isVisible() and page.buttons["start_again"].isEnabled()
    assert page.buttons["resume"].isEnabled()
    assert "starts from the beginning" in page.buttons["resume"].toolTip()
    monkeypatch.delenv("FAKE_FAIL")  # the person fixed it
    window.confirm_start_again = _never_asked
    page.buttons["start_again"].click()
    _wait_state(qtbot, page, st.DONE)
    assert [r["step"] for r in Run(sample_run).train_records()] == [1, 2, 3, 4, 5, 6]
    assert not page.buttons["start_again"].isVisible()


@pytest.mark.parametrize("button", ["start_again", "resume"])
def test_a_trainer_still_exiting_after_it_failed_is_waited_for(window, qtbot, sample_run, fake_python, monkeypatch,
                                                               button):
    """The page reads failed as soon as the status says so; the process may
    hold the run's lock a moment longer. Pressing a button then starts the
    run again, never "still training"."""
    monkeypatch.setenv("FAKE_FAIL", "The training libraries are missing.")
    monkeypatch.setenv("FAKE_LINGER", "1.5")
    errors = []
    monkeypatch.setattr("dragonfarm_gui.widgets.main_window.show_error", lambda *a, **k: errors.append(a[1:]))
    page = _page(window, qtbot, sample_run)
    window.start_run(sample_run)
    _wait_state(qtbot, page, st.FAILED)
    assert Run(sample_run).status()["live"]  # still exiting
    monkeypatch.delenv("FAKE_FAIL")
    monkeypatch.setenv("FAKE_LINGER", "0")
    page.buttons[button].click()
    _wait_state(qtbot, page, st.DONE)
    assert errors == []
    assert Run(sample_run).status()["step"] == 6


def test_resume_without_checkpoint_finishes(window, qtbot, sample_run, fake_python, monkeypatch):
    monkeypatch.setenv("FAKE_FAIL", "The training libraries are missing.")
    page = _page(window, qtbot, sample_run)
    window.start_run(sample_run)
    _wait_state(qtbot, page, st.FAILED)
    monkeypatch.delenv("FAKE_FAIL")
    page.buttons["resume"].click()
    _wait_state(qtbot, page, st.DONE)
    assert Run(sample_run).status()["step"] == 6


def test_interrupted_without_checkpoint_says_what_to_press(window, qtbot, sample_run):
    page = _page(window, qtbot, sample_run)
    write_status(sample_run, st.LOADING, live=False, step=0, total_steps=10)
    _wait_state(qtbot, page, st.INTERRUPTED)
    assert "Start again" in page.message.text()
    assert page.buttons["start_again"].isVisible()


def test_run_menu_start_again_asks_before_replacing_a_trained_adapter(window, qtbot, sample_run, fake_python,
                                                                      monkeypatch):
    monkeypatch.setenv("FAKE_STEPS", "200")
    monkeypatch.setenv("FAKE_DELAY", "0.05")
    page = _page(window, qtbot, sample_run)
    window.start_run(sample_run)
    qtbot.waitUntil(lambda: (Run(sample_run).status().get("step") or 0) >= 3, timeout=WAIT)
    window.cancel_run(str(sample_run))
    _wait_state(qtbot, page, st.CANCELLED)
    assert page.buttons["start_again"].isVisible()
    assert Run(sample_run).has_adapter()
    asked = []
    window.confirm_start_again = lambda run: asked.append(run.name) or False
    assert window.run_list.current_path() == str(sample_run)
    window.start_again_action.trigger()
    assert asked == ["support"]
    assert Run(sample_run).state == st.CANCELLED  # said no: nothing started
    monkeypatch.setenv("FAKE_STEPS", "4")
    window.confirm_start_again = lambda run: True
    window.start_again_action.trigger()
    _wait_state(qtbot, page, st.DONE)
    status = Run(sample_run).status()
    assert "resumed_from" not in status and status["step"] == 4
    assert [r["step"] for r in Run(sample_run).train_records()] == [1, 2, 3, 4]
