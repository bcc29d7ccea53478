"""The "Try it" and "Use it" tabs of the run page, kept in step with the run shown.

The run page owns a QTabWidget; this adds two tabs to it (TryPage and
ResultActions for the current run), replaces them when another run is shown,
and stops their processes on shutdown. So the run page needs only:

    self.result_tabs = ResultTabs(self.tabs)      # after making self.tabs
    self.result_tabs.show_run(path)               # in show_run
    self.result_tabs.refresh()                    # when results change
    self.result_tabs.shutdown()                   # when the window closes
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QTabWidget

from trainer.api import is_run_dir

from .result_actions import ResultActions
from .try_page import TryPage

TRY_TITLE, USE_TITLE = "Try it", "Use it"


class ResultTabs:
    def __init__(self, tabs: QTabWidget):
        self.tabs = tabs
        self.try_page: TryPage | None = None
        self.actions: ResultActions | None = None

    def show_run(self, path: str | Path | None) -> None:
        if path is not None and self.try_page is not None and Path(path) == self.try_page.run.path:
            self.refresh()
            return
        self.shutdown()
        if path is None or not is_run_dir(path):
            return
        self.try_page = TryPage(path)
        self.actions = ResultActions(path)
        self.tabs.addTab(self.try_page, TRY_TITLE)
        self.tabs.addTab(self.actions, USE_TITLE)
        self.tabs.setTabToolTip(self.tabs.indexOf(self.try_page),
                                "Chat with the fine-tuned model, beside the base model if you like")
        self.tabs.setTabToolTip(self.tabs.indexOf(self.actions),
                                "Merge, export for Ollama or llama.cpp, or share the run")

    def refresh(self) -> None:
        """The run changed (finished, new results): update the header and which actions are possible."""
        if self.try_page is not None:
            self.try_page.refresh_header()
        if self.actions is not None:
            self.actions.refresh()

    def shutdown(self) -> None:
        for widget in (self.try_page, self.actions):
            if widget is None:
                continue
            widget.shutdown()
            index = self.tabs.indexOf(widget)
            if index >= 0:
                self.tabs.removeTab(index)
            widget.deleteLater()
        self.try_page = self.actions = None
