"""Wizard page 5, Summary: everything chosen, then Start (creates the run)."""
from __future__ import annotations

import html
import logging
import shutil
from pathlib import Path

from PySide6.QtWidgets import QCheckBox, QGroupBox, QLabel, QPlainTextEdit, QTextBrowser, QVBoxLayout

from trainer.run.config import MAX_CHECK_QUESTIONS, ConfigError, check_question_problems
from trainer.dataimport import DataImportError, create_run, eval_count

from ..logic import theme
from ..logic.dataview import create_progress
from ..logic.new_run import questions_from_text, settings_line
from ..process.worker import JobRunner
from .common import BlockingPage, ProgressRow

log = logging.getLogger(__name__)


class SummaryPage(BlockingPage):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setTitle("Ready")
        self.setSubTitle("Check your choices. Press Start to make the run folder and begin training.")
        self.summary = QTextBrowser()
        self.summary.setAccessibleName("Summary of your choices")
        self.questions_box = QGroupBox("Your own test questions (optional)")
        about = QLabel("New questions, worded differently from your examples. After training, the sample "
                       "replies show the model's answers to them before and after, so you can see whether it "
                       f"learned or only memorised. One per line, at most {MAX_CHECK_QUESTIONS}.")
        about.setWordWrap(True)
        about.setProperty("tone", "muted")
        self.questions_edit = QPlainTextEdit()
        self.questions_edit.setPlaceholderText("e.g. My order has not arrived yet. What can I do?")
        self.questions_edit.setAccessibleName("Your own test questions, one per line")
        self.questions_edit.setToolTip("Questions the model never sees in training; its replies to them show "
                                       "what it learned")
        self.questions_edit.setTabChangesFocus(True)
        line = self.questions_edit.fontMetrics().lineSpacing()
        self.questions_edit.setFixedHeight(line * 4 + 14)
        self.questions_edit.textChanged.connect(self._questions_changed)
        box = QVBoxLayout(self.questions_box)
        box.addWidget(about)
        box.addWidget(self.questions_edit)
        self.start_box = QCheckBox("Start training as soon as the run is made")
        self.start_box.setChecked(True)
        self.start_box.setToolTip("Untick to only make the run folder; you can start it later from its page")
        self.start_box.toggled.connect(self._start_toggled)
        self.error: str | None = None
        self.created: Path | None = None
        self.total_rows = 0
        self.progress_row = ProgressRow("Making the run folder", "Stop")
        self.progress_row.button_clicked.connect(self.cancel_creation)
        self.creator = JobRunner(self)
        self.creator.progress.connect(self._progress)
        self.creator.done.connect(self._created)
        self.creator.failed.connect(self._failed)
        self.creator.cancelled.connect(self._cancelled)
        self.creator.busy_changed.connect(self._busy_changed)
        layout = QVBoxLayout(self)
        # Five short rows: sized to them, the spare height goes below (no big empty box).
        self.summary.setMaximumHeight(self.summary.fontMetrics().lineSpacing() * 9 + 24)
        layout.addWidget(self.summary, 1)
        layout.addWidget(self.questions_box)
        layout.addWidget(self.start_box)
        layout.addWidget(self.progress_row)
        layout.addWidget(self.reason)
        layout.addStretch(1)

    def initializePage(self) -> None:  # noqa: N802
        self.error = None
        self.created = None
        self.progress_row.show_idle()
        self.summary.setHtml(self.summary_html())
        if questions_from_text(self.questions_edit.toPlainText()) != self.choices.questions:
            self.questions_edit.setPlainText("\n".join(self.choices.questions))
        self._start_toggled(self.start_box.isChecked())
        self.changed()

    def _questions_changed(self) -> None:
        if self.wizard() is None:
            return
        self.choices.questions = questions_from_text(self.questions_edit.toPlainText())
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
        body = "".join(f"<tr><td style='color:{theme.color('muted')}; padding:4px 12px 4px 0' valign='top'>"
                       f"{html.escape(k)}</td>"
                       f"<td style='padding:4px 0'>{html.escape(v)}</td></tr>" for k, v in rows)
        return f"<table>{body}</table>"

    def problem(self) -> str | None:
        wrong = check_question_problems(self.choices.questions)
        if wrong:
            return "Your test questions: " + wrong[0].split(": ", 1)[1]
        return self.error

    def busy(self) -> bool:
        return self.creator.busy()

    def validatePage(self) -> bool:  # noqa: N802
        """Finish: make the run folder in the worker, with the same function
        `dragonfarm new` uses; the wizard closes when it is made."""
        if self.created is not None:
            self.wizard().created_run = self.created
            self.wizard().start_now = self.choices.start_now
            return True
        if not self.creator.busy():
            self.start_creation()
        return False

    def start_creation(self) -> None:
        c = self.choices
        data_path, kwargs = c.data_path, c.create_run_kwargs()
        self.total_rows = c.report.counts.rows if c.report is not None else 0
        self.error = None
        self.creator.start(lambda job: create_run(data_path, progress=job.check, **kwargs),
                           discard=lambda run: shutil.rmtree(run, ignore_errors=True))
        self.progress_row.show_busy("Making the run folder…", 0, tip="Stop making the run; nothing is kept")

    def cancel_creation(self) -> None:
        """Cancel: the worker stops and removes what it made so far."""
        self.creator.cancel()

    def stop_work(self) -> None:
        self.creator.cancel(quiet=True)

    def cleanupPage(self) -> None:  # noqa: N802 - Back: a run being made is cancelled (and removed)
        self.stop_work()
        self.progress_row.show_idle()
        super().cleanupPage()

    def _progress(self, phase: str, rows: int) -> None:
        per_mille, words = create_progress(phase, rows, self.total_rows)
        self.progress_row.show_busy(words, per_mille, tip="Stop making the run; nothing is kept")

    def _busy_changed(self, busy: bool) -> None:
        if not busy:
            self.progress_row.show_idle()
        self.start_box.setEnabled(not busy)
        self.changed()

    def _created(self, run: Path) -> None:
        self.created = Path(run)
        if self.wizard() is not None:
            self.wizard().accept()  # validatePage now says yes

    def _failed(self, exc: BaseException) -> None:
        if isinstance(exc, (DataImportError, ConfigError, OSError)):
            words = getattr(exc, "message", None) or str(exc)
            fix = getattr(exc, "fix", "")
            self.error = f"The run could not be made: {words}" + (f" {fix}" if fix else "")
        else:
            log.error("run creation failed", exc_info=exc)
            self.error = f"The run could not be made: {exc}. The full message is in the log."
        self.changed()

    def _cancelled(self) -> None:
        self.progress_row.show_idle("Cancelled: no run folder was made.")
