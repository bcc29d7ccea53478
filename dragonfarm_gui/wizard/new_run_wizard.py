"""The new-run wizard (QWizard): Data, Model, Run folder, Settings, Summary.
Each page keeps Next disabled with the reason in words until it is right."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QWizard

from ..logic.new_run import Choices
from ..logic.runview import unique_name
from .data_page import DataPage
from .folder_page import FolderPage
from .model_page import ModelPage
from .settings_page import SettingsPage
from .summary_page import SummaryPage


class NewRunWizard(QWizard):
    def __init__(self, runs_dir: Path, prefill: dict | None = None, use_example: bool = False, parent=None):
        super().__init__(parent)
        self.setWindowTitle("New run")
        self.setWizardStyle(QWizard.WizardStyle.ModernStyle)
        self.setOption(QWizard.WizardOption.NoBackButtonOnStartPage, True)
        self.setOption(QWizard.WizardOption.HaveHelpButton, False)
        self.resize(980, 720)
        self.setMinimumSize(760, 560)
        self.choices = Choices(runs_dir=Path(runs_dir))
        self.created_run: Path | None = None
        self.start_now = False
        self.data_page, self.model_page, self.folder_page = DataPage(), ModelPage(), FolderPage()
        self.settings_page, self.summary_page = SettingsPage(), SummaryPage()
        for page in (self.data_page, self.model_page, self.folder_page, self.settings_page, self.summary_page):
            self.addPage(page)
        if prefill:
            self.apply_prefill(prefill)
        elif use_example:
            self.data_page.use_example()

    def done(self, result: int) -> None:
        """Closing or cancelling the wizard stops every page's worker (a run being
        made is removed by its worker); nothing here waits for them."""
        if result != QWizard.DialogCode.Accepted:
            for page_id in self.pageIds():
                self.page(page_id).stop_work()
        super().done(result)

    def apply_prefill(self, prefill: dict) -> None:
        c = self.choices
        c.model = prefill.get("model", c.model)
        c.settings.update(prefill.get("settings") or {})
        c.seed = prefill.get("seed", c.seed)
        c.questions = list(prefill.get("questions") or [])
        if prefill.get("source_name"):
            c.name = unique_name(prefill["source_name"] + "-copy", c.runs_dir)
        if prefill.get("data_path"):
            self.data_page.set_file(prefill["data_path"])
        if prefill.get("eval_path"):
            self.data_page.set_eval_file(prefill["eval_path"])
