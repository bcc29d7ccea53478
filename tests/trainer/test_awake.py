"""Keeping the computer awake: the platform calls, faked (platform.system, subprocess.Popen, ctypes)."""
from __future__ import annotations

import os
import sys
import types
from typing import ClassVar

import pytest

from trainer.engine import awake as aw
from trainer.run.launch import KEEP_AWAKE_ENV, trainer_env


class FakePopen:
    started: ClassVar[list[FakePopen]] = []

    def __init__(self, argv, **kwargs):
        self.argv, self.kwargs, self.terminated, self.waited = argv, kwargs, False, False
        self.pid, self.killed_group = 4321, False
        FakePopen.started.append(self)

    def terminate(self):
        self.terminated = True

    def wait(self, timeout=None):
        if not self.terminated and not self.killed_group and timeout is not None and timeout < 1:
            import subprocess
            raise subprocess.TimeoutExpired(self.argv, timeout)   # still running: holding the lock
        self.waited = True
        return 0


class FakeStatus:
    def __init__(self):
        self.data = {}

    def update(self, **fields):
        self.data.update(fields)


@pytest.fixture
def fake_os(monkeypatch):
    FakePopen.started = []
    monkeypatch.setattr(aw.subprocess, "Popen", FakePopen)

    def set_system(name, which=None):
        monkeypatch.setattr(aw.platform, "system", lambda: name)
        monkeypatch.setattr(aw.shutil, "which", lambda prog: (which or {}).get(prog))
    return set_system


def test_macos_caffeinate_for_our_own_pid(fake_os):
    fake_os("Darwin", {"caffeinate": "/usr/bin/caffeinate"})
    status = FakeStatus()
    keeper = aw.keep_awake(status, env={})
    (proc,) = FakePopen.started
    assert proc.argv == ["/usr/bin/caffeinate", "-i", "-w", str(os.getpid())]   # -i: system sleep, not display
    assert status.data["keeping_awake"] == "caffeinate"
    keeper.stop()
    assert proc.terminated and proc.waited


def test_windows_execution_state(fake_os, monkeypatch):
    fake_os("Windows")
    calls = []
    kernel32 = types.SimpleNamespace(SetThreadExecutionState=lambda flags: calls.append(flags) or 1)
    monkeypatch.setitem(sys.modules, "ctypes", types.SimpleNamespace(windll=types.SimpleNamespace(kernel32=kernel32)))
    status = FakeStatus()
    keeper = aw.keep_awake(status, env={})
    assert calls == [0x80000000 | 0x00000001] and status.data["keeping_awake"] == "windows"
    keeper.stop()
    assert calls[-1] == 0x80000000          # ES_CONTINUOUS alone: sleep allowed again
    assert FakePopen.started == []


def test_windows_refusal_is_quiet(fake_os, monkeypatch):
    fake_os("Windows")
    kernel32 = types.SimpleNamespace(SetThreadExecutionState=lambda flags: 0)
    monkeypatch.setitem(sys.modules, "ctypes", types.SimpleNamespace(windll=types.SimpleNamespace(kernel32=kernel32)))
    status = FakeStatus()
    aw.keep_awake(status, env={}).stop()
    assert status.data["keeping_awake"] is None


def test_linux_systemd_inhibit_tied_to_the_trainer(fake_os, monkeypatch):
    fake_os("Linux", {"systemd-inhibit": "/usr/bin/systemd-inhibit"})
    killed = []
    def killpg(pgid, sig):
        killed.append((pgid, sig))
        FakePopen.started[0].killed_group = True
    monkeypatch.setattr(aw.os, "killpg", killpg)
    keeper = aw.keep_awake(None, env={})
    (proc,) = FakePopen.started
    assert proc.argv[:3] == ["/usr/bin/systemd-inhibit", "--what=sleep", "--mode=block"]
    assert proc.argv[-3:-1] == ["sh", "-c"] and f"kill -0 {os.getpid()}" in proc.argv[-1]
    assert proc.kwargs.get("start_new_session") is True
    keeper.stop()
    assert killed == [(4321, aw.signal.SIGTERM)] and proc.waited   # the helper and its waiting shell


def test_linux_inhibitor_that_cannot_work_here_is_quiet(fake_os, monkeypatch):
    fake_os("Linux", {"systemd-inhibit": "/usr/bin/systemd-inhibit"})
    monkeypatch.setattr(FakePopen, "wait", lambda self, timeout=None: 1)   # "Failed to connect to bus"
    status = FakeStatus()
    aw.keep_awake(status, env={}).stop()
    assert status.data["keeping_awake"] is None


def test_real_platform_call_never_fails():
    """Whatever this machine has (here: often systemd-inhibit without a bus), starting and stopping is quiet."""
    status = FakeStatus()
    aw.keep_awake(status).stop()
    assert "keeping_awake" in status.data


def test_linux_without_an_inhibitor_does_nothing(fake_os):
    fake_os("Linux", {})
    status = FakeStatus()
    aw.keep_awake(status, env={}).stop()
    assert FakePopen.started == [] and status.data["keeping_awake"] is None


def test_a_failing_helper_never_fails_the_run(fake_os, monkeypatch):
    fake_os("Darwin")

    def boom(*a, **k):
        raise FileNotFoundError("caffeinate")
    monkeypatch.setattr(aw.subprocess, "Popen", boom)
    status = FakeStatus()
    aw.keep_awake(status, env={}).stop()
    assert status.data["keeping_awake"] is None


def test_turned_off_by_the_environment(fake_os):
    fake_os("Darwin", {"caffeinate": "/usr/bin/caffeinate"})
    status = FakeStatus()
    aw.keep_awake(status, env={KEEP_AWAKE_ENV: "0"}).stop()
    assert FakePopen.started == [] and status.data["keeping_awake"] is None


def test_app_passes_the_setting_in_the_trainers_environment():
    assert trainer_env({}, keep_awake=False)[KEEP_AWAKE_ENV] == "0"
    assert KEEP_AWAKE_ENV not in trainer_env({})
