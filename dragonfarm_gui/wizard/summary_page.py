"""Wizard page 5, Summary: everything chosen, then Start (creates the run)."""
from __future__ import annotations

import html

from PySide6.QtWidgets import QCheckBox, QTextBrowser, QVBoxLayout

from trainer.run.config import ConfigError
from trainer.dataimport import DataImportError, create_run, eval_count

from ..logic.new_run import settings_line
from .common import BlockingPage


class SummaryPage(BlockingPage):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setTitle("Ready")
        self.setSubTitle("Check your choices. Press Start to make the run folder and begin training.")
        self.summary = QTextBrowser()
        self.summary.setAccessibleName("Summary of your choices")
        self.start_box = QCheckBox("Start training as soon as the run is made")
        self.start_box.setChecked(True)
        self.start_box.setToolTip("Untick to only make the run folder; you can start it later from its page")
        self.start_box.toggled.connect(self._start_toggled)
        self.error: str | None = None
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary, 1)
        layout.addWidget(self.start_box)
        layout.addWidget(self.reason)

    def initializePage(self) -> None:  # noqa: N802
        self.error = None
        self.summary.setHtml(self.summary_html())
        self._start_toggled(self.start_box.isChecked())
        self.changed()

    def _start_toggled(self, on: bool) -> None:
        self.choices.start_now = on
        if self.wizard() is not None:
            self.wizard().setButtonText(self.wizard().WizardButton.FinishButton, "Start" if on else "Create run")

    def summary_html(self) -> str:
        c = self.choices
        r = c.report
        usable = r.counts.usable if r is not None else 0
        held = 0 if c.eval_path else eval_count(usable, c.eval_fraction)
        rows = [
            ("Examples", f"{c.data_path.name if c.data_path else '?'}: {usable - held:,} to train on, "
                         + (f"held-out file {c.eval_path.name}" if c.eval_path else f"{held:,} held out")),
            ("Columns", r.shape_words if r is not None else "?"),
            ("Model", c.model + (" (needs your Hugging Face token)" if c.gated else "")),
            ("Run folder", str((c.runs_dir / c.name) if c.runs_dir else "?")),
            ("Settings", settings_line(c.settings)),
        ]
        body = "".join(f"<tr><td style='color:#555; padding:4px 12px 4px 0' valign='top'>{html.escape(k)}</td>"
                       f"<td style='padding:4px 0'>{html.escape(v)}</td></tr>" for k, v in rows)
        return f"<table>{body}</table>"

    def problem(self) -> str | None:
        return self.error

    def validatePage(self) -> bool:  # noqa: N802
        """Make the run folder with the same function `dragonfarm new` uses."""
        c = self.choices
        try:
            c_run = create_run(c.data_path, **c.create_run_kwargs())
        except (DataImportError, ConfigError, OSError) as exc:
            self.error = f"The run could not be made: {getattr(exc, 'message', None) or exc}"
            self.changed()
            return False
        self.wizard().created_run = c_run
        self.wizard().start_now = c.start_now
        return True
