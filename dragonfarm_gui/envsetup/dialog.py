"""The first-use / Repair dialog: runs the setup steps one after another with
QProcess (never blocking the GUI thread), with a progress bar, the current
step, the log, Cancel and Retry.

`open_setup_dialog(parent, repair=False) -> bool` is the entry point for the
app (before the first training or device check) and for Settings' Repair.
"""
from __future__ import annotations

import os
from typing import Callable

from PySide6.QtCore import QProcess, QProcessEnvironment, Qt, Signal
from PySide6.QtGui import QFont, QFontDatabase
from PySide6.QtWidgets import (QDialog, QHBoxLayout, QLabel, QPlainTextEdit, QProgressBar, QPushButton,
                               QVBoxLayout, QWidget)

from trainer.run import launch

from .runner import Progress, SetupResult, SetupSession
from .steps import SetupContext, SetupError, environment_state, make_context

INTRO = ("DragonFarm needs its training tools before the first training: Python, PyTorch and a few "
         "libraries. They are downloaded once (about 2 to 4 GB) into a folder of their own.")
REPAIR_INTRO = ("Repair builds the training tools again from scratch. Your runs and models are not touched. "
                "The current tools keep working until the new ones are complete.")


class EnvSetupDialog(QDialog):
    setup_succeeded = Signal()
    setup_failed = Signal(str)

    def __init__(self, parent: QWidget | None = None, repair: bool = False,
                 context_factory: Callable[[], SetupContext] = make_context):
        super().__init__(parent)
        self.setWindowTitle("Repair the training tools" if repair else "Set up the training tools")
        self.setMinimumWidth(560)
        self._factory = context_factory
        self._session: SetupSession | None = None
        self._proc: QProcess | None = None
        self._buffer = b""
        self._cancelling = False
        self._close_when_stopped = False
        self._ended = False
        self.result_info: SetupResult | None = None
        self._build(REPAIR_INTRO if repair else INTRO)

    # -- layout ----------------------------------------------------------
    def _build(self, intro: str) -> None:
        self.intro_label = QLabel(intro)
        self.intro_label.setWordWrap(True)
        self.step_label = QLabel("Ready to start.")
        self.progress_bar = QProgressBar()
        self.progress_bar.setRange(0, 1)
        self.progress_bar.setValue(0)
        self.progress_bar.setFormat("%v of %m steps done")
        self.message_label = QLabel()
        self.message_label.setObjectName("errorBox")     # the app's stylesheet colours it
        self.message_label.setContentsMargins(8, 6, 8, 6)
        self.message_label.setWordWrap(True)
        self.message_label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.message_label.hide()
        self.log_view = QPlainTextEdit()
        self.log_view.setReadOnly(True)
        self.log_view.setMaximumBlockCount(5000)
        self.log_view.setFont(QFontDatabase.systemFont(QFontDatabase.FixedFont))
        self.start_button = QPushButton("Start")
        self.retry_button = QPushButton("Retry")
        self.cancel_button = QPushButton("Cancel")
        self.close_button = QPushButton("Close")
        self.retry_button.hide()
        self.start_button.clicked.connect(self.start)
        self.retry_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self.cancel)
        self.close_button.clicked.connect(self.reject)
        bold = QFont(self.step_label.font())
        bold.setBold(True)
        self.step_label.setFont(bold)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        for button in (self.start_button, self.retry_button, self.cancel_button, self.close_button):
            buttons.addWidget(button)
        box = QVBoxLayout(self)
        for widget in (self.intro_label, self.step_label, self.progress_bar, self.message_label):
            box.addWidget(widget)
        box.addWidget(self.log_view, 1)
        box.addLayout(buttons)
        self._set_running(False)

    def _set_running(self, running: bool) -> None:
        self.start_button.setVisible(not running and self._session is None and self.result_info is None)
        self.cancel_button.setEnabled(running)
        self.close_button.setEnabled(not running)

    def is_running(self) -> bool:
        return self._session is not None and not self._ended

    # -- running ---------------------------------------------------------
    def start(self) -> None:
        """Start (or Retry) the whole setup from its first step."""
        if self.is_running():
            return
        self.message_label.hide()
        self.retry_button.hide()
        self.result_info = None
        self._cancelling = False
        self._ended = False
        try:
            ctx = self._factory()
        except SetupError as exc:
            self._session = None
            self._show_failure(str(exc))
            return
        self._session = SetupSession(ctx, self._on_progress)
        self.progress_bar.setRange(0, self._session.total)
        self.progress_bar.setValue(0)
        self.log_view.appendPlainText(f"{ctx.choice.reason} {ctx.choice.hint}".strip())
        self._set_running(True)
        try:
            self._session.open_log()
        except OSError as exc:
            self._end(SetupResult(False, f"DragonFarm cannot write to {ctx.layout.base} ({exc.strerror})."))
            return
        self._advance()

    def _advance(self) -> None:
        session = self._session
        assert session is not None
        try:
            while session.has_next():
                argv = session.start_next()
                if argv:
                    self._start_process(argv, session.environment())
                    return
            self.progress_bar.setValue(session.total)
            self._end(session.succeed())
        except SetupError as exc:
            self._end(session.fail(str(exc)))

    def _start_process(self, argv: list[str], env: dict[str, str]) -> None:
        proc = QProcess(self)
        environment = QProcessEnvironment()
        for key, value in env.items():
            environment.insert(key, value)
        proc.setProcessEnvironment(environment)
        proc.setProcessChannelMode(QProcess.MergedChannels)
        proc.setWorkingDirectory(os.fspath(self._session.ctx.layout.base))
        proc.readyReadStandardOutput.connect(self._read_output)
        proc.finished.connect(self._process_finished)
        proc.errorOccurred.connect(self._process_error)
        self._proc = proc
        self._buffer = b""
        proc.start(argv[0], argv[1:])

    def _read_output(self) -> None:
        if self._proc is None:
            return
        self._buffer += bytes(self._proc.readAllStandardOutput())
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            self._session.add_output(line.decode("utf-8", "replace"))

    def _process_error(self, error: QProcess.ProcessError) -> None:
        if error == QProcess.FailedToStart and self._proc is not None:
            self._step_done(None, f"Could not start {self._proc.program()}: {self._proc.errorString()}")

    def _process_finished(self, exit_code: int, exit_status: QProcess.ExitStatus) -> None:
        self._read_output()
        if self._buffer:
            self._session.add_output(self._buffer.decode("utf-8", "replace"))
            self._buffer = b""
        self._step_done(exit_code if exit_status == QProcess.NormalExit else -1, "")

    def _step_done(self, exit_code: int | None, error: str) -> None:
        proc, self._proc = self._proc, None
        if proc is None:   # the end was already handled (finished after errorOccurred)
            return
        proc.deleteLater()
        session = self._session
        if self._cancelling:
            self._end(session.cancel())
            return
        try:
            session.command_finished(exit_code, error)
        except SetupError as exc:
            self._end(session.fail(str(exc)))
            return
        self._advance()

    def cancel(self) -> None:
        if not self.is_running():
            return
        self._cancelling = True
        self.step_label.setText("Cancelling\u2026")
        if self._proc is not None and self._proc.state() != QProcess.NotRunning:
            self._proc.kill()     # finished() follows and ends the session
        else:
            self._end(self._session.cancel())

    def _end(self, result: SetupResult) -> None:
        self._ended = True
        self.result_info = result
        self._set_running(False)
        if result.ok:
            self.step_label.setText("Done.")
            self.setup_succeeded.emit()
            self.accept()
        elif result.cancelled:
            self.step_label.setText("Cancelled.")
            self.message_label.setText(result.message)
            self.message_label.show()
            self.retry_button.show()
            if self._close_when_stopped:
                self.reject()
        else:
            self._show_failure(result.message)

    def _show_failure(self, message: str) -> None:
        self.step_label.setText("Setup did not finish.")
        self.message_label.setText(message)
        self.message_label.show()
        self.retry_button.show()
        self.start_button.hide()
        self._set_running(False)
        self.setup_failed.emit(message)

    # -- progress and closing ------------------------------------------------
    def _on_progress(self, progress: Progress) -> None:
        if progress.line is None:
            self.step_label.setText(f"Step {progress.index} of {progress.total}: {progress.title}")
            self.progress_bar.setValue(progress.index - 1)
            self.log_view.appendPlainText(f"\u25b6 {progress.title}")
        else:
            self.log_view.appendPlainText(progress.line)

    def reject(self) -> None:
        if self.is_running():      # closing while running cancels first, then closes
            self._close_when_stopped = True
            self.cancel()
            return
        super().reject()

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt override
        if self.is_running():
            event.ignore()
            self.reject()
            return
        super().closeEvent(event)


def needs_setup() -> bool:
    """True when training needs the managed environment and it is missing,
    half-made, or made for another version's pins."""
    if os.environ.get("DRAGONFARM_PYTHON") or not launch.is_frozen():
        return False
    return environment_state() != "ready"


def open_setup_dialog(parent: QWidget | None = None, repair: bool = False) -> bool:
    """Show the setup (or Repair) dialog modally. True when the environment is
    ready afterwards; then the caller opens the device check."""
    if not repair and not needs_setup():
        return True
    if not repair and launch.is_frozen() and environment_state() == "outdated":
        repair = True     # an update needs newer tools: rebuild, keeping the old ones until done
    dialog = EnvSetupDialog(parent, repair=repair)
    try:
        return dialog.exec() == QDialog.Accepted and bool(dialog.result_info and dialog.result_info.ok)
    finally:
        dialog.deleteLater()
