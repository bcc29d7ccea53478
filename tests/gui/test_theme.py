"""One stylesheet, two colour sets: the app stays readable in a dark system
theme, and no widget names a colour itself."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from PySide6.QtGui import QColor, QPalette

from dragonfarm_gui.logic import theme
from dragonfarm_gui.style import QSS, apply_style, palette_is_dark, stylesheet

PACKAGE = Path(__file__).resolve().parents[2] / "dragonfarm_gui"


def _contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two #rrggbb colours."""
    def lum(h: str) -> float:
        rgb = [int(h[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_both_colour_sets_name_the_same_roles_and_the_qss_uses_only_those():
    assert set(theme.LIGHT) == set(theme.DARK)
    for dark in (False, True):
        text = stylesheet(dark)
        assert "@" not in text and text.count("{") == text.count("}")
    used = set(re.findall(r"@([a-z_]+)", re.sub(r"/\*.*?\*/", "", QSS.read_text(), flags=re.DOTALL)))
    assert used <= set(theme.LIGHT)
    with pytest.raises(KeyError, match="unknown colour @nope"):
        theme.render_qss("QLabel { color: @nope; }", theme.LIGHT)


@pytest.mark.parametrize("dark", [False, True])
def test_text_colours_are_readable_on_their_backgrounds(dark):
    c = theme.colors_for(dark)
    page = "#ffffff" if not dark else "#2b2b2b"  # a typical window colour of each kind
    for role in ("text", "muted", "good", "bad", "warn", "alert", "accent"):
        assert _contrast(c[role], page) >= 4.0, (role, dark)
    for box in ("error_bg", "info_bg", "warn_bg", "chat_user", "chat_model", "chat_system", "row", "row_alt"):
        assert _contrast(c["text"], c[box]) >= 7.0, (box, dark)
    for badge in ("badge_neutral", "badge_active", "badge_good", "badge_bad", "badge_warn", "badge_alert"):
        assert _contrast(c["badge_text"], c[badge]) >= 4.5, badge
    assert _contrast(c["plot_fg"], c["plot_bg"]) >= 7.0 and _contrast(c["plot_smooth"], c["plot_bg"]) >= 4.5


def test_the_palette_picks_the_set(qapp):
    light, dark = QPalette(), QPalette()
    light.setColor(QPalette.ColorRole.Window, QColor("#efefef"))
    dark.setColor(QPalette.ColorRole.Window, QColor("#2b2b2b"))
    assert not palette_is_dark(light) and palette_is_dark(dark)
    old = qapp.palette()
    try:
        qapp.setPalette(dark)
        assert apply_style(qapp) and theme.is_dark() and "#3c2323" in qapp.styleSheet()
    finally:
        qapp.setPalette(old)
        apply_style(qapp)
    assert not theme.is_dark()


def test_no_widget_names_a_colour():
    """Colours live in logic/theme.py and style/app.qss only (object names and `tone` elsewhere)."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "theme.py" and path.parent.name == "logic":
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"[\"':(,]\s?#[0-9a-fA-F]{3}(?:[0-9a-fA-F]{3})?\b|setStyleSheet\(", line) and \
                    "app.setStyleSheet" not in line:
                found.append(f"{path.relative_to(PACKAGE)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_stylesheet_ships_with_the_package_and_the_frozen_app():
    root = PACKAGE.parent
    assert 'dragonfarm_gui = ["style/*.qss"]' in (root / "pyproject.toml").read_text()
    spec = (root / "packaging" / "dragonfarm.spec").read_text()
    assert '"dragonfarm_gui" / "style" / "app.qss"), "dragonfarm_gui/style"' in spec
    from dragonfarm_gui.envsetup.selftest import STYLESHEET, bundle_checks

    assert STYLESHEET == QSS.resolve()
    assert ("stylesheet", True, str(STYLESHEET)) in bundle_checks()


def test_the_plot_follows_a_switch_to_dark_while_the_app_runs(qapp, qtbot):
    from dragonfarm_gui.widgets.loss_plot import LossPlot

    apply_style(qapp)
    plot = LossPlot()
    qtbot.addWidget(plot)
    assert plot.plot.backgroundBrush().color().name() == theme.LIGHT["plot_bg"]
    old = qapp.palette()
    dark = QPalette(old)
    dark.setColor(QPalette.ColorRole.Window, QColor("#2b2b2b"))
    try:
        qapp.setPalette(dark)  # the system switched: the app restyles itself
        qtbot.waitUntil(lambda: plot.plot.backgroundBrush().color().name() == theme.DARK["plot_bg"], timeout=3000)
        assert theme.is_dark() and theme.DARK["error_bg"] in qapp.styleSheet()
    finally:
        qapp.setPalette(old)
    qtbot.waitUntil(lambda: not theme.is_dark(), timeout=3000)
