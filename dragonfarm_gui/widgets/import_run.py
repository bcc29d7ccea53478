"""File > Import run: bring a packed run (.zip from Share or `dragonfarm pack`) into the runs folder.

trainer.run.share.unpack is standard library only, so it runs in the app
process, in a worker thread (a pack with a big adapter or many examples takes
seconds), with a progress dialog and Cancel; it refuses unsafe archives in
words and never overwrites a run. The message says what came in: a trained
run (one trained on a rented GPU machine, say), or one set up but not trained
yet, and a model this computer lacks.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QFileDialog, QMessageBox, QProgressDialog, QWidget

from trainer.run import elsewhere
from trainer.run.errors import UserError
from trainer.run.reader import Run
from trainer.run.share import unpack


def failure_words(exc: BaseException) -> str:
    if isinstance(exc, UserError):
        return str(exc)
    if isinstance(exc, OSError):
        return f"The run could not be imported: {exc.strerror or exc}. Check that the runs folder is writable."
    return f"The run could not be imported: {exc}."


def imported_words(path: Path) -> str:
    return " ".join([f"Imported the run as {path.name}."] + what_came_in(path))


def what_came_in(path: Path) -> list[str]:
    run = Run(path)
    kind = elsewhere.kind_of(run)
    words = []
    if kind == elsewhere.UNTRAINED:
        words.append("It is set up but not trained yet: select it and press Start"
                     + (" (or Resume, to continue from its checkpoint)." if run.can_resume() else "."))
    elif kind == elsewhere.STOPPED:
        words.append("It stopped before the end" + ("; Resume continues it." if run.can_resume() else "."))
    model = run.config_dict().get("model")
    if elsewhere.model_missing_here(model):
        words.append(f"Its model, {model}, is not on this computer: change \"model\" in its config.json "
                     "(Open folder) to the model's Hugging Face id or its path here.")
    return words


def choose_archive(parent: QWidget | None) -> str:
    archive, _ = QFileDialog.getOpenFileName(parent, "Import a run", str(Path.home()), "DragonFarm run (*.zip)")
    return archive


class RunImport(QObject):
    """One import in a worker: a progress dialog with Cancel (shown when it takes more than a
    moment), then what came in, or why not, in a message box. `imported` carries the new folder."""

    imported = Signal(object)
    ended = Signal()

    def __init__(self, parent: QWidget | None, runs_dir: str | Path):
        from ..process.worker import JobRunner

        super().__init__(parent)
        self.parent_widget, self.runs_dir = parent, Path(runs_dir)
        self.runner = JobRunner(self)
        self.runner.progress.connect(self._progress)
        self.runner.done.connect(self._done)
        self.runner.failed.connect(self._failed)
        self.runner.cancelled.connect(self._cancelled)
        self.dialog: QProgressDialog | None = None

    def start(self, archive: str | Path) -> None:
        archive = Path(archive)
        dialog = self.dialog = QProgressDialog(f"Importing {archive.name}…", "Cancel", 0, 1000, self.parent_widget)
        dialog.setWindowTitle("Import run")
        dialog.setWindowModality(Qt.WindowModality.WindowModal)
        dialog.setMinimumDuration(400)
        dialog.setAutoClose(False)
        dialog.setAutoReset(False)
        dialog.setValue(0)
        dialog.canceled.connect(self.runner.cancel)
        runs_dir = self.runs_dir

        def work(job):
            return unpack(archive, runs_dir, progress=lambda done, total: job.check(
                "unpack", 1000 * done // max(total, 1)))
        # A run already in place when Cancel comes is removed again: Cancel keeps nothing.
        self.runner.start(work, discard=lambda path: shutil.rmtree(path, ignore_errors=True))

    def busy(self) -> bool:
        return self.runner.busy()

    def _progress(self, _phase: str, per_mille: int) -> None:
        if self.dialog is not None:
            self.dialog.setValue(min(per_mille, 999))

    def _close_dialog(self) -> None:
        if self.dialog is not None:
            self.dialog.canceled.disconnect(self.runner.cancel)
            self.dialog.close()
            self.dialog.deleteLater()
            self.dialog = None

    def _done(self, path: Path) -> None:
        self._close_dialog()
        QMessageBox.information(self.parent_widget, "Import run", f"{imported_words(path)}\n{path}")
        self.imported.emit(path)
        self.ended.emit()

    def _failed(self, exc: BaseException) -> None:
        self._close_dialog()
        if not isinstance(exc, (UserError, OSError)):
            import logging

            logging.getLogger(__name__).error("importing a run failed", exc_info=exc)
        QMessageBox.warning(self.parent_widget, "Import run", failure_words(exc))
        self.ended.emit()

    def _cancelled(self) -> None:
        self._close_dialog()
        self.ended.emit()
