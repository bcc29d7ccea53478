"""The trainer's states (status.json's `state`), in a module of their own so that
both status.py and the field checks (checks.py) can name them."""
from __future__ import annotations

QUEUED, LOADING, TRAINING, SAVING = "queued", "loading", "training", "saving"
DONE, FAILED, CANCELLED, INTERRUPTED = "done", "failed", "cancelled", "interrupted"
ACTIVE_STATES = (QUEUED, LOADING, TRAINING, SAVING)
FINAL_STATES = (DONE, FAILED, CANCELLED, INTERRUPTED)
ALL_STATES = ACTIVE_STATES + FINAL_STATES
