"""What the run page shows, computed from run-folder data. No Qt."""
from __future__ import annotations

import math
import re
import shutil
import time
from pathlib import Path
from typing import Any

from trainer.run import status as st

from . import theme
from .estimates import format_duration


def state_words(state: str | None) -> str:
    return st.STATE_WORDS.get(state or "", "Not started")


def ema(values: list[float], weight: float = 0.9) -> list[float]:
    """Bias-corrected exponential moving average (the smoothed loss line)."""
    out: list[float] = []
    avg = 0.0
    for i, v in enumerate(values, 1):
        avg = weight * avg + (1 - weight) * v
        out.append(avg / (1 - weight ** i))
    return out


def smoothing_weight(n_points: int) -> float:
    """Smooth more when there are many points, little when there are few."""
    if n_points < 20:
        return 0.6
    if n_points < 200:
        return 0.85
    return 0.95


def fmt_number(value: Any, digits: int = 3) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return "—"
    return f"{value:.{digits}f}"


def fmt_lr(value: Any) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "—"
    return f"{value:.2e}"


def fmt_step(step: Any, total: Any) -> str:
    step = step if isinstance(step, int) else 0
    if isinstance(total, int) and total > 0:
        return f"{step} / {total} ({100 * step / total:.0f}%)"
    return str(step) if step else "—"


def fmt_device(status: dict) -> str:
    device = status.get("device")
    if not device:
        return "—"
    name = status.get("device_name") or ""
    label = {"cuda": "GPU", "mps": "Apple GPU", "cpu": "CPU"}.get(device, device)
    precision = status.get("precision")
    text = f"{label}: {name}" if name else label
    return f"{text} ({precision})" if precision else text


def fmt_created(created_at: str, now: float | None = None) -> str:
    """'30 Nov 12:27' in local time ('30 Nov 2025' for another year)."""
    import datetime as dt

    if not created_at:
        return ""
    try:
        when = dt.datetime.fromisoformat(created_at)
    except ValueError:
        return created_at[:16]
    if when.tzinfo is not None:
        when = when.astimezone()
    this_year = dt.datetime.fromtimestamp(now if now is not None else time.time()).year
    return when.strftime("%d %b %H:%M" if when.year == this_year else "%d %b %Y").lstrip("0")


def live_numbers(status: dict, last_train: dict | None) -> dict[str, str]:
    """The labels of the run page's number grid."""
    last_train = last_train or {}
    tps = last_train.get("tokens_per_second")
    eta = last_train.get("eta_s") if status.get("state") in st.ACTIVE_STATES else None
    if status.get("state") == st.DONE:
        tps = (status.get("metrics") or {}).get("tokens_per_second", tps)
    return {
        "step": fmt_step(status.get("step", last_train.get("step")), status.get("total_steps")),
        "loss": fmt_number(last_train.get("loss")),
        "learning_rate": fmt_lr(last_train.get("learning_rate")),
        "tokens_per_second": fmt_number(tps, 0) if isinstance(tps, (int, float)) else "—",
        "eta": format_duration(eta) if isinstance(eta, (int, float)) else "—",
        "elapsed": format_duration(last_train.get("elapsed_s")) if last_train.get("elapsed_s") is not None else "—",
        "device": fmt_device(status),
    }


def suggest_run_name(data_path: str | Path | None, model: str, runs_dir: Path, today: str | None = None) -> str:
    """e.g. 'support-replies-smollm2-135m-2026-11-30', made unique in runs_dir."""
    stem = Path(data_path).stem if data_path else "run"
    model_short = model.rstrip("/").split("/")[-1].lower().replace("-instruct", "").replace("-it", "")
    today = today or time.strftime("%Y-%m-%d")
    base = slug(f"{stem}-{model_short}-{today}") or "run"
    return unique_name(base, runs_dir)


def slug(text: str) -> str:
    text = re.sub(r"[^A-Za-z0-9._-]+", "-", text.strip().lower())
    return re.sub(r"-{2,}", "-", text).strip("-._")[:80]


def unique_name(base: str, runs_dir: Path) -> str:
    name, n = base, 2
    while (Path(runs_dir) / name).exists():
        name = f"{base}-{n}"
        n += 1
    return name


def name_problem(name: str, runs_dir: Path) -> str | None:
    """Why this run name cannot be used, in words, or None."""
    if not name.strip():
        return "Give the run a name."
    if name != name.strip():
        return "The name starts or ends with a space; remove it."
    if re.search(r'[<>:"/\\|?*\x00-\x1f]', name) or name in (".", ".."):
        return 'The name cannot contain any of < > : " / \\ | ? * ; use letters, digits, - and _.'
    if len(name) > 100:
        return "The name is too long; use 100 characters or fewer."
    if (Path(runs_dir) / name).exists():
        return f"A run called '{name}' already exists in that folder; choose another name."
    return None


def free_space_gb(folder: Path) -> float | None:
    """Free disk space where `folder` is (or would be made)."""
    folder = Path(folder)
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        return shutil.disk_usage(folder).free / 1e9
    except OSError:
        return None


def launch_view(status: dict, launched_at: float | None, pid_alive: bool) -> str | None:
    """For a run this app just started: 'starting' while the trainer has not
    written its status yet, 'failed_to_start' if it died before writing."""
    if launched_at is None:
        return None
    written = status.get("updated_at")
    if isinstance(written, (int, float)) and written >= launched_at - 1.0 and status.get("written_state"):
        return None
    return "starting" if pid_alive else "failed_to_start"


def samples_html(samples: list[dict]) -> str:
    """The samples as base reply vs fine-tuned reply, as simple HTML in the active theme's colours."""
    import html

    c = theme.color
    if not samples:
        return f"<p style='color:{c('muted')}'>Sample replies appear here when training has finished.</p>"
    parts = ["<table width='100%' cellspacing='0' cellpadding='6' style='border-collapse:collapse'>",
             f"<tr style='background:{c('table_head')}; color:{c('text')}'><th align='left' width='28%'>Prompt</th>"
             "<th align='left' width='36%'>Before (base model)</th><th align='left' width='36%'>After (fine-tuned)</th></tr>"]
    for i, s in enumerate(samples):
        bg = c("row") if i % 2 == 0 else c("row_alt")

        def cell(text: object) -> str:
            return html.escape(str(text or "")).replace("\n", "<br>")
        ref = (f"<br><span style='color:{c('muted')}'>Your answer: {cell(s.get('reference'))}</span>"
               if s.get("reference") else
               f"<br><span style='color:{c('muted')}'>Your own test question</span>" if s.get("yours") is True else "")
        parts.append(f"<tr style='background:{bg}; color:{c('text')}' valign='top'><td>{cell(s.get('prompt'))}{ref}</td>"
                     f"<td>{cell(s.get('base'))}</td><td><b>{cell(s.get('finetuned'))}</b></td></tr>")
    parts.append("</table>")
    return "".join(parts)


def model_words(model: str) -> str:
    """A short name for a model: the preset's name, a file or folder's name, or the Hub id."""
    from trainer.run.presets import find_preset

    if not model:
        return "?"
    preset = find_preset(model)
    if preset:
        return preset.name
    if "\\" in model or model.startswith(("/", ".", "~")) or model.lower().endswith(".gguf") or ":" in model[:3]:
        return Path(model).name
    return model
