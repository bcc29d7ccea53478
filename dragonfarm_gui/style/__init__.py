"""The app's look: style/app.qss with the light or dark colour set of
logic/theme.py, chosen by the system palette (its window colour's lightness).

`apply_style(app)` is called once by app.py (and again when the system
palette changes); widgets key on object names and the `tone` property, set
with `set_style_property` so the new value takes effect at once.
"""
from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication, QWidget

from ..logic import theme

log = logging.getLogger(__name__)
QSS = Path(__file__).with_name("app.qss")  # shipped as package data and in the frozen app (packaging/dragonfarm.spec)


def palette_is_dark(palette: QPalette) -> bool:
    return theme.is_dark_lightness(palette.color(QPalette.ColorRole.Window).lightnessF())


def stylesheet(dark: bool) -> str:
    try:
        template = QSS.read_text(encoding="utf-8")
    except OSError:
        log.warning("the stylesheet %s is missing; the app uses the system look", QSS)
        return ""
    return theme.render_qss(template, theme.colors_for(dark))


def apply_style(app: QApplication) -> bool:
    """Pick the colour set for the app's palette and set the stylesheet; True when dark."""
    dark = palette_is_dark(app.palette())
    theme.set_active(dark)
    app.setStyleSheet(stylesheet(dark))
    if not hasattr(app, "_dragonfarm_theme_watch"):
        app._dragonfarm_theme_watch = _PaletteWatch(app)
        app.installEventFilter(app._dragonfarm_theme_watch)
    return dark


def set_style_property(widget: QWidget, name: str, value: object) -> None:
    """Set a property the stylesheet keys on (e.g. tone) and restyle the widget now."""
    if widget.property(name) == value:
        return
    widget.setProperty(name, value)
    widget.style().unpolish(widget)
    widget.style().polish(widget)


class _PaletteWatch(QObject):
    """The system switched between light and dark while the app runs: follow it."""

    def eventFilter(self, obj, event):  # noqa: N802
        if obj is QApplication.instance() and event.type() == QEvent.Type.ApplicationPaletteChange:
            app = QApplication.instance()
            if palette_is_dark(app.palette()) != theme.is_dark():
                apply_style(app)
        return False
