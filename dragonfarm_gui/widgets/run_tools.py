"""A finished run's tools in their own window: Try it (chat with the model,
side by side with the base model) and Merge / Export / Share. Both pages come
from the result widgets (try_page.py, result_actions.py); this hosts them and
the one choice they share: the best adapter (adapter-best/, the lowest
held-out loss) or the one from the last step."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QComboBox, QDialog, QHBoxLayout, QLabel, QTabWidget, QVBoxLayout, QWidget

from trainer.run.reader import Run


def adapter_choices(run: Run) -> list[tuple[str, bool]]:
    """(words, last?) for the adapter choice; one entry when the best point is the last step."""
    status = run.status()
    last_step = status.get("step")
    last_words = f"the last step ({last_step})" if isinstance(last_step, int) else "the last step"
    if not run.has_best_adapter():
        return [(last_words + ", which is also the best point", False)]
    best = run.best() or {}
    step, loss = best.get("step"), best.get("loss")
    best_words = "the best point" + (f" (step {step}" if isinstance(step, int) else " (") + \
        (f", held-out loss {loss:.3f})" if isinstance(loss, (int, float)) else ")")
    return [(best_words, False), (last_words, True)]


class RunToolsWindow(QDialog):
    def __init__(self, run_dir: str | Path, parent: QWidget | None = None):
        super().__init__(parent)
        from .result_actions import ResultActions
        from .try_page import TryPage

        run = Run(run_dir)
        self.setWindowTitle(f"{run.name}: try it and export")
        self.resize(980, 700)
        self.try_page = TryPage(run.path)
        self.actions = ResultActions(run.path)
        self.adapter = QComboBox()
        self.adapter.setAccessibleName("Which adapter")
        self.adapter.setToolTip("Try it, merge, export, upload and pack use this adapter. The best point is where "
                                "the model did best on examples it did not train on; after it, it began to memorise.")
        for words, last in adapter_choices(run):
            self.adapter.addItem(words, last)
        self.adapter.setEnabled(self.adapter.count() > 1)
        self.adapter.currentIndexChanged.connect(self._on_adapter)
        choice = QHBoxLayout()
        choice.addWidget(QLabel("Use the adapter from"))
        choice.addWidget(self.adapter)
        choice.addStretch(1)
        self.tabs = QTabWidget()
        self.tabs.addTab(self.try_page, "Try it")
        self.tabs.addTab(self.actions, "Merge, export and share")
        layout = QVBoxLayout(self)
        layout.addLayout(choice)
        layout.addWidget(self.tabs)

    def use_last(self) -> bool:
        return bool(self.adapter.currentData())

    def _on_adapter(self, _index: int) -> None:
        self.try_page.set_use_last(self.use_last())
        self.actions.use_last = self.use_last()

    def shutdown(self) -> None:
        self.try_page.shutdown()
        self.actions.shutdown()

    def done(self, result: int) -> None:
        self.shutdown()
        super().done(result)
