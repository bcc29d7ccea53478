"""The trainer process's side of a run folder: log file, status with heartbeat,
cancel requests and signals, and turning failures into words."""
from __future__ import annotations

import logging
import signal
import sys
import traceback
from pathlib import Path
from typing import Any

from trainer.run import status as st
from trainer.run.files import LOG_FILE, LOGS_DIR
from trainer.run.config import ConfigError
from trainer.run.errors import UserError

log = logging.getLogger("dragonfarm")


class Cancelled(Exception):
    """A stop was asked for (cancel file, Ctrl-C or SIGTERM)."""


class RunSession:
    def __init__(self, run_dir: Path, verbose: bool = True):
        self.run_dir = run_dir
        self.signalled = False
        self._handlers: list[logging.Handler] = []
        self._setup_logging(verbose)
        st.clear_cancel(run_dir)
        self.status = st.StatusWriter(run_dir, state=st.LOADING, message="Starting", error=None)
        self.status.start_heartbeat()
        self._old_signals = {}
        self._take_signals()

    def _take_signals(self) -> None:
        for name in ("SIGTERM", "SIGINT", "SIGBREAK"):
            sig = getattr(signal, name, None)
            if sig is not None:
                try:
                    self._old_signals[sig] = signal.signal(sig, self._on_signal)
                except (ValueError, OSError):  # not the main thread
                    pass

    def log_path(self) -> Path:
        return self.run_dir / LOG_FILE

    def _console_level(self) -> int:
        return logging.NOTSET

    def _setup_logging(self, verbose: bool) -> None:
        path = self.log_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
        file_handler = logging.FileHandler(path, encoding="utf-8")
        file_handler.setFormatter(fmt)
        self._handlers.append(file_handler)
        if verbose:
            console = logging.StreamHandler(sys.stderr)
            console.setFormatter(logging.Formatter("%(message)s"))
            console.setLevel(self._console_level())
            # A problem the person can fix reaches them once, in words (the CLI
            # prints it); its traceback goes to the log file only.
            console.addFilter(lambda record: getattr(record, "console", True))
            self._handlers.append(console)
        root = logging.getLogger()
        root.setLevel(logging.INFO)
        for h in self._handlers:
            root.addHandler(h)
        logging.captureWarnings(True)

    def _on_signal(self, signum: int, frame: Any) -> None:
        log.info("Stop requested by signal %d", signum)
        self.signalled = True

    def stop_requested(self) -> bool:
        return self.signalled or st.cancel_requested(self.run_dir)

    def check_cancel(self) -> None:
        if self.stop_requested():
            raise Cancelled()

    def message(self, text: str) -> None:
        log.info(text)
        self.status.update(message=text)

    def fail(self, exc: BaseException) -> None:
        text, detail = describe_failure(exc)
        log.error("Run failed: %s\n%s", text, "".join(traceback.format_exception(exc)),
                  extra={"console": not isinstance(exc, (UserError, ConfigError))})
        self.status.update(state=st.FAILED, error=text, error_detail=detail, message=text)

    def close(self) -> None:
        self.status.stop_heartbeat()
        self.status.write()
        st.clear_cancel(self.run_dir)
        self._restore()

    def _restore(self) -> None:
        for sig, old in self._old_signals.items():
            try:
                signal.signal(sig, old)
            except (ValueError, OSError, TypeError):
                pass
        root = logging.getLogger()
        for h in self._handlers:
            root.removeHandler(h)
            h.close()


def describe_failure(exc: BaseException) -> tuple[str, str]:
    """(what the person reads, the technical one-liner)."""
    detail = f"{type(exc).__name__}: {exc}".strip()[:2000]
    if isinstance(exc, (UserError, ConfigError)):
        return str(exc), detail
    name = type(exc).__name__
    text = str(exc)
    if name == "OutOfMemoryError" or "out of memory" in text.lower() or isinstance(exc, MemoryError):
        return ("The computer ran out of memory while training. Lower the batch size or the maximum length, "
                "or pick a smaller model.", detail)
    if isinstance(exc, OSError) and getattr(exc, "errno", None) == 28:
        return "The disk is full. Free some space (or choose another runs folder) and resume the run.", detail
    return (f"Training stopped because of an unexpected error ({name}: {text.splitlines()[0][:300] if text else ''}). "
            f"The full details are in {LOG_FILE}.", detail)


class QuietStatus:
    """What a process other than 0 has instead of status.json: the same calls, nothing written."""

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}

    def update(self, **fields: Any) -> None:
        self.data.update(fields)

    def write(self) -> None:
        pass


class FollowerSession(RunSession):
    """A session for process N > 0 of a data-parallel run: it reads the cancel file and
    takes signals like process 0, but writes nothing of the run's contract (process 0
    does); its log is logs/trainer-rank<N>.log, and only warnings reach the console."""

    def __init__(self, run_dir: Path, rank: int, verbose: bool = True):  # not super().__init__: that writes status.json
        self.run_dir = run_dir
        self.rank = rank
        self.signalled = False
        self._handlers = []
        self._setup_logging(verbose)
        self.status = QuietStatus()  # type: ignore[assignment]
        self._old_signals = {}
        self._take_signals()

    def log_path(self) -> Path:
        return self.run_dir / follower_log(self.rank)

    def _console_level(self) -> int:
        return logging.WARNING

    def close(self) -> None:
        self._restore()


def follower_log(rank: int) -> str:
    """The log of process `rank` (> 0) of a data-parallel run, relative to the run folder."""
    return f"{LOGS_DIR}/trainer-rank{rank}.log"
