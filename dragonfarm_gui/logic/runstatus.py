"""The run page's status, decided without Qt: for each state, the badge's
words and tone, the message, the error, the progress bar, and which buttons
show, are enabled and what they say. The page only applies a StatusView."""
from __future__ import annotations

from dataclasses import dataclass, field

from trainer.run import status as st

from .runview import state_words
from .theme import state_tone

CANCEL_TIP = "Stop training; the adapter trained so far is saved"
STOP_NOW_TIP = "The trainer was asked to stop and has not yet; stop it at once (the last checkpoint is kept)"
NOT_STARTED = "This run has not been started yet. Press Start training to begin."
RESUME_TIP = "Continue from the last checkpoint"
RESUME_FROM_START_TIP = "No checkpoint was saved yet, so Resume starts from the beginning"
INTERRUPTED = "The trainer stopped without finishing (the computer slept, it was closed, or it crashed)."


@dataclass
class Button:
    visible: bool = True
    enabled: bool = True
    text: str | None = None      # None: the button's own text
    tip: str | None = None


@dataclass
class StatusView:
    state: str                   # the state the page is in (queued while starting, failed if it never started)
    badge: str                   # the words on the badge
    tone: str                    # the badge's `tone` property: neutral, active, good, bad, warn, alert
    message: str = ""
    error: str = ""
    progress_max: int = 1
    progress_value: int = 0
    progress_text: str = ""
    buttons: dict[str, Button] = field(default_factory=dict)


def status_view(status: dict, *, launch: str | None = None, launch_last_words: str = "",
                has_checkpoints: bool = False, cancel_asked: bool = False, has_adapter: bool = False) -> StatusView:
    """What the run page shows for this status.

    launch: from runview.launch_view, for a run this app just started ("starting",
    "failed_to_start" or None). launch_last_words: the launcher log's last line.
    has_checkpoints: the run has a checkpoint to resume from."""
    state = status.get("state") or st.QUEUED
    message = status.get("message") or ""
    error = (status.get("error") or "") if state == st.FAILED else ""
    if launch == "starting":
        state, message = st.QUEUED, "Starting the trainer…"
    elif launch == "failed_to_start":
        state, message = st.FAILED, ""
        error = "The trainer stopped before it could start." + (
            f" Its last words: {launch_last_words[:300]}" if launch_last_words else "")
    elif state == st.INTERRUPTED:
        message = INTERRUPTED + (" Press Resume to continue from the last checkpoint." if has_checkpoints else
                                 " There is no checkpoint yet, so Resume or Start again trains it from the beginning.")
    damaged = status.get("damaged") or []
    if damaged:
        error = ("Some of this run's files are damaged: " + "; ".join(damaged[:5]) +
                 ". Open its folder to look at them, or delete the run.")
    never_started = not status.get("written_state") and launch is None and state != st.DAMAGED
    if never_started:
        message = NOT_STARTED
    badge = "Not started" if never_started else state_words(state)
    if message.strip().rstrip(".").lower() == state_words(state).lower():
        message = ""  # the badge already says it
    if error:
        message = ""  # a failed run's last message ("Loading the model") is from before it failed

    total, step = status.get("total_steps") or 0, status.get("step") or 0
    active = state in st.ACTIVE_STATES and not never_started
    stop_now = active and cancel_asked
    stopped = state in (st.INTERRUPTED, st.CANCELLED, st.FAILED)
    buttons = {
        "start": Button(visible=never_started),
        "cancel": Button(visible=not never_started and not stopped, enabled=active,
                         text="Stop now…" if stop_now else "Cancel", tip=STOP_NOW_TIP if stop_now else CANCEL_TIP),
        "resume": Button(visible=not never_started, enabled=stopped,
                         tip=RESUME_TIP if has_checkpoints else RESUME_FROM_START_TIP),
        # a failed, stopped or interrupted run always has a way forward from its page
        "start_again": Button(visible=stopped and not never_started),
        "delete": Button(enabled=not active),
        "tools": Button(enabled=state in (st.DONE, st.CANCELLED) and has_adapter),
    }
    progress = (max(1, int(total)), int(min(step, total)) if total else 0, f"{step} of {total} steps" if total else badge)
    early = status.get("stopped_early_at")
    if state == st.DONE and type(early) is int and 0 < early < total:
        # an early stop finished the run: a full bar, and why it ended before the planned steps
        progress = (early, early, f"Stopped early at step {early} of {total}: the held-out loss had stopped improving")
    return StatusView(
        state=state, badge=badge, tone=state_tone(state, never_started), message=message, error=error,
        progress_max=progress[0], progress_value=progress[1], progress_text=progress[2], buttons=buttons)
