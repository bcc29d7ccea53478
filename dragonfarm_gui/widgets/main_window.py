"""The main window: the run list beside the selected run's page."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QByteArray, Qt, QTimer, QUrl
from PySide6.QtGui import QAction, QDesktopServices, QKeySequence
from PySide6.QtWidgets import (QMainWindow, QMessageBox, QSplitter, QStackedWidget, QStyle,
                               QWidget)

from trainer.run import status as st
from trainer.run.reader import Run, list_runs
from trainer.run.launch import NoTrainerPython
from trainer.run.settings import load_settings, runs_dir, save_settings

from ..process.trainer_process import Launch, LaunchError, start_training, stop_process_tree
from .error_dialog import show_error
from .run_list import RunList
from .welcome import WelcomePage

APP_TITLE = "DragonFarm"


class MainWindow(QMainWindow):
    def __init__(self, *, first_start_check: bool = False, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(APP_TITLE)
        self.resize(1280, 820)
        self.setMinimumSize(900, 640)
        self.launches: dict[str, Launch] = {}
        self.tool_windows: list = []
        self.importers: list = []  # File > Import run jobs still unpacking
        self.run_page = None  # made on first use: it brings in pyqtgraph
        from ..logic.power import battery

        self.read_battery = battery                       # tests replace these two
        self.confirm_on_battery = self._confirm_on_battery
        self.runs_dir = runs_dir()
        self.run_list = RunList(self.runs_dir)
        self.run_list.run_selected.connect(self.show_run)

        self.stack = QStackedWidget()
        self.stack.addWidget(WelcomePage(lambda use_example: self.new_run(use_example=use_example)))
        # The person's split is kept: the run page never widens itself (elided
        # title, fixed-width state texts), and the split is remembered.
        self.split = split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.run_list)
        split.addWidget(self.stack)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 3)
        split.setSizes([590, 690])
        split.setChildrenCollapsible(False)
        self.setCentralWidget(split)
        self._make_menus()
        self.statusBar().showMessage(f"Runs folder: {self.runs_dir}")
        self._restore_geometry()
        self._first_start_check = first_start_check
        self.device_dialog = None
        self._closing_asked = False

    # ----- building ---------------------------------------------------------------
    def _make_menus(self) -> None:
        def action(menu, text, slot, shortcut=None, tip=""):
            a = QAction(text, self)
            if shortcut:
                a.setShortcut(QKeySequence(shortcut))
            a.setStatusTip(tip)
            a.setToolTip(tip or text)
            a.triggered.connect(slot)
            menu.addAction(a)
            return a

        file_menu = self.menuBar().addMenu("&File")
        self.new_action = action(file_menu, "&New run…", lambda: self.new_run(), QKeySequence.StandardKey.New,
                                 "Start the new-run wizard")
        action(file_menu, "&Import run…", self.import_run, tip="Bring in a run someone shared with you (.zip)")
        action(file_menu, "&Settings…", self.open_settings, QKeySequence.StandardKey.Preferences,
               "Runs folder, trainer Python and Hugging Face token")
        file_menu.addSeparator()
        action(file_menu, "&Quit", self.close, QKeySequence.StandardKey.Quit)
        run_menu = self.menuBar().addMenu("&Run")
        action(run_menu, "&Cancel training", lambda: self.cancel_run(self.run_list.current_path()), "Ctrl+.")
        action(run_menu, "&Resume", lambda: self.resume_run(self.run_list.current_path()), "Ctrl+R")
        self.start_again_action = action(run_menu, "Start &again", lambda: self.start_again(self.run_list.current_path()),
                                         tip="Train the selected run again from the beginning")
        action(run_menu, "&Open folder", lambda: self.open_folder(self.run_list.current_path()), "Ctrl+O")
        action(run_menu, "D&uplicate as new run…", lambda: self.duplicate_run(self.run_list.current_path()), "Ctrl+D")
        action(run_menu, "&Delete…", lambda: self.delete_run(self.run_list.current_path()), QKeySequence.StandardKey.Delete)
        help_menu = self.menuBar().addMenu("&Help")
        self.check_action = action(help_menu, "&Check this computer…", self.open_device_check,
                                   tip="Which device training will use, and why")
        action(help_menu, "&About DragonFarm", self.about)
        toolbar = self.addToolBar("Main")
        toolbar.setObjectName("mainToolbar")
        toolbar.setMovable(False)
        toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.new_action.setIcon(self.style().standardIcon(QStyle.StandardPixmap.SP_FileDialogNewFolder))
        toolbar.addAction(self.new_action)
        self.check_action.setIcon(self.style().standardIcon(QStyle.StandardPixmap.SP_ComputerIcon))
        toolbar.addAction(self.check_action)

    def ensure_run_page(self):
        if self.run_page is None:
            from .run_page import RunPage

            self.run_page = RunPage(launch_for=lambda p: self.launches.get(str(Path(p).resolve())))
            for signal, slot in ((self.run_page.start_requested, self.start_run),
                                 (self.run_page.tools_requested, self.open_tools),
                                 (self.run_page.cancel_requested, self.cancel_run),
                                 (self.run_page.resume_requested, self.resume_run),
                                 (self.run_page.start_again_requested, self.start_again),
                                 (self.run_page.open_folder_requested, self.open_folder),
                                 (self.run_page.duplicate_requested, self.duplicate_run),
                                 (self.run_page.delete_requested, self.delete_run)):
                signal.connect(slot)
            self.run_page.show_log_requested.connect(
                lambda title, msg, log: show_error(self, title, msg, log_path=log, modal=False))
            self.stack.addWidget(self.run_page)
        return self.run_page

    # ----- life cycle -------------------------------------------------------------------
    def start(self) -> None:
        """After the window is shown: fill the list, follow running runs, first-start check."""
        self.run_list.start()
        live = [r for r in list_runs(self.runs_dir) if r.status().get("live")]
        if live:
            self.run_list.select_path(str(live[0].path))
        if self._first_start_check and not load_settings().get("device_checked"):
            QTimer.singleShot(400, self.open_device_check)

    def show_run(self, path: str) -> None:
        if not path:
            if self.run_page is not None:
                self.run_page.show_run(None)
            self.stack.setCurrentIndex(0)
            return
        page = self.ensure_run_page()
        if page.run is None or str(page.run.path) != path:
            page.show_run(path)
        self.stack.setCurrentWidget(page)

    # ----- actions ---------------------------------------------------------------------
    def new_run(self, use_example: bool = False, prefill: dict | None = None):
        from ..wizard.new_run_wizard import NewRunWizard

        wizard = NewRunWizard(self.runs_dir, prefill=prefill, use_example=use_example, parent=self)
        if wizard.exec() and wizard.created_run:
            folder = Path(wizard.created_run).parent
            if folder.resolve() != self.runs_dir.resolve():  # the person chose another runs folder
                self.set_runs_dir(folder, remember=True)
            self.run_list.select_path(str(wizard.created_run))
            if wizard.start_now:
                self.start_run(wizard.created_run)
        return wizard

    def start_run(self, path: str | Path, resume: bool = False) -> Launch | None:
        from ..logic import tokens

        if not self.ensure_environment() or not self.battery_ok(path):
            return None
        st.wait_for_exit(path)  # the last trainer may still be exiting after its final status
        try:
            launch = start_training(path, resume=resume, hf_token=tokens.get_token())
        except NoTrainerPython as exc:
            show_error(self, "Training could not start", f"{exc} Choose a trainer Python in Settings.")
            return None
        except LaunchError as exc:
            show_error(self, "Training could not start", str(exc))
            return None
        self.launches[str(Path(path).resolve())] = launch
        self.run_list.select_path(str(path))
        if self.run_page is not None:
            self.run_page.refresh()
        return launch

    def battery_ok(self, path: str | Path) -> bool:
        """On battery: say so, with the estimate, and let the person choose; plugged in or unknown: go."""
        from ..logic.power import battery_warning, run_estimate_seconds

        state = self.read_battery()
        if state is None or state.plugged:
            return True
        return self.confirm_on_battery(battery_warning(state, run_estimate_seconds(path, self.runs_dir)) or "")

    def _confirm_on_battery(self, words: str) -> bool:
        box = QMessageBox(QMessageBox.Icon.Warning, "On battery", words, parent=self)
        start = box.addButton("Start anyway", QMessageBox.ButtonRole.AcceptRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.exec()
        return box.clickedButton() is start

    def ensure_environment(self) -> bool:
        """In the installed app, set up the training environment on first use
        (the packaging's dialog; it returns at once when nothing is needed)."""
        try:
            from ..envsetup import open_setup_dialog
        except ImportError:
            return True
        return bool(open_setup_dialog(self))

    def cancel_run(self, path: str) -> None:
        if not path:
            return
        run = Run(path)
        status = run.status()
        if (run.path / st.CANCEL_FILE).exists() and status.get("live") and status.get("pid"):
            self.stop_now(run, status["pid"], status.get("pid_created_at"))
        else:
            run.request_cancel()
            self.statusBar().showMessage("Stopping after the current step; the adapter trained so far is saved.", 8000)
        if self.run_page is not None:
            self.run_page.refresh()

    def stop_now(self, run: Run, pid: int, created_at: float | None = None) -> bool:
        """The last resort when a trainer does not answer the cancel request."""
        answer = QMessageBox.question(
            self, "Stop training now", f"The run '{run.name}' was asked to stop but is still busy (loading or saving "
            "can take a while). Stop it at once? Resume can continue from its last checkpoint.",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, QMessageBox.StandardButton.No)
        return answer == QMessageBox.StandardButton.Yes and stop_process_tree(pid, created_at)

    def resume_run(self, path: str) -> None:
        if path and Run(path).state in (st.INTERRUPTED, st.CANCELLED, st.FAILED):
            st.clear_cancel(path)
            self.start_run(path, resume=True)

    def start_again(self, path: str) -> Launch | None:
        """Train a stopped, failed or interrupted run again from step 0 (the way
        forward when there is no checkpoint to resume from)."""
        if not path:
            return None
        run = Run(path)
        if not st.wait_for_exit(path) and run.status().get("live"):
            show_error(self, "The run is still training", "This run is training now. Cancel it first.")
            return None
        if (run.checkpoints() or run.has_adapter()) and not self.confirm_start_again(run):
            return None
        st.clear_cancel(path)
        return self.start_run(path, resume=False)

    def confirm_start_again(self, run: Run) -> bool:
        """Tests replace this to answer without a dialog."""
        answer = QMessageBox.question(
            self, "Start again", f"Train '{run.name}' again from the beginning? Its checkpoints and the adapter "
            "trained so far are replaced. (Resume continues from the last checkpoint instead.)",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, QMessageBox.StandardButton.No)
        return answer == QMessageBox.StandardButton.Yes

    def open_tools(self, path: str):
        from .run_tools import RunToolsWindow

        if not path:
            return None
        window = RunToolsWindow(path, self)
        self.tool_windows.append(window)
        window.finished.connect(lambda _r, w=window: self.tool_windows.remove(w) if w in self.tool_windows else None)
        window.show()
        return window

    def import_run(self, archive: str | None = None):
        """File > Import run: choose a .zip, then unpack it in a worker (progress, Cancel)."""
        from .import_run import RunImport, choose_archive

        archive = archive or choose_archive(self)
        if not archive:
            return None
        importer = RunImport(self, self.runs_dir)
        importer.imported.connect(lambda path: self.run_list.select_path(str(path)))
        self.importers.append(importer)
        importer.ended.connect(lambda: self.importers.remove(importer) if importer in self.importers else None)
        importer.ended.connect(importer.deleteLater)
        importer.start(archive)
        return importer

    def open_folder(self, path: str) -> None:
        if path:
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(path)))

    def duplicate_run(self, path: str):
        if not path:
            return None
        from ..wizard.prefill import prefill_from_run

        return self.new_run(prefill=prefill_from_run(Path(path)))

    def delete_run(self, path: str) -> bool:
        if not path:
            return False
        run = Run(path)
        if run.status().get("live"):
            show_error(self, "Cannot delete a running run", "This run is still training. Cancel it first, then delete it.")
            return False
        answer = QMessageBox.question(
            self, "Delete run", f"Move the run '{run.name}' and everything in it (the trained adapter too) to the trash?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, QMessageBox.StandardButton.No)
        if answer != QMessageBox.StandardButton.Yes:
            return False
        try:
            from send2trash import send2trash

            send2trash(str(run.path))
        except Exception as exc:  # noqa: BLE001 - show it in words
            show_error(self, "Could not delete the run", f"The run folder could not be moved to the trash: {exc}")
            return False
        self.run_list.model.refresh()
        return True

    def open_settings(self) -> None:
        from .settings_dialog import SettingsDialog

        if SettingsDialog(self).exec():
            self.set_runs_dir(runs_dir())

    def set_runs_dir(self, folder: Path, remember: bool = False) -> None:
        if remember:
            settings = load_settings()
            settings["runs_dir"] = str(folder)
            save_settings(settings)
        if Path(folder) != self.runs_dir:
            self.runs_dir = Path(folder)
            self.run_list.model.set_runs_dir(self.runs_dir)
            self.statusBar().showMessage(f"Runs folder: {self.runs_dir}")

    def open_device_check(self):
        from .device_dialog import DeviceDialog

        if not self.ensure_environment():
            return None
        if self.device_dialog is None:
            self.device_dialog = DeviceDialog(self)
        self.device_dialog.show()
        self.device_dialog.raise_()
        if not self.device_dialog.runner.is_running():
            self.device_dialog.run_check()
        return self.device_dialog

    def about(self) -> None:
        from trainer import __version__

        QMessageBox.about(self, "About DragonFarm", f"<b>DragonFarm {__version__}</b><br>Fine-tune a small language "
                          "model on your own examples, on your own computer.")

    # ----- closing ----------------------------------------------------------------------
    def live_runs(self) -> list[Run]:
        return [r for r in list_runs(self.runs_dir) if r.status().get("live")]

    def ask_on_close(self, live: list[Run]) -> str:
        """'keep', 'stop' or 'cancel'. Tests replace this to answer without a dialog."""
        box = QMessageBox(self)
        box.setWindowTitle("Training is still running")
        names = ", ".join(r.name for r in live[:3]) + ("…" if len(live) > 3 else "")
        box.setText(f"{len(live)} run(s) are still training: {names}.")
        box.setInformativeText("Keep training in the background? You can open DragonFarm again later to watch it.")
        keep = box.addButton("Keep training in background", QMessageBox.ButtonRole.AcceptRole)
        stop = box.addButton("Stop training", QMessageBox.ButtonRole.DestructiveRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(keep)
        box.exec()
        clicked = box.clickedButton()
        return "keep" if clicked is keep else "stop" if clicked is stop else "cancel"

    def closeEvent(self, event) -> None:  # noqa: N802
        live = self.live_runs()
        if live:
            choice = self.ask_on_close(live)
            if choice == "cancel":
                event.ignore()
                return
            if choice == "stop":
                for run in live:
                    run.request_cancel()
        self.shutdown()
        event.accept()

    def shutdown(self) -> None:
        """Stop every timer, watcher and process this window owns."""
        settings = load_settings()
        settings["window_geometry"] = bytes(self.saveGeometry().toHex()).decode("ascii")
        settings["window_split"] = bytes(self.split.saveState().toHex()).decode("ascii")
        save_settings(settings)
        self.statusBar().clearMessage()  # stops the status bar's message timer
        self.run_list.stop()
        if self.run_page is not None:
            self.run_page.stop_following()
        if self.device_dialog is not None:
            self.device_dialog.runner.stop()
        for window in list(self.tool_windows):
            window.shutdown()
        for importer in list(self.importers):  # an import not finished keeps nothing
            importer.runner.cancel(quiet=True)

    def _restore_geometry(self) -> None:
        settings = load_settings()
        geometry = settings.get("window_geometry")
        if isinstance(geometry, str) and geometry:
            self.restoreGeometry(QByteArray.fromHex(geometry.encode("ascii")))
        split = settings.get("window_split")
        if isinstance(split, str) and split:
            self.split.restoreState(QByteArray.fromHex(split.encode("ascii")))
