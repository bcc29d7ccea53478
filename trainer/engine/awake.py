"""Keep the computer from sleeping while this trainer process trains (the display may still sleep).

    awake = keep_awake(status)   # when training starts
    ...
    awake.stop()                 # when it ends, however it ends

macOS: `caffeinate -i -w PID` for the trainer's own pid (it also ends by
itself when the trainer dies). Windows: SetThreadExecutionState(ES_CONTINUOUS
| ES_SYSTEM_REQUIRED) from the trainer's thread; the system drops it when the
process ends. Linux: `systemd-inhibit --what=sleep --mode=block` around a
shell loop that ends when the trainer's pid is gone; where there is no
systemd-inhibit (or it fails), nothing happens, quietly.

DRAGONFARM_KEEP_AWAKE=0 (the app's setting "Keep the computer awake while
training", off) turns it off: a machine preference, not a run setting.
status.json's `keeping_awake` names the method in use (absent or null: none).
"""
from __future__ import annotations

import contextlib
import logging
import os
import platform
import shutil
import signal
import subprocess
from typing import Any

from trainer.run.launch import KEEP_AWAKE_ENV

log = logging.getLogger("dragonfarm.engine")

ES_CONTINUOUS = 0x80000000
ES_SYSTEM_REQUIRED = 0x00000001
STARTUP_WAIT = 0.5   # seconds for systemd-inhibit to fail at once, or be holding the lock


class Awake:
    """What keeps the computer awake: a helper process, the Windows flag, or nothing."""

    def __init__(self, method: str | None = None, process: Any = None, group: bool = False):
        self.method, self.process, self.group = method, process, group   # group: the helper leads its own group

    def stop(self) -> None:
        try:
            if self.process is not None:
                if self.group:   # the helper and the command it holds the lock for (a trainer in a test,
                    with contextlib.suppress(ProcessLookupError):   # or the Python API, lives on)
                        os.killpg(self.process.pid, signal.SIGTERM)
                else:
                    self.process.terminate()
                try:
                    self.process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait(timeout=5)
            elif self.method == "windows":
                _set_thread_execution_state(ES_CONTINUOUS)
        except Exception as exc:  # noqa: BLE001 - letting the computer sleep again must not fail a run
            log.warning("Could not end keeping the computer awake: %s", exc)
        self.process, self.method = None, None


def _set_thread_execution_state(flags: int) -> int:
    import ctypes

    return int(ctypes.windll.kernel32.SetThreadExecutionState(flags))  # type: ignore[attr-defined]


def _spawn(argv: list[str], new_group: bool = False) -> Any:
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            **({"start_new_session": True} if new_group else {}))


def _start() -> Awake:
    system = platform.system()
    pid = os.getpid()
    if system == "Darwin":
        exe = shutil.which("caffeinate") or "/usr/bin/caffeinate"
        return Awake("caffeinate", _spawn([exe, "-i", "-w", str(pid)]))
    if system == "Windows":
        if _set_thread_execution_state(ES_CONTINUOUS | ES_SYSTEM_REQUIRED) == 0:
            raise OSError("SetThreadExecutionState refused")
        return Awake("windows")
    if system == "Linux":
        exe = shutil.which("systemd-inhibit")
        if exe is None:
            return Awake()
        wait_for_trainer = f"while kill -0 {pid} 2>/dev/null; do sleep 5; done"
        argv = [exe, "--what=sleep", "--mode=block", "--who=DragonFarm", "--why=Training a model",
                "sh", "-c", wait_for_trainer]
        process = _spawn(argv, new_group=True)
        try:   # no logind (a container, a minimal system): it gives up at once
            code = process.wait(timeout=STARTUP_WAIT)
        except subprocess.TimeoutExpired:
            return Awake("systemd-inhibit", process, group=True)
        log.info("systemd-inhibit could not keep the computer awake (exit code %s)", code)
        return Awake()
    return Awake()


def keep_awake(status: Any = None, env: dict[str, str] | None = None) -> Awake:
    """Start keeping the computer awake (unless turned off); never raises."""
    env = os.environ if env is None else env
    if env.get(KEEP_AWAKE_ENV, "1").strip().lower() in ("0", "false", "no", "off"):
        awake = Awake()
        log.info("Keeping the computer awake is off (%s=0)", KEEP_AWAKE_ENV)
    else:
        try:
            awake = _start()
        except Exception as exc:  # noqa: BLE001 - a computer that may sleep is no reason to fail a run
            log.warning("Could not keep the computer awake: %s", exc)
            awake = Awake()
        if awake.method:
            log.info("Keeping the computer awake while training (%s)", awake.method)
    if status is not None:
        status.update(keeping_awake=awake.method)
    return awake
