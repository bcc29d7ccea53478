"""File > Import run: bring a packed run (.zip from Share) into the runs folder.

trainer.run.share.unpack is standard library only, so it runs here in the app
process; it refuses unsafe archives in words and never overwrites a run.
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from trainer.run.errors import UserError
from trainer.run.share import unpack


def import_run(archive: str | Path, runs_dir: str | Path) -> tuple[Path | None, str]:
    """(the new run folder or None, what to tell the person)."""
    try:
        path = unpack(Path(archive), Path(runs_dir))
    except UserError as exc:
        return None, str(exc)
    except OSError as exc:
        return None, f"The run could not be imported: {exc.strerror or exc}. Check that the runs folder is writable."
    return path, f"Imported the run as {path.name}."


def import_run_dialog(parent: QWidget | None, runs_dir: str | Path) -> Path | None:
    archive, _ = QFileDialog.getOpenFileName(parent, "Import a run", str(Path.home()), "DragonFarm run (*.zip)")
    if not archive:
        return None
    path, message = import_run(archive, runs_dir)
    if path is None:
        QMessageBox.warning(parent, "Import run", message)
    else:
        QMessageBox.information(parent, "Import run", f"{message}\n{path}")
    return path
