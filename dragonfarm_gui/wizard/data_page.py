"""Wizard page 1, Data: the file, its shape and mapping, a preview as chats,
the problems with row numbers, and the held-out split."""
from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QComboBox, QFileDialog, QFormLayout, QGridLayout, QGroupBox, QHBoxLayout, QLabel,
                               QLineEdit, QListWidget, QPushButton, QSpinBox, QSplitter, QTextBrowser,
                               QVBoxLayout, QWidget)

from trainer.dataimport import DataImportError, Mapping, inspect_file, split_sentence
from trainer.dataimport.shapes import CHAT_SHAPES

from ..logic.dataview import (CANCELLED_SCAN, QUICK_ROWS, chats_html, detected_html, problems_label,
                              scan_progress_words)
from ..logic.new_run import example_datasets
from ..logic.problem_words import problem_words
from ..process.worker import JobRunner
from .common import BlockingPage, ProgressRow

log = logging.getLogger(__name__)

FILE_FILTER = "Examples (*.csv *.tsv *.xlsx *.json *.jsonl);;All files (*)"
NONE = "(none)"
COLUMN_FIELDS = (("prompt_column", "Prompt column", "The column with what the person asks", False),
                 ("reply_column", "Reply column", "The column with the reply the model should learn to give", False),
                 ("input_column", "Extra input column", "Optional: a column added under the prompt", True),
                 ("system_column", "System prompt column", "Optional: a column with instructions for each row", True))


