"""One run, live: state in words, numbers, the loss plot, results and actions."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QFrame, QGridLayout, QHBoxLayout, QLabel, QProgressBar, QPushButton,
                               QSplitter, QVBoxLayout, QWidget)

from trainer.run import status as st
from trainer.run.files import LAUNCHER_LOG
from trainer.run.reader import Run
from trainer.run.status import pid_alive

from ..logic.runview import STATE_COLORS, launch_view, live_numbers, model_words, state_words
from ..process.follower import RunFollower
from ..process.trainer_process import launch_log_tail
from .loss_plot import LossPlot
from .run_results import RunResults

NUMBERS = (("step", "Step"), ("loss", "Loss"), ("learning_rate", "Learning rate"),
           ("tokens_per_second", "Tokens per second"), ("eta", "Time left"), ("elapsed", "Time so far"),
           ("device", "Device"))


class RunPage(QWidget):
    start_requested = Signal(str)
    tools_requested = Signal(str)
    cancel_requested = Signal(str)
    resume_requested = Signal(str)
    open_folder_requested = Signal(str)
    duplicate_requested = Signal(str)
    delete_requested = Signal(str)
    show_log_requested = Signal(str, str, str)  # title, message, log path

    def __init__(self, launch_for: Callable[[Path], object] | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.launch_for = launch_for or (lambda _p: None)
        self.run: Run | None = None
        self.follower: RunFollower | None = None
        self.status: dict = {}
        self.last_train: dict | None = None
        self.view_state = ""

        self.title = QLabel()
        self.title.setObjectName("runTitle")
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.state_label = QLabel()
        self.state_label.setObjectName("stateBadge")
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.awake_note = QLabel("Keeping the computer awake while it trains (the screen may still turn off).")
        self.awake_note.setObjectName("awakeNote")
        self.awake_note.setToolTip("You can turn this off in Settings")
        self.awake_note.hide()
        self.model_label = QLabel()
        self.model_label.setStyleSheet("color:#555")
        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        self.progress.setAccessibleName("Training progress")

        self.error_box = QFrame()
        self.error_box.setObjectName("errorBox")
        eb = QHBoxLayout(self.error_box)
        self.error_text = QLabel()
        self.error_text.setWordWrap(True)
        self.error_text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.show_log_button = QPushButton("Show log")
        self.show_log_button.setToolTip("Show the trainer's full log for this run")
        self.show_log_button.clicked.connect(self._show_log)
        eb.addWidget(self.error_text, 1)
        eb.addWidget(self.show_log_button, 0, Qt.AlignmentFlag.AlignTop)
        self.error_box.hide()

        grid = QGridLayout()
        grid.setHorizontalSpacing(18)
        self.values: dict[str, QLabel] = {}
        for i, (key, label) in enumerate(NUMBERS):
            name = QLabel(label)
            name.setStyleSheet("color:#666")
            value = QLabel("—")
            value.setObjectName(f"value_{key}")
            value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.values[key] = value
            row, col = divmod(i, 4)
            grid.addWidget(name, row * 2, col)
            grid.addWidget(value, row * 2 + 1, col)

        self.buttons: dict[str, QPushButton] = {}
        actions = QHBoxLayout()
        for key, text, tip, signal in (
            ("start", "Start training", "Start training this run (it was made but never started)", self.start_requested),
            ("cancel", "Cancel", "Stop training; the adapter trained so far is saved", self.cancel_requested),
            ("resume", "Resume", "Continue an interrupted or stopped run from its last checkpoint", self.resume_requested),
            ("tools", "Try it…", "Chat with the fine-tuned model, compare it with the base model, "
             "merge it, export it for Ollama or as GGUF, or share the run", self.tools_requested),
            ("open", "Open folder", "Open the run folder in your file manager", self.open_folder_requested),
            ("duplicate", "Duplicate…", "Duplicate as a new run: the new-run wizard with this run's data and settings", self.duplicate_requested),
            ("delete", "Delete…", "Move this run to the trash (asks first)", self.delete_requested),
        ):
            button = QPushButton(text)
            button.setToolTip(tip)
            button.clicked.connect(lambda _=False, s=signal: self.run and s.emit(str(self.run.path)))
            self.buttons[key] = button
            actions.addWidget(button)
        actions.addStretch(1)

        self.plot = LossPlot()
        self.results = RunResults()
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.plot)
        split.addWidget(self.results)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setChildrenCollapsible(False)

        head = QHBoxLayout()
        head.addWidget(self.title)
        head.addWidget(self.state_label)
        head.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(head)
        layout.addWidget(self.model_label)
        layout.addWidget(self.message)
        layout.addWidget(self.awake_note)
        layout.addWidget(self.error_box)
        layout.addWidget(self.progress)
        layout.addLayout(grid)
        layout.addWidget(split, 1)
        layout.addLayout(actions)

    # ----- which run ---------------------------------------------------------
    def show_run(self, path: str | Path | None) -> None:
        self.stop_following()
        self.plot.clear()
        self.last_train = None
        self.status = {}
        self.run = Run(path) if path else None
        if self.run is None:
            return
        cfg = self.run.config_dict()
        self.title.setText(f"<span style='font-size:15pt; font-weight:600'>{self.run.name}</span>")
        self.model_label.setText(f"Model: {model_words(str(cfg.get('model') or ''))}")
        self.model_label.setToolTip(str(cfg.get("model") or ""))
        self.results.show_run(None)
        self.follower = RunFollower(self.run.path, self)
        self.follower.progress_added.connect(self._on_records)
        self.follower.progress_reset.connect(self._on_reset)
        self.follower.status_changed.connect(self._on_status)
        self.follower.results_changed.connect(self._on_results)
        self.follower.start()
        self._on_results()

    def stop_following(self) -> None:
        if self.follower is not None:
            self.follower.stop()
            self.follower.deleteLater()
            self.follower = None

    def refresh(self) -> None:
        """Re-judge the state now (e.g. after this app started the trainer)."""
        if self.follower is not None:
            self.follower.poll(force_status=True)
            self._on_status(self.status or self.run.status())

    # ----- updates -------------------------------------------------------------
    def _on_reset(self) -> None:
        self.plot.clear()
        self.last_train = None

    def _on_records(self, records: list) -> None:
        self.plot.add_records(records)
        train = [r for r in records if "loss" in r]
        if train:
            self.last_train = train[-1]
        self._update_numbers()

    def _on_results(self) -> None:
        if self.run is not None:
            self.results.show_run(self.run)

    def _on_status(self, status: dict) -> None:
        self.status = status
        state = status.get("state") or st.QUEUED
        launch = self.launch_for(self.run.path) if self.run else None
        special = launch_view(status, getattr(launch, "started_at", None), pid_alive(getattr(launch, "pid", 0)))
        message = status.get("message") or ""
        error = status.get("error") if state == st.FAILED else None
        if special == "starting":
            state, message = st.QUEUED, "Starting the trainer…"
        elif special == "failed_to_start":
            state, message = st.FAILED, ""
            tail = launch_log_tail(self.run.path).strip().splitlines()
            error = "The trainer stopped before it could start." + (f" Its last words: {tail[-1][:300]}" if tail else "")
        elif state == st.INTERRUPTED:
            message = "The trainer stopped without finishing (the computer slept, it was closed, or it crashed)." + (
                " Press Resume to continue from the last checkpoint." if self.run.checkpoints() else
                " There is no checkpoint yet, so Resume starts it again.")
        never_started = not status.get("written_state") and special is None
        if never_started:
            message = "This run has not been started yet. Press Start training to begin."
        self.view_state = state
        color = "#7a7a7a" if never_started else STATE_COLORS.get(state, "#555")
        self.state_label.setText("Not started" if never_started else state_words(state))
        self.state_label.setStyleSheet(f"background:{color}; color:white; border-radius:8px; padding:2px 10px;")
        if message.strip().rstrip(".").lower() == state_words(state).lower():
            message = ""  # the badge already says it
        self.message.setText(message)
        self.message.setVisible(bool(message))
        self.error_box.setVisible(bool(error))
        self.error_text.setText(f"<b>What went wrong:</b> {error}" if error else "")
        total, step = status.get("total_steps") or 0, status.get("step") or 0
        self.progress.setRange(0, max(1, int(total)))
        self.progress.setValue(int(min(step, total)) if total else 0)
        self.progress.setFormat(f"{step} of {total} steps" if total else self.state_label.text())
        active = state in st.ACTIVE_STATES and not never_started
        self.awake_note.setVisible(active and bool(status.get("keeping_awake")))
        self.buttons["start"].setVisible(never_started)
        self.buttons["cancel"].setVisible(not never_started)
        asked = self.run.path.joinpath(st.CANCEL_FILE).exists()
        self.buttons["cancel"].setEnabled(active)
        self.buttons["cancel"].setText("Stop now…" if active and asked else "Cancel")
        self.buttons["cancel"].setToolTip(
            "The trainer was asked to stop and has not yet; stop it at once (the last checkpoint is kept)"
            if active and asked else "Stop training; the adapter trained so far is saved")
        self.buttons["resume"].setVisible(not never_started)
        self.buttons["resume"].setEnabled(state in (st.INTERRUPTED, st.CANCELLED, st.FAILED))
        self.buttons["delete"].setEnabled(not active)
        self.buttons["tools"].setEnabled(state in (st.DONE, st.CANCELLED) and self.run.has_adapter())
        self._update_numbers()

    def _update_numbers(self) -> None:
        for key, text in live_numbers(self.status, self.last_train).items():
            self.values[key].setText(text)

    def _show_log(self) -> None:
        if self.run is not None:
            log = self.run.log_path
            if not log.is_file():
                log = self.run.path / LAUNCHER_LOG
            self.show_log_requested.emit(f"{self.run.name}: what went wrong", self.error_text.text(), str(log))
