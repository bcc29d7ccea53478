"""Runs the setup steps: one UI-free session object that both the Qt dialog and
the plain (subprocess) runner drive, so the order, the progress reports, the
log and the handling of failure and Cancel are the same in both.
"""
from __future__ import annotations

import datetime
import os
import subprocess
import threading
from collections import deque
from dataclasses import dataclass
from typing import Callable

from .steps import SetupContext, SetupError, Step, build_steps, discard_staging, failure_message


@dataclass(frozen=True)
class Progress:
    index: int          # 1-based step number
    total: int
    title: str
    line: str | None = None   # a log line; None when the step starts


@dataclass(frozen=True)
class SetupResult:
    ok: bool
    message: str = ""
    cancelled: bool = False


ProgressCallback = Callable[[Progress], None]


class SetupSession:
    """Steps through the plan; the caller runs each step's command (if any)."""

    TAIL_LINES = 40

    def __init__(self, ctx: SetupContext, on_progress: ProgressCallback | None = None):
        self.ctx = ctx
        self.steps: list[Step] = build_steps(ctx)
        self.index = -1
        self.on_progress = on_progress or (lambda progress: None)
        self.tail: deque[str] = deque(maxlen=self.TAIL_LINES)
        self.output: list[str] = []
        self._log = None

    # -- the log ---------------------------------------------------------
    def open_log(self) -> None:
        log_file = self.ctx.layout.log_file
        log_file.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(log_file, "a", encoding="utf-8", errors="replace")
        stamp = datetime.datetime.now().isoformat(timespec="seconds")
        self._write(f"=== DragonFarm environment setup {stamp}: {self.ctx.choice.reason}")

    def close_log(self) -> None:
        if self._log:
            self._log.close()
            self._log = None

    def _write(self, text: str) -> None:
        if self._log:
            self._log.write(text.rstrip("\n") + "\n")
            self._log.flush()

    # -- stepping --------------------------------------------------------
    @property
    def total(self) -> int:
        return len(self.steps)

    @property
    def step(self) -> Step:
        return self.steps[self.index]

    def has_next(self) -> bool:
        return self.index + 1 < self.total

    def start_next(self) -> list[str] | None:
        """Move to the next step and run its quick part. Returns the command to
        run, or None when the step is already done. Raises SetupError."""
        self.index += 1
        self.output = []
        step = self.step
        self.on_progress(Progress(self.index + 1, self.total, step.title))
        self._write(f"--- step {self.index + 1}/{self.total}: {step.title}")
        if step.argv:
            self._write("$ " + step.describe().splitlines()[0])
        try:
            if step.prepare:
                step.prepare(self.ctx)
        except OSError as exc:
            raise SetupError(self._failed([f"{exc.strerror or exc}: {exc.filename or ''}"])) from None
        except SetupError as exc:
            self._write(str(exc))
            raise
        return list(step.argv) if step.argv else None

    def add_output(self, line: str) -> None:
        line = line.rstrip("\r\n")
        self.output.append(line)
        self.tail.append(line)
        self._write(line)
        self.on_progress(Progress(self.index + 1, self.total, self.step.title, line))

    def command_finished(self, exit_code: int | None, error: str = "") -> None:
        """After the step's command ended (exit_code None: it could not start)."""
        if exit_code != 0:
            lines = list(self.tail) + ([error] if error else [])
            if exit_code is not None:
                self._write(f"(exit code {exit_code})")
            raise SetupError(self._failed(lines))
        if self.step.finish:
            self.step.finish(self.ctx, "\n".join(self.output))

    def _failed(self, lines: list[str]) -> str:
        return failure_message(self.step, self.index + 1, self.total, lines, self.ctx.layout.log_file)

    def environment(self) -> dict[str, str]:
        return self.ctx.layout.uv_environment()

    def fail(self, message: str) -> SetupResult:
        self._write("FAILED: " + message)
        discard_staging(self.ctx.layout)
        self.close_log()
        return SetupResult(False, message)

    def cancel(self) -> SetupResult:
        self._write("Cancelled by the user.")
        discard_staging(self.ctx.layout)
        self.close_log()
        return SetupResult(False, "Setup was cancelled. Nothing was changed.", cancelled=True)

    def succeed(self) -> SetupResult:
        self._write("Setup finished.")
        self.close_log()
        return SetupResult(True, "The training environment is ready.")


class SetupRunner:
    """Runs a whole setup with subprocess (command line, scripts, tests).
    `cancel()` may be called from another thread."""

    def __init__(self, ctx: SetupContext, on_progress: ProgressCallback | None = None):
        self.session = SetupSession(ctx, on_progress)
        self._cancelled = threading.Event()
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def cancel(self) -> None:
        self._cancelled.set()
        with self._lock:
            if self._proc and self._proc.poll() is None:
                self._proc.kill()

    def run(self) -> SetupResult:
        session = self.session
        session.open_log()
        try:
            while session.has_next():
                if self._cancelled.is_set():
                    return session.cancel()
                argv = session.start_next()
                if argv is None:
                    continue
                code, error = self._run_command(argv, session)
                if self._cancelled.is_set():
                    return session.cancel()
                session.command_finished(code, error)
            return session.succeed()
        except SetupError as exc:
            return session.fail(str(exc))
        finally:
            session.close_log()

    def _run_command(self, argv: list[str], session: SetupSession) -> tuple[int | None, str]:
        flags = getattr(subprocess, "CREATE_NO_WINDOW", 0)
        try:
            with self._lock:
                self._proc = subprocess.Popen(
                    argv, env=session.environment(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL, text=True, encoding="utf-8", errors="replace",
                    creationflags=flags, cwd=os.fspath(session.ctx.layout.base))
        except OSError as exc:
            return None, f"Could not start {argv[0]}: {exc.strerror or exc}"
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            session.add_output(line)
        return self._proc.wait(), ""


def run_setup(ctx: SetupContext, on_progress: ProgressCallback | None = None) -> SetupResult:
    return SetupRunner(ctx, on_progress).run()