class DataPage(BlockingPage):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setTitle("Your examples")
        self.setSubTitle("Choose (or drop here) a spreadsheet or file of example prompts and the replies you want.")
        self.setAcceptDrops(True)
        self.error: str | None = None
        self.eval_error: str | None = None
        self.scan_cancelled = False
        # The file is scanned in a worker: the first QUICK_ROWS rows, then all of them.
        self.scanner = JobRunner(self)
        self.scanner.partial.connect(self._scan_partial)
        self.scanner.progress.connect(self._scan_progress)
        self.scanner.done.connect(self._scan_done)
        self.scanner.failed.connect(self._scan_failed)
        self.scanner.cancelled.connect(self._scan_cancelled)
        self.eval_checker = JobRunner(self)
        self.eval_checker.done.connect(self._eval_checked)
        self.eval_checker.failed.connect(self._eval_failed)
        for runner in (self.scanner, self.eval_checker):
            runner.busy_changed.connect(self._busy_changed)

        self.path_edit = QLineEdit()
        self.path_edit.setReadOnly(True)
        self.path_edit.setFocusPolicy(Qt.FocusPolicy.ClickFocus)  # start on "Choose file…", not a selected path
        self.path_edit.setPlaceholderText("No file chosen yet")
        self.path_edit.setToolTip("The file with your examples: .csv, .tsv, .xlsx, .json or .jsonl")
        choose = self.choose_button = QPushButton("Choose file…")
        choose.setToolTip("Pick the file with your examples")
        choose.clicked.connect(self._choose)
        self.example_button = QPushButton("Use the example dataset")
        examples = example_datasets()
        self.example_button.setEnabled(bool(examples))
        self.example_button.setToolTip(f"A small ready-made dataset ({examples[0].name})" if examples
                                       else "The example dataset is not installed")
        self.example_button.clicked.connect(self.use_example)
        self.sheet_combo = QComboBox()
        self.sheet_combo.setToolTip("The sheet of the workbook to read")
        self.sheet_combo.activated.connect(lambda _i: self.inspect())
        self.sheet_label = QLabel("Sheet:")
        self.detected = QLabel()
        self.detected.setWordWrap(True)

        self.mapping_box = QGroupBox("Which columns make the chat")
        self.mapping_form = QFormLayout(self.mapping_box)
        self.combos: dict[str, QComboBox] = {}
        for key, label, tip, _optional in COLUMN_FIELDS + (("messages_column", "Chat column",
                                                            "The column holding each whole conversation", False),):
            combo = QComboBox()
            combo.setToolTip(tip)
            combo.activated.connect(lambda _i: self.inspect(user_mapping=True))
            self.combos[key] = combo
            self.mapping_form.addRow(label + ":", combo)
        self.system_edit = QLineEdit()
        self.system_edit.setPlaceholderText("Optional, e.g. You are a friendly support agent for Acme.")
        self.system_edit.setToolTip("One instruction given to the model before every example that has none")
        self.system_edit.editingFinished.connect(lambda: self.inspect(user_mapping=True))
        self.mapping_form.addRow("System prompt:", self.system_edit)

        self.eval_spin = QSpinBox()
        self.eval_spin.setRange(0, 50)
        self.eval_spin.setSuffix(" %")
        self.eval_spin.setValue(10)
        self.eval_spin.setToolTip("This share of your examples is kept aside, never trained on, to check "
                                  "whether the model learned or only memorised")
        self.eval_spin.valueChanged.connect(self._split_changed)
        self.eval_file_edit = QLineEdit()
        self.eval_file_edit.setReadOnly(True)
        self.eval_file_edit.setPlaceholderText("or a separate held-out file (optional)")
        self.eval_file_edit.setToolTip("A separate file of held-out examples, instead of keeping a share aside")
        eval_choose = QPushButton("Choose…")
        eval_choose.setToolTip("Pick a separate file of held-out examples")
        eval_choose.clicked.connect(self._choose_eval)
        eval_clear = QPushButton("Clear")
        eval_clear.setToolTip("Use a share of the examples instead of a separate file")
        eval_clear.clicked.connect(lambda: self.set_eval_file(None))
        self.split_label = QLabel()
        self.split_label.setWordWrap(True)  # the few-examples sentence runs over two lines

        self.preview = QTextBrowser()
        self.preview.setToolTip("The first examples as the model will see them")
        self.preview.setAccessibleName("Preview of the first examples")
        self.problems = QListWidget()
        self.problems.setWordWrap(True)
        self.problems.setResizeMode(QListWidget.ResizeMode.Adjust)
        self.problems.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.problems.setToolTip("Rows that will be skipped (errors) or used with care (warnings)")
        self.problems.setAccessibleName("Problems found in the file")
        self.problems_label = QLabel("Problems")

        self.scan_row = ProgressRow("Checking the file", "Stop checking")
        self.scan_row.button_clicked.connect(self._scan_button_clicked)

        top = QGridLayout()
        top.addWidget(QLabel("File:"), 0, 0)
        top.addWidget(self.path_edit, 0, 1)
        top.addWidget(choose, 0, 2)
        top.addWidget(self.example_button, 0, 3)
        top.addWidget(self.sheet_label, 1, 0)
        top.addWidget(self.sheet_combo, 1, 1)
        split_row = QHBoxLayout()
        split_row.addWidget(QLabel("Held out to check learning:"))
        split_row.addWidget(self.eval_spin)
        split_row.addWidget(self.eval_file_edit, 1)
        split_row.addWidget(eval_choose)
        split_row.addWidget(eval_clear)
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        ll.addWidget(self.mapping_box)
        ll.addWidget(self.problems_label)
        ll.addWidget(self.problems, 100)
        ll.addStretch(1)  # takes the room when there are no problems to list
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(left)
        splitter.addWidget(self.preview)
        splitter.setSizes([380, 480])
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.detected)
        layout.addWidget(self.scan_row)
        layout.addWidget(splitter, 1)
        layout.addLayout(split_row)
        layout.addWidget(self.split_label)
        layout.addWidget(self.reason)
        self._show_mapping(None)

    def initializePage(self) -> None:  # noqa: N802
        self.choose_button.setFocus()

    # ----- choosing ---------------------------------------------------------------
    def _choose(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Your examples", "", FILE_FILTER)
        if path:
            self.set_file(path)

    def _choose_eval(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Held-out examples", "", FILE_FILTER)
        if path:
            self.set_eval_file(path)

    def use_example(self) -> None:
        examples = example_datasets()
        if examples:
            self.set_file(examples[0])

    def dragEnterEvent(self, event) -> None:  # noqa: N802
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:  # noqa: N802
        urls = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        if urls:
            self.set_file(urls[0])
            event.acceptProposedAction()

    def set_file(self, path: str | Path, sheet: str | None = None) -> None:
        c = self.choices
        c.data_path, c.sheet, c.mapping = Path(path), sheet, None
        self.path_edit.setText(str(path))
        self.system_edit.clear()
        self.inspect()

    def set_eval_file(self, path: str | Path | None) -> None:
        self.choices.eval_path = Path(path) if path else None
        self.eval_file_edit.setText(str(path) if path else "")
        self.eval_spin.setEnabled(path is None)
        self.eval_error = None
        if path:
            mapping = self.choices.mapping
            self.eval_checker.start(lambda job: inspect_file(path, mapping=mapping, preview_rows=0,
                                                             progress=lambda rows: job.check("rows", rows)))
        else:
            self.eval_checker.cancel(quiet=True)
        self._split_changed()

    def _eval_checked(self, report) -> None:
        if not report.ok:
            self.eval_error = f"The held-out file {Path(report.path).name} has no usable examples with these columns."
        self._split_changed()

    def _eval_failed(self, exc) -> None:
        self.eval_error = f"The held-out file cannot be used: {getattr(exc, 'message', None) or exc}"
        self._split_changed()

    def set_mapping(self, **fields) -> None:
        """Change the mapping as the drop-downs do (tests and Duplicate use this)."""
        mapping = Mapping(**{**(self.choices.mapping.to_dict() if self.choices.mapping else {}), **fields})
        self.inspect(mapping=mapping)

    # ----- inspecting -------------------------------------------------------------
    def _user_mapping(self) -> Mapping:
        current = self.choices.mapping
        if current is not None and current.shape in CHAT_SHAPES:
            return Mapping(shape=current.shape, messages_column=self.combos["messages_column"].currentText(),
                           system_prompt=self.system_edit.text().strip() or "")
        values = {}
        for key, _label, _tip, _optional in COLUMN_FIELDS:
            text = self.combos[key].currentText()
            values[key] = "" if text == NONE else text
        return Mapping(system_prompt=self.system_edit.text().strip() or "", **values)

    def inspect(self, user_mapping: bool = False, mapping: Mapping | None = None) -> None:
        """Scan the file in the worker (cancelling any scan before it): the first rows
        show at once, every row's count and problems follow."""
        c = self.choices
        if c.data_path is None:
            return
        if mapping is None and user_mapping:
            mapping = self._user_mapping()
        if mapping is None and not user_mapping:
            mapping = c.mapping
        sheet = (self.sheet_combo.currentText() if self.sheet_combo.count() > 1 else c.sheet) or None
        path, max_length = c.data_path, int(c.settings.get("max_length", 1024))

        def scan(job):
            quick = inspect_file(path, sheet=sheet, mapping=mapping, max_length=max_length, preview_rows=6,
                                 limit=QUICK_ROWS)
            if quick.complete:
                return quick
            job.partial(quick)
            return inspect_file(path, sheet=quick.sheet, mapping=quick.mapping, max_length=max_length,
                                preview_rows=6, progress=lambda rows: job.check("rows", rows))

        self.error, self.scan_cancelled = None, False
        self.scanner.start(scan)
        self.scan_row.show_busy(scan_progress_words(0), tip="Stop checking the file")

    def busy(self) -> bool:
        return self.scanner.busy() or self.eval_checker.busy()

    def stop_work(self) -> None:
        """Cancel every scan (the wizard is closing); nothing waits for the worker."""
        self.scanner.cancel(quiet=True)
        self.eval_checker.cancel(quiet=True)

    def _busy_changed(self, _busy: bool = False) -> None:
        if not self.scanner.busy():
            if self.scan_cancelled:
                self.scan_row.show_idle("Checking was cancelled.", "Check again", "Check every row of the file")
            else:
                self.scan_row.show_idle()
        self.changed()

    def _scan_button_clicked(self) -> None:
        if self.scanner.busy():
            self.scanner.cancel()
        else:
            self.inspect()

    def _scan_progress(self, _phase: str, rows: int) -> None:
        self.scan_row.show_busy(scan_progress_words(rows), tip="Stop checking the file")

    def _scan_partial(self, report) -> None:
        self._take_report(report)
        self.scan_row.show_busy(scan_progress_words(report.counts.rows), tip="Stop checking the file")

    def _scan_done(self, report) -> None:
        self._take_report(report)
        if self.choices.eval_path is not None:  # check the held-out file again with these columns
            self.set_eval_file(self.choices.eval_path)

    def _scan_failed(self, exc) -> None:
        if isinstance(exc, DataImportError):
            self.error = exc.message + (f" {exc.fix}" if exc.fix else "")
        else:
            log.warning("could not read %s: %r", self.choices.data_path, exc)
            self.error = f"The file could not be read: {exc}. Check that it is a spreadsheet or text file and try again."
        self._take_report(None)

    def _scan_cancelled(self) -> None:
        self.scan_cancelled = True
        self._busy_changed()

    def _take_report(self, report) -> None:
        c = self.choices
        c.report = report
        c.mapping = report.mapping if report else None
        c.sheet = report.sheet if report else None
        self._show_report(report)
        self.changed()

    def _show_report(self, report) -> None:
        self.sheet_combo.clear()
        if report is not None and len(report.sheets) > 1:
            self.sheet_combo.addItems(report.sheets)
            self.sheet_combo.setCurrentText(report.sheet or report.sheets[0])
        many = report is not None and len(report.sheets) > 1
        self.sheet_combo.setVisible(many)
        self.sheet_label.setVisible(many)
        self._show_mapping(report)
        self.preview.setHtml(chats_html(report.preview if report else []))
        self.problems.clear()
        if report is None:
            self.detected.setText("")
            self.problems_label.setText("Problems")
            self._split_changed()
            return
        self.detected.setText(detected_html(report))
        for p in report.problems:
            text = ("Skipped: " if p.severity == "error" else "Note: ") + problem_words(p)
            self.problems.addItem(text)
            self.problems.item(self.problems.count() - 1).setToolTip(text)
        self.problems_label.setText(problems_label(report))
        self.problems.setVisible(bool(report.problems_total))
        self._split_changed()

    def _show_mapping(self, report) -> None:
        chat = report is not None and report.mapping.shape in CHAT_SHAPES
        columns = report.columns if report is not None else []
        for key, combo in self.combos.items():
            combo.blockSignals(True)
            combo.clear()
            optional = key in ("input_column", "system_column")
            combo.addItems(([NONE] if optional else []) + columns)
            value = getattr(report.mapping, key, None) if report is not None else None
            combo.setCurrentText(value or (NONE if optional else ""))
            combo.blockSignals(False)
            visible = (key == "messages_column") == chat
            self.mapping_form.setRowVisible(combo, visible and report is not None)
        self.mapping_form.setRowVisible(self.system_edit, report is not None)
        if report is not None and report.mapping.system_prompt and not self.system_edit.text():
            self.system_edit.setText(report.mapping.system_prompt)
        self.mapping_box.setEnabled(report is not None)

    def _split_changed(self) -> None:
        c = self.choices
        c.eval_fraction = self.eval_spin.value() / 100.0
        usable = c.report.counts.usable if c.report is not None else 0
        if usable:
            self.split_label.setText(split_sentence(usable, c.eval_fraction, bool(c.eval_path),
                                                    add_questions="the last page lets you add a few test "
                                                                  "questions of your own to see that")
                                     + ("" if c.report.complete else " (So far: the rest is being checked.)"))
        else:
            self.split_label.setText("")
        self.changed()

    def problem(self) -> str | None:
        c = self.choices
        if c.data_path is None:
            return "Choose a file with your examples, or use the example dataset, to continue."
        if self.scan_cancelled:
            return CANCELLED_SCAN
        if self.error:
            return self.error
        report = c.report
        if report is None or not report.ok:
            errors = [problem_words(p) for p in (report.errors if report else [])]
            first = errors[0] if errors else "no row has both a prompt and a reply"
            return f"None of the rows can be used yet: {first} Change the columns above or fix the file."
        if self.eval_error:
            return self.eval_error
        return None
