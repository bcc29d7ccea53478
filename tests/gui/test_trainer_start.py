"""The detached trainer start (subprocess, not QProcess.startDetached): the
app's own environment and file descriptors stay as they were, the trainer gets
its own session, environment and launcher.log; the Windows flags with the
platform faked; "Stop now" ends a whole process tree, and only the right one."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import psutil
import pytest
from dfhelpers import fake_python as wrap_fake_python

from trainer.run import launch as launch_mod
from trainer.run import procs
from trainer.run.files import LAUNCHER_LOG

DUMP = r"""
import json, os, sys
print("hello from the trainer", flush=True)
print("a warning on stderr", file=sys.stderr, flush=True)
info = {"argv": sys.argv[1:], "env": dict(os.environ), "sid": os.getsid(0), "cwd": os.getcwd(),
        "stdin": os.readlink("/proc/self/fd/0") if os.path.exists("/proc/self/fd/0") else ""}
with open(os.environ["DUMP_TO"], "w") as fh:
    json.dump(info, fh)
"""


def _fds() -> dict[int, str]:
    found = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            found[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            pass
    return found


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads /proc (Linux)")
def test_start_leaves_the_app_alone_and_detaches_the_trainer(qtbot, sample_run, tmp_path, monkeypatch):
    from dragonfarm_gui.process.trainer_process import start_training

    script = tmp_path / "dump.py"
    script.write_text(DUMP)
    wrap_fake_python(tmp_path, monkeypatch, script)
    monkeypatch.setenv("DUMP_TO", str(tmp_path / "dump.json"))
    env_before, fds_before = dict(os.environ), _fds()
    launch = start_training(sample_run, resume=True, hf_token="hf_secret_for_the_trainer_only")
    assert dict(os.environ) == env_before and "HF_TOKEN" not in os.environ
    fds_after = _fds()
    assert {fd: fds_after.get(fd) for fd in (0, 1, 2)} == {fd: fds_before.get(fd) for fd in (0, 1, 2)}
    qtbot.waitUntil(lambda: not launch.is_running(), timeout=20_000)
    assert launch.process.returncode == 0  # reaped by is_running(): no zombie left
    info = json.loads((tmp_path / "dump.json").read_text())
    assert info["argv"][-3:] == ["train", str(sample_run.resolve()), "--resume"]
    assert info["env"]["HF_TOKEN"] == "hf_secret_for_the_trainer_only" and info["env"]["PYTHONUNBUFFERED"] == "1"
    assert info["sid"] == launch.pid != os.getsid(0)  # a session of its own: it outlives the window
    assert info["cwd"] == str(sample_run.resolve()) and info["stdin"] == os.devnull
    log = (sample_run / LAUNCHER_LOG).read_text()
    assert "hello from the trainer" in log and "a warning on stderr" in log


def test_a_program_that_cannot_start_is_a_launch_error(sample_run, monkeypatch):
    from dragonfarm_gui.process.trainer_process import LaunchError, start_training

    monkeypatch.setenv("DRAGONFARM_PYTHON", str(sample_run / "no-such-python"))
    with pytest.raises(LaunchError, match="could not be started with .*no-such-python"):
        start_training(sample_run)


class Recorder:
    def __init__(self):
        self.calls = []

    def __call__(self, argv, **kwargs):
        self.calls.append((argv, kwargs))
        return "process"


@pytest.mark.parametrize("windows", [True, False])
def test_detached_options_per_platform(tmp_path, monkeypatch, windows):
    recorder = Recorder()
    monkeypatch.setattr(launch_mod.subprocess, "Popen", recorder)
    env = {"PATH": "/bin", "HF_TOKEN": "t"}
    assert launch_mod.start_detached("py", ["-m", "trainer"], tmp_path, env, tmp_path / "logs" / "l.log",
                                     windows=windows) == "process"
    [(argv, kw)] = recorder.calls
    assert argv == ["py", "-m", "trainer"] and kw["env"] is env and kw["cwd"] == str(tmp_path)
    assert kw["stdin"] is subprocess.DEVNULL and kw["stderr"] is subprocess.STDOUT and kw["close_fds"] is True
    assert kw["stdout"].name == str(tmp_path / "logs" / "l.log") and kw["stdout"].closed  # the app keeps no handle
    if windows:
        assert kw["creationflags"] == 0x00000008 | 0x00000200 and "start_new_session" not in kw
    else:
        assert kw["start_new_session"] is True and "creationflags" not in kw


def test_platform_default_for_detaching(monkeypatch):
    assert launch_mod.detached_options() == launch_mod.detached_options(os.name == "nt")
    monkeypatch.setattr(launch_mod.os, "name", "nt")
    assert launch_mod.detached_options() == {"creationflags": 0x208}


TREE = r"""
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
print(child.pid, flush=True)
time.sleep(120)
"""


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_stop_now_ends_the_whole_tree_and_only_the_right_process(qtbot):
    from dragonfarm_gui.process.trainer_process import stop_process_tree

    parent = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE, text=True)
    try:
        child = int(parent.stdout.readline())
        born = procs.create_time(parent.pid)
        assert stop_process_tree(parent.pid, born - 500) is False  # a reused pid: not our trainer
        assert procs.pid_alive(parent.pid) and procs.pid_alive(child)
        assert stop_process_tree(parent.pid, born, grace_ms=100) is True
        parent.wait(timeout=10)
        qtbot.waitUntil(lambda: _gone(child), timeout=10_000)
        qtbot.wait(200)  # the kill-survivors timer has fired
    finally:
        parent.kill()
        parent.wait(timeout=10)
        parent.stdout.close()


def test_settings_says_where_the_token_lives(qtbot, monkeypatch):
    from dragonfarm_gui.logic import tokens
    from dragonfarm_gui.widgets.settings_dialog import SettingsDialog

    d = SettingsDialog()  # the GUI tests run with DRAGONFARM_NO_KEYRING=1
    qtbot.addWidget(d)
    note = d.token_note.text()
    assert "No system keyring" in note and "plain, unencrypted file" in note and str(tokens.token_file()) in note
    monkeypatch.setattr(tokens, "where", lambda: "keyring")
    assert "system's keyring" in tokens.storage_note()
