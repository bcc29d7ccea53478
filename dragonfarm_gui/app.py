"""Start the app: `dragonfarm-gui`, `dragonfarm gui` or `python -m dragonfarm_gui`.

Kept light on purpose: the window shows before anything heavy is imported
(pyqtgraph comes with the first run page; torch never comes at all).
"""
from __future__ import annotations

import logging
import logging.handlers
import os
import sys
import traceback
from pathlib import Path

from trainer.run.resources import resource
from trainer.run.settings import config_dir

log = logging.getLogger("dragonfarm_gui")


def log_path() -> Path:
    return config_dir() / "logs" / "app.log"


def setup_logging() -> Path:
    path = log_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = logging.handlers.RotatingFileHandler(path, maxBytes=1_000_000, backupCount=2,
                                                                        encoding="utf-8")
    except OSError:
        handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("dragonfarm_gui")
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    return path


def install_excepthook() -> None:
    """Unexpected exceptions go to the log and to the one error dialog; the window stays open."""

    def hook(exc_type, exc, tb):
        if issubclass(exc_type, KeyboardInterrupt):
            sys.__excepthook__(exc_type, exc, tb)
            return
        text = "".join(traceback.format_exception(exc_type, exc, tb))
        log.error("Unexpected error:\n%s", text)
        try:
            from .widgets.error_dialog import show_error

            show_error(None, "Something went wrong",
                       "DragonFarm hit an unexpected problem. Your runs are safe, and training in the background "
                       f"continues. If it happens again, send the log to the developers.\n\n{exc_type.__name__}: {exc}",
                       detail=text, log_path=log_path(), modal=False)
        except Exception:  # noqa: BLE001 - never let the hook itself crash the app
            sys.__excepthook__(exc_type, exc, tb)

    sys.excepthook = hook


def app_icon():
    from PySide6.QtGui import QIcon

    icon = QIcon()
    for size in (16, 32, 48, 64, 128, 256, 512):
        path = resource("icons", f"dragonfarm-{size}.png")
        if path.is_file():
            icon.addFile(str(path))
    if icon.isNull() and resource("icons", "dragonfarm.png").is_file():
        icon.addFile(str(resource("icons", "dragonfarm.png")))
    return icon  # an empty icon (no file) falls back to the platform's default


def make_app(argv: list[str] | None = None):
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(list(argv if argv is not None else sys.argv))
    app.setApplicationName("DragonFarm")
    app.setOrganizationName("DragonFarm")
    app.setApplicationDisplayName("DragonFarm")
    app.setWindowIcon(app_icon())
    from .style import apply_style

    apply_style(app)  # style/app.qss, in the light or dark colours the system palette asks for
    return app


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv if argv is None else argv)
    setup_logging()
    app = make_app(argv)
    install_excepthook()
    from PySide6.QtCore import QTimer

    from .widgets.main_window import MainWindow

    self_test = "--self-test" in argv
    bench = bool(os.environ.get("DRAGONFARM_GUI_BENCH"))
    window = MainWindow(first_start_check=not (self_test or bench))
    if bench:
        _report_first_paint(window, app)
    window.show()
    if self_test:  # the built app proves itself: window, bundle, device check (packaging/build_and_selftest.sh)
        from .envsetup.selftest import run_self_test

        return run_self_test(app, window)
    QTimer.singleShot(0, window.start)
    log.info("DragonFarm started")
    code = app.exec()
    from .process.child import reap_forgotten

    reap_forgotten()  # the window is gone: a process told to quit gets its last moments here
    return code


def _report_first_paint(window, app) -> None:
    """For bench/bench_gui_startup.py: print when the window first painted, then quit."""
    import time

    from PySide6.QtCore import QEvent, QObject, QTimer

    class FirstPaint(QObject):
        def eventFilter(self, obj, event):  # noqa: N802
            if event.type() == QEvent.Type.Paint and not getattr(self, "done", False):
                self.done = True
                print(f"DRAGONFARM_SHOWN {time.time():.6f}", flush=True)
                QTimer.singleShot(0, lambda: (window.shutdown(), app.quit()))
            return False

    window._first_paint = FirstPaint(window)
    window.installEventFilter(window._first_paint)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
