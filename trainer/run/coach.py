"""The coach: what happened in a run and what to do next, in plain words.

Pure (standard library only): it reads progress records (progress.jsonl) and
eval.json as given, so the app, `dragonfarm status` and tests all share it.

    coach(ev, records) -> {"verdict", "text", "next", "best_step", "rising", "live"} or None

Verdicts: "nan" (the loss stopped being a number), "overfitting" (held-out
loss rose for the last RISE_CHECKS checks: it memorises), "learned",
"improving" (while training), "little change" (the loss did not move),
"worse", "unchecked" (a finished run with no held-out examples: nothing can
tell learning from memorising, so the words point to the sample replies).
"""
from __future__ import annotations

import math
from typing import Any

from trainer.run.files import ADAPTER_BEST_DIR

RISE_CHECKS = 2      # checks above the best before the coach says "memorising"
RISE_MARGIN = 0.01   # the last check must be this share above the best (noise is not memorising)
LEARNED = 0.05       # held-out loss down by this share: it learned
WORSE = 0.02         # held-out loss up by this share: it got worse


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def eval_points(records: list[dict[str, Any]]) -> list[tuple[int, float]]:
    """(step, held-out loss) of the trained model, one per step (the last line wins), in step order.
    Step 0 is the base model before training and is left out."""
    found: dict[int, float] = {}
    for i, r in enumerate(records or []):
        if not isinstance(r, dict):
            continue
        loss = _number(r.get("eval_loss"))
        step = r.get("step", i)
        if loss is None or not isinstance(step, int) or step <= 0:
            continue
        found[step] = loss
    return sorted(found.items())


def first_nan(records: list[dict[str, Any]], ev: dict[str, Any] | None = None) -> int | None:
    """The step where a loss first became NaN or infinite, else None (-1: only eval.json shows it)."""
    for r in records or []:
        if not isinstance(r, dict):
            continue
        for key in ("loss", "eval_loss"):
            value = _number(r.get(key))
            if value is not None and not math.isfinite(value):
                return int(r.get("step", 0)) if isinstance(r.get("step"), int) else 0
    after = _number(((ev or {}).get("after") or {}).get("loss")) if isinstance(ev, dict) else None
    return -1 if after is not None and not math.isfinite(after) else None


def best_of(points: list[tuple[int, float]]) -> tuple[int, int, float] | None:
    """(index, step, loss) of the lowest finite held-out loss (the earliest on a tie)."""
    finite = [(i, s, v) for i, (s, v) in enumerate(points) if math.isfinite(v)]
    return min(finite, key=lambda t: (t[2], t[0])) if finite else None


def kept_best(ev: dict[str, Any]) -> dict[str, Any] | None:
    """eval.json's "best" when the trainer kept a separate best adapter (adapter-best/)."""
    best = ev.get("best") if isinstance(ev, dict) else None
    if isinstance(best, dict) and best.get("adapter") == ADAPTER_BEST_DIR and isinstance(best.get("step"), int):
        return best
    return None


def coach(ev: dict[str, Any] | None, records: list[dict[str, Any]] | None = None,
          own_questions: bool = False) -> dict[str, Any] | None:
    """The verdict in words, or None when there is too little to say anything yet.
    own_questions: the sample replies answer test questions of the person's own."""
    said = _coach(ev, records, own_questions)
    stopped = ev.get("stopped_early_at") if isinstance(ev, dict) else None
    if said and isinstance(stopped, int) and not isinstance(stopped, bool):
        said["text"] += f" Training stopped early at step {stopped}, as the early-stopping setting asks."
        said["stopped_early_at"] = stopped
    return said


