"""A finished run's tools in their own window: Try it (chat with the model,
side by side with the base model) and Merge / Export / Share. Both pages come
from the result widgets (try_page.py, result_actions.py); this only hosts them."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QDialog, QTabWidget, QVBoxLayout, QWidget

from trainer.run.reader import Run


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
        self.tabs = QTabWidget()
        self.tabs.addTab(self.try_page, "Try it")
        self.tabs.addTab(self.actions, "Merge, export and share")
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs)

    def shutdown(self) -> None:
        self.try_page.shutdown()
        self.actions.shutdown()

    def done(self, result: int) -> None:
        self.shutdown()
        super().done(result)
