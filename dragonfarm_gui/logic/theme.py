"""The app's colours: one light set and one dark set, picked by how light the
system palette's window colour is, and substituted into style/app.qss. No Qt.

Widgets never name a colour: they set an object name or a dynamic property
(`tone`, `state`) that the stylesheet keys on, and the few places that paint
themselves (HTML in text browsers, the run table, the loss plot) ask `color()`
for a role of the active set.
"""
from __future__ import annotations

import re

from trainer.run import status as st

LIGHT = {
    "text": "#202124", "muted": "#5f6368", "faint": "#80868b",
    "good": "#2e7d32", "bad": "#c62828", "warn": "#8d6e00", "alert": "#b35c00", "accent": "#1f4e8c",
    # filled badges carry white text in both themes
    "badge_neutral": "#757575", "badge_active": "#2f6fb0", "badge_good": "#2e7d32", "badge_bad": "#c62828",
    "badge_warn": "#8d6e00", "badge_alert": "#b35c00", "badge_text": "#ffffff",
    "error_bg": "#fdecea", "error_border": "#f5c2c0", "info_bg": "#f3f7fb", "info_border": "#d6e2ee",
    "warn_bg": "#fff4e5", "warn_border": "#f0c080", "gridline": "#e6e6e6",
    "chat_user": "#e8f0fe", "chat_model": "#e6f4ea", "chat_system": "#f1f3f4",
    "table_head": "#eef2f7", "row": "#ffffff", "row_alt": "#f7f9fb",
    "plot_bg": "#ffffff", "plot_fg": "#3c4043", "plot_raw": "#78a0d2", "plot_smooth": "#1e5aaa",
    "plot_eval": "#dc6e14", "plot_hover": "#969696",
}

DARK = {
    "text": "#e8eaed", "muted": "#b0b4ba", "faint": "#9aa0a6",
    "good": "#81c995", "bad": "#f28b82", "warn": "#e6c45c", "alert": "#fcad70", "accent": "#8ab4f8",
    "badge_neutral": "#6b6b6b", "badge_active": "#2f6fb0", "badge_good": "#2e7d32", "badge_bad": "#c62828",
    "badge_warn": "#8d6e00", "badge_alert": "#b35c00", "badge_text": "#ffffff",
    "error_bg": "#3c2323", "error_border": "#8c3b36", "info_bg": "#232c38", "info_border": "#3d5066",
    "warn_bg": "#3a2e17", "warn_border": "#8a6a2a", "gridline": "#3c4043",
    "chat_user": "#22314a", "chat_model": "#1f3527", "chat_system": "#2f3133",
    "table_head": "#2b323c", "row": "#202124", "row_alt": "#282a2d",
    "plot_bg": "#1e1f22", "plot_fg": "#c8cacd", "plot_raw": "#5f86b8", "plot_smooth": "#8ab4f8",
    "plot_eval": "#f29c4a", "plot_hover": "#7a7a7a",
}

# A run state's tone: the `state` property of the badge and the text colour in the run list.
STATE_TONES = {
    st.QUEUED: "neutral", st.LOADING: "active", st.TRAINING: "active", st.SAVING: "active",
    st.DONE: "good", st.FAILED: "bad", st.CANCELLED: "warn", st.INTERRUPTED: "alert", st.DAMAGED: "bad",
}
TEXT_FOR_TONE = {"neutral": "muted", "active": "accent", "good": "good", "bad": "bad", "warn": "warn",
                 "alert": "alert"}

_active: dict[str, str] = LIGHT


def is_dark_lightness(lightness: float) -> bool:
    """True for a dark palette: the window colour's lightness (0..1) is under the middle."""
    return lightness < 0.5


def colors_for(dark: bool) -> dict[str, str]:
    return DARK if dark else LIGHT


def set_active(dark: bool) -> dict[str, str]:
    global _active
    _active = colors_for(dark)
    return _active


def is_dark() -> bool:
    return _active is DARK


def color(role: str) -> str:
    """A colour of the active set, e.g. color("muted")."""
    return _active[role]


def state_tone(state: str | None, never_started: bool = False) -> str:
    return "neutral" if never_started else STATE_TONES.get(state or "", "neutral")


def state_text_color(state: str | None) -> str:
    return color(TEXT_FOR_TONE[state_tone(state)])


def render_qss(template: str, colors: dict[str, str]) -> str:
    """Replace each @role in the stylesheet with its colour (comments are dropped);
    an unknown role is an error."""
    def sub(match: re.Match) -> str:
        name = match.group(1)
        if name not in colors:
            raise KeyError(f"app.qss names an unknown colour @{name}")
        return colors[name]
    return re.sub(r"@([a-z_]+)\b", sub, re.sub(r"/\*.*?\*/", "", template, flags=re.DOTALL))
