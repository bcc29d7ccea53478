"""File > Import run: bring a packed run (.zip from Share or `dragonfarm pack`) into the runs folder.

trainer.run.share.unpack is standard library only, so it runs here in the app
process; it refuses unsafe archives in words and never overwrites a run. The
message says what came in: a trained run (one trained on a rented GPU machine,
say), or one set up but not trained yet, and a model this computer lacks.
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from trainer.run import elsewhere
from trainer.run.errors import UserError
from trainer.run.reader import Run
from trainer.run.share import unpack


def import_run(archive: str | Path, runs_dir: str | Path) -> tuple[Path | None, str]:
    """(the new run folder or None, what to tell the person)."""
    try:
        path = unpack(Path(archive), Path(runs_dir))
    except UserError as exc:
        return None, str(exc)
    except OSError as exc:
        return None, f"The run could not be imported: {exc.strerror or exc}. Check that the runs folder is writable."
    return path, " ".join([f"Imported the run as {path.name}."] + what_came_in(path))


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
