"""One run, live: state in words, numbers, the loss plot, results and actions."""
from __future__ import annotations

import html
from pathlib import Path
from typing import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (QFrame, QGridLayout, QHBoxLayout, QLabel, QProgressBar, QPushButton, QSizePolicy,
                               QSplitter, QVBoxLayout, QWidget)

from trainer.run import status as st
from trainer.run.files import LAUNCHER_LOG
from trainer.run.reader import Run

from ..logic.runstatus import status_view
from ..logic.runview import launch_view, live_numbers, model_words
from ..process.follower import RunFollower
from ..process.trainer_process import launch_log_tail
from ..style import set_style_property
from .elided_label import ElidedLabel
from .loss_plot import LossPlot
from .run_results import RunResults

NUMBERS = (("step", "Step"), ("loss", "Loss"), ("learning_rate", "Learning rate"),
           ("tokens_per_second", "Tokens per second"), ("eta", "Time left"), ("elapsed", "Time so far"),
           ("device", "Device"))


def _shrinkable(label: QLabel, min_width: int = 120) -> None:
    """Its text (a long path, an unbreakable word) never makes the page wider:
    the label clips instead of moving the main splitter."""
    policy = label.sizePolicy()
    policy.setHorizontalPolicy(QSizePolicy.Policy.Ignored)
    label.setSizePolicy(policy)
    label.setMinimumWidth(min_width)


class RunPage(QWidget):
    start_requested = Signal(str)
    tools_requested = Signal(str)
    cancel_requested = Signal(str)
    resume_requested = Signal(str)
    start_again_requested = Signal(str)
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

        # Long names and changing texts shorten or clip here instead of moving the main splitter.
        self.title = ElidedLabel()
        self.title.setObjectName("runTitle")
        title_font = self.title.font()
        title_font.setPointSize(15)
        title_font.setWeight(QFont.Weight.DemiBold)
        self.title.setFont(title_font)
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.state_label = QLabel()
        self.state_label.setObjectName("stateBadge")
        self.message = QLabel()
        self.message.setWordWrap(True)
        _shrinkable(self.message)
        self.awake_note = QLabel("Keeping the computer awake while it trains (the screen may still turn off).")
        self.awake_note.setObjectName("awakeNote")
        self.awake_note.setProperty("tone", "muted")
        self.awake_note.setToolTip("You can turn this off in Settings")
        self.awake_note.hide()
        self.model_label = ElidedLabel()
        self.model_label.setProperty("tone", "muted")
        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        self.progress.setAccessibleName("Training progress")

        self.error_box = QFrame()
        self.error_box.setObjectName("errorBox")
        eb = QHBoxLayout(self.error_box)
        self.error_text = QLabel()
        self.error_text.setWordWrap(True)
        _shrinkable(self.error_text)
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
            name.setProperty("tone", "muted")
            value = QLabel("—")
            value.setObjectName(f"value_{key}")
            _shrinkable(value, 60)
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
            ("start_again", "Start again", "Train this run again from the beginning, with the same data and settings",
             self.start_again_requested),
            ("tools", "Try it…", "Chat with the fine-tuned model, compare it with the base model, "
             "merge it, export it for Ollama or as GGUF, or share the run", self.tools_requested),
            ("open", "Open folder", "Open the run folder in your file manager", self.open_folder_requested),
            ("duplicate", "Duplicate…", "Duplicate as a new run: the new-run wizard with this run's data and settings",
             self.duplicate_requested),
            ("delete", "Delete…", "Move this run to the trash (asks first)", self.delete_requested),
        ):
            button = QPushButton(text)
            button.setToolTip(tip)
            button.clicked.connect(lambda _=False, s=signal: self.run and s.emit(str(self.run.path)))
            self.buttons[key] = button
            actions.addWidget(button)
        actions.addStretch(1)
        # Start / Cancel (Stop now…) / Start again take turns in one place: one width, so the row never changes size.
        turns = [self.buttons[k] for k in ("start", "cancel", "start_again")]
        width = max(b.fontMetrics().horizontalAdvance(t) for b in turns for t in (b.text(), "Stop now…")) + 32
        for b in turns:
            b.setMinimumWidth(max(width, b.minimumSizeHint().width()))

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
        # One fixed minimum, the widest the page ever needs (Cancel, Resume and the
        # rest shown; Start, Cancel and Start again take turns in one width), so
        # that no state change moves the main splitter.
        self.buttons["start"].hide()
        self.buttons["start_again"].hide()
        self.setMinimumWidth(layout.minimumSize().width())

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
        self.title.set_full_text(self.run.name)
        self.model_label.set_full_text(f"Model: {model_words(str(cfg.get('model') or ''))}")
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
            before = self.run.eval().get("before")
            self.plot.show_held_out(not (isinstance(before, dict) and before.get("examples") == 0))

    def _on_status(self, status: dict) -> None:
        self.status = status
        launch = self.launch_for(self.run.path) if self.run else None
        special = launch_view(status, getattr(launch, "started_at", None), bool(launch and launch.is_running()))
        tail = launch_log_tail(self.run.path).strip().splitlines() if special == "failed_to_start" else []
        view = status_view(status, launch=special, launch_last_words=tail[-1] if tail else "",
                           has_checkpoints=bool(self.run.checkpoints()),
                           cancel_asked=self.run.path.joinpath(st.CANCEL_FILE).exists(),
                           has_adapter=self.run.has_adapter())
        self.view_state = view.state
        self.state_label.setText(view.badge)
        set_style_property(self.state_label, "tone", view.tone)
        self.message.setText(view.message)
        self.message.setVisible(bool(view.message))
        self.error_box.setVisible(bool(view.error))
        self.error_text.setText(f"<b>What went wrong:</b> {html.escape(view.error)}" if view.error else "")
        self.progress.setRange(0, view.progress_max)
        self.plot.set_total_steps(int(status.get("total_steps") or 0))
        self.progress.setValue(view.progress_value)
        self.progress.setFormat(view.progress_text)
        for key, b in view.buttons.items():
            button = self.buttons[key]
            button.setVisible(b.visible)
            button.setEnabled(b.enabled)
            if b.text is not None:
                button.setText(b.text)
            if b.tip is not None:
                button.setToolTip(b.tip)
        self.awake_note.setVisible(view.state in st.ACTIVE_STATES and bool(status.get("keeping_awake")))
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
