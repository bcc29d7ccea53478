"""The live loss plot: raw training loss, a smoothed line, held-out loss points.

Each curve is made once and then updated with setData (pyqtgraph's
scrolling-plot advice), downsampled and clipped to the view. Hovering shows
the values at the nearest step.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget

from ..logic import theme
from ..logic.runview import ema, smoothing_weight


class LossPlot(QWidget):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        pg.setConfigOptions(antialias=True)
        self.steps: list[float] = []
        self.losses: list[float] = []
        self.eval_steps: list[float] = []
        self.eval_losses: list[float] = []
        self.smoothed: list[float] = []
        self.total_steps = 0

        self.plot = pg.PlotWidget()
        self.plot.setMinimumHeight(200)
        self.plot.setToolTip("Training loss per step (light), smoothed (dark blue) and held-out loss (orange dots). "
                             "Lower is better. Drag to pan, scroll to zoom, right-click for options.")
        item = self.plot.getPlotItem()
        item.setLabel("bottom", "Step")
        item.setLabel("left", "Loss")
        item.showGrid(x=True, y=True, alpha=0.25)
        item.setDownsampling(auto=True, mode="peak")
        item.setClipToView(True)
        for side in ("bottom", "left"):  # steps and losses in plain numbers, never "(x0.001)"
            item.getAxis(side).enableAutoSIPrefix(False)
        legend = item.addLegend(offset=(-10, 10))
        self.legend = legend
        self.raw_curve = item.plot([], [], name="Training loss")
        self.smooth_curve = item.plot([], [], name="Smoothed")
        self.eval_points = item.plot([], [], pen=None, symbol="o", symbolSize=9, name="Held-out loss")
        self._hover_line = pg.InfiniteLine(angle=90)
        self._themed_dark: bool | None = None
        self.apply_theme()
        self._hover_line.setVisible(False)
        item.addItem(self._hover_line, ignoreBounds=True)
        self.plot.scene().sigMouseMoved.connect(self._on_mouse_moved)

        self.hover_label = QLabel(" ")
        self.hover_label.setObjectName("hoverLabel")
        self.hover_label.setAccessibleName("Values at the pointer")
        self.hover_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)  # never widens the page
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.hover_label)

    # ----- data ------------------------------------------------------------
    def apply_theme(self, force: bool = False) -> None:
        """Background, axes, legend and curves in the active theme's colours (light or dark)."""
        if self._themed_dark == theme.is_dark() and not force:
            return
        self._themed_dark = theme.is_dark()
        c = theme.color
        self.plot.setBackground(c("plot_bg"))
        item = self.plot.getPlotItem()
        for name in ("left", "bottom"):
            axis = item.getAxis(name)
            axis.setPen(pg.mkPen(c("plot_fg")))
            axis.setTextPen(pg.mkPen(c("plot_fg")))
            axis.setLabel(axis.labelText, color=c("plot_fg"))
        self.raw_curve.setPen(pg.mkPen(c("plot_raw"), width=1))
        self.smooth_curve.setPen(pg.mkPen(c("plot_smooth"), width=2.5))
        self.eval_points.setSymbolBrush(pg.mkBrush(c("plot_eval")))
        self.eval_points.setSymbolPen(pg.mkPen(c("plot_bg")))
        self.legend.setLabelTextColor(c("plot_fg"))
        for _sample, label in self.legend.items:  # labels made before the colour change keep theirs
            label.setText(label.text, color=c("plot_fg"))
        self._hover_line.setPen(pg.mkPen(c("plot_hover"), style=Qt.PenStyle.DashLine))

    def changeEvent(self, event) -> None:  # noqa: N802 - the app's palette (light/dark) changed
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.StyleChange):
            self.apply_theme()
        super().changeEvent(event)

    def show_held_out(self, on: bool) -> None:
        """The legend names the held-out dots only for a run that holds examples out."""
        listed = any(sample.item is self.eval_points for sample, _label in self.legend.items)
        if on and not listed:
            self.legend.addItem(self.eval_points, "Held-out loss")
            self.apply_theme(force=True)  # the new label in the theme's colour
        elif not on and listed:
            self.legend.removeItem(self.eval_points)

    def clear(self) -> None:
        self.steps, self.losses, self.eval_steps, self.eval_losses, self.smoothed = [], [], [], [], []
        self.total_steps = 0
        vb = self.plot.getPlotItem().vb  # nothing of the last run's range stays (an empty plot keeps its view)
        vb.setRange(xRange=(0, 10), yRange=(0, 1), padding=0)
        vb.enableAutoRange(x=True, y=True)
        self._redraw()
        self.hover_label.setText(" ")

    def set_total_steps(self, total: int) -> None:
        """Show the run's whole step range, 0..total, from the start, so the
        curve visibly moves toward the end (y keeps following the data)."""
        total = int(total or 0)
        if total <= 0 or total == self.total_steps:
            return
        self.total_steps = total
        self._fit_x()

    def _fit_x(self) -> None:
        if self.total_steps:
            last = max(self.steps[-1:] + self.eval_steps[-1:] + [0.0])
            self.plot.getPlotItem().setXRange(0, max(self.total_steps, last), padding=0.02)

    def add_records(self, records: list[dict]) -> None:
        changed = False
        for r in records:
            step = r.get("step")
            if not isinstance(step, (int, float)):
                continue
            if isinstance(r.get("loss"), (int, float)):
                self.steps.append(float(step))
                self.losses.append(float(r["loss"]))
                changed = True
            if isinstance(r.get("eval_loss"), (int, float)):
                self.eval_steps.append(float(step))
                self.eval_losses.append(float(r["eval_loss"]))
                changed = True
        if changed:
            self._redraw()
            if self.total_steps and max(self.steps[-1:] + self.eval_steps[-1:]) > self.total_steps:
                self._fit_x()

    def _redraw(self) -> None:
        self.smoothed = ema(self.losses, smoothing_weight(len(self.losses)))
        x = np.asarray(self.steps, dtype=float)
        self.raw_curve.setData(x, np.asarray(self.losses, dtype=float))
        self.smooth_curve.setData(x, np.asarray(self.smoothed, dtype=float))
        self.eval_points.setData(np.asarray(self.eval_steps, dtype=float), np.asarray(self.eval_losses, dtype=float))

    # ----- hover -----------------------------------------------------------
    def _on_mouse_moved(self, pos) -> None:
        vb = self.plot.getPlotItem().vb
        if not self.steps or not self.plot.sceneBoundingRect().contains(pos):
            return
        x = vb.mapSceneToView(pos).x()
        self.show_values_at(x)

    def show_values_at(self, x: float) -> str:
        """Show (and return) the values at the step nearest to x."""
        if not self.steps:
            return ""
        i = int(np.argmin(np.abs(np.asarray(self.steps) - x)))
        text = f"Step {self.steps[i]:g}: loss {self.losses[i]:.4f}, smoothed {self.smoothed[i]:.4f}"
        if self.eval_steps:
            j = int(np.argmin(np.abs(np.asarray(self.eval_steps) - x)))
            if abs(self.eval_steps[j] - self.steps[i]) <= max(1.0, 0.02 * (self.steps[-1] or 1)):
                text += f", held-out loss {self.eval_losses[j]:.4f}"
        self._hover_line.setPos(self.steps[i])
        self._hover_line.setVisible(True)
        self.hover_label.setText(text)
        return text