def _coach(ev: dict[str, Any] | None, records: list[dict[str, Any]] | None,
           own_questions: bool = False) -> dict[str, Any] | None:
    ev = ev if isinstance(ev, dict) else {}
    records = records or []
    before = _number((ev.get("before") or {}).get("loss")) if isinstance(ev.get("before"), dict) else None
    after = _number((ev.get("after") or {}).get("loss")) if isinstance(ev.get("after"), dict) else None
    live = after is None
    nan_step = first_nan(records, ev)
    if nan_step is not None:
        where = f" at step {nan_step}" if nan_step > 0 else ""
        return _say("nan", None, 0, live,
                    f"The loss became NaN (not a number){where}: training broke down, and what it learned after "
                    "that point is unusable.",
                    "Lower the learning rate (half is a good start) and train again.")
    points = eval_points(records)
    best = best_of(points)
    rising = len(points) - 1 - best[0] if best else 0
    best_step = best[1] if best else None
    kept = kept_best(ev)
    used = f" The best point was step {best_step}, which Try it and export use." if kept else \
        (f" The best point was step {best_step}." if best_step is not None and rising else "")
    if best and rising >= RISE_CHECKS and points[-1][1] > best[2] * (1 + RISE_MARGIN):
        return _say("overfitting", best_step, rising, live,
                    f"Held-out loss rose for the last {rising} checks: it has started to memorise your examples "
                    f"(lowest {best[2]:.3f}, now {points[-1][1]:.3f}).{used}",
                    "Train for fewer epochs, or add more varied examples. Early stopping (in the advanced "
                    "settings) ends a run by itself when this happens.")
    if before is None:
        return _unchecked(ev, records, own_questions)
    latest = after if after is not None else (points[-1][1] if points else None)
    if latest is None:
        return None
    change = (before - latest) / before if before else 0.0
    words = f"Held-out loss went from {before:.3f} to {latest:.3f} ({-change:+.0%})"
    if live:
        if change >= LEARNED:
            return _say("improving", best_step, rising, True, words + " so far: still improving.",
                        "Let it run; the coach will say if it starts to memorise.")
        if len(points) >= 2:
            return _say("little change", best_step, rising, True, words + " so far: the loss has hardly moved.",
                        "If it stays like this, try more epochs or a higher learning rate.")
        return None
    if change >= LEARNED:
        still = " It was still improving at the last check, so more epochs may help." if rising == 0 and \
            len(points) >= 2 else ""
        return _say("learned", best_step, rising, False,
                    words + ". The model now answers more like your examples." + still + used,
                    "Try it on new prompts; if replies are close but not quite, train a little longer.")
    if change <= -WORSE:
        return _say("worse", best_step, rising, False, words + ". The model got worse on examples it did not see."
                    + used, "Lower the learning rate or train for fewer epochs.")
    return _say("little change", best_step, rising, False, words + ": the loss did not move.",
                "Try more epochs or a higher learning rate, or add more examples.")


def _unchecked(ev: dict[str, Any], records: list[dict[str, Any]], own_questions: bool) -> dict[str, Any] | None:
    """A finished run that held nothing out (eval.json's "after" measured 0 examples)."""
    after = ev.get("after")
    if not (isinstance(after, dict) and after.get("examples") == 0):
        return None
    losses = [x for x in (_number(r.get("loss")) for r in records if isinstance(r, dict))
              if x is not None and math.isfinite(x)]
    moved = f" Its training loss went from {losses[0]:.3f} to {losses[-1]:.3f}." if len(losses) >= 2 else ""
    return _say("unchecked", None, 0, False,
                "No examples were held out, so no held-out loss can tell whether it learned or only memorised."
                + moved,
                ("Read the sample replies: your own test questions show how it does on new questions."
                 if own_questions else
                 "Read the sample replies. To see how it does on new questions, Duplicate the run and add test "
                 "questions of your own on the wizard's last page.")
                + " With 20 or more examples, part of them is kept aside to check.")


TITLES = {"nan": "It broke down", "overfitting": "It started to memorise", "learned": "Learned",
          "improving": "Still improving", "little change": "Little change", "worse": "Worse",
          "unchecked": "Not checked"}


def _say(verdict: str, best_step: int | None, rising: int, live: bool, text: str, next_: str) -> dict[str, Any]:
    return {"verdict": verdict, "title": TITLES[verdict], "text": text, "next": next_, "best_step": best_step,
            "rising": rising, "live": live}


def should_stop(points: list[tuple[int, float]], checks: int) -> bool:
    """Early stopping: the last `checks` held-out losses were all above the best one before them."""
    if checks <= 0 or len(points) <= checks:
        return False
    best = best_of(points)
    return best is not None and len(points) - 1 - best[0] >= checks
