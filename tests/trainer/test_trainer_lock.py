"""One trainer per run folder: the OS lock decides liveness; pid, create time
and heartbeat are hints, and a forged heartbeat in the future is ignored."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dfhelpers import example_chats, write_run

from trainer.cli import main
from trainer.run import lock as lk
from trainer.run import procs
from trainer.run import status as st
from trainer.run.files import LOCK_FILE
from trainer.run.reader import Run

ROOT = Path(__file__).resolve().parents[2]
MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"


@pytest.fixture
def run_dir(tmp_path):
    return write_run(tmp_path / "run", MODEL, example_chats(4), example_chats(2, 100))


def _status(run_dir, **fields):
    st.write_json_atomic(run_dir / st.STATUS_FILE, {"state": st.TRAINING, "host": socket.gethostname(), **fields})


def test_lock_is_exclusive_and_testable_without_creating_files(run_dir):
    assert lk.lock_held(run_dir) is None and not (run_dir / LOCK_FILE).exists()
    with lk.TrainerLock(run_dir) as held:
        assert held.held and lk.lock_held(run_dir) is True
        with pytest.raises(lk.LockHeld):
            lk.TrainerLock(run_dir, wait=0.1).acquire()
    assert lk.lock_held(run_dir) is False
    assert (run_dir / LOCK_FILE).exists()  # never deleted: deleting lock files races


HOLD = ("import sys, time; from trainer.run.lock import TrainerLock; "
        "TrainerLock(sys.argv[1]).acquire(); print('held', flush=True); time.sleep(60)")


def test_a_killed_trainer_drops_its_lock(run_dir):
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(run_dir)],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        # the status names a pid that is not the holder and a stale heartbeat: the lock still says live
        _status(run_dir, pid=999_999, heartbeat_at=time.time() - 3600)
        assert Run(run_dir).status()["live"] is True and Run(run_dir).state == st.TRAINING
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
        _status(run_dir, pid=holder.pid, heartbeat_at=time.time())
        assert lk.lock_held(run_dir) is False
        assert Run(run_dir).status()["live"] is False and Run(run_dir).state == st.INTERRUPTED
    finally:
        holder.kill()
        holder.wait(timeout=10)
        holder.stdout.close()


def test_forged_future_heartbeat_does_not_keep_a_run_alive(run_dir, capsys):
    far = time.time() + 10**6
    _status(run_dir, pid=os.getpid(), host="another-machine", heartbeat_at=far, updated_at=far)
    assert Run(run_dir).status()["live"] is False and Run(run_dir).state == st.INTERRUPTED
    (run_dir / LOCK_FILE).touch()  # a free lock file: the lock says no trainer, whatever the file claims
    assert Run(run_dir).status()["live"] is False
    assert main(["cancel", str(run_dir)]) == 0
    assert "nothing to stop" in capsys.readouterr().out
    import json
    import zipfile

    from trainer.run.share import pack

    archive = pack(run_dir, run_dir.parent / "out.zip")  # not "still training": packed to be trained elsewhere
    with zipfile.ZipFile(archive) as zf:
        packed = json.loads(zf.read(f"{run_dir.name}/status.json"))
    assert packed["state"] == st.INTERRUPTED and "pid" not in packed and "host" not in packed


def test_pid_hint_checks_the_create_time(run_dir):
    me = procs.create_time()
    assert me and procs.pid_alive(os.getpid(), me) and not procs.pid_alive(os.getpid(), me - 1000)
    now = time.time()
    _status(run_dir, pid=os.getpid(), pid_created_at=me, heartbeat_at=now)
    assert Run(run_dir).status()["live"] is True
    _status(run_dir, pid=os.getpid(), pid_created_at=me - 1000, heartbeat_at=now)  # the pid was reused
    assert Run(run_dir).status()["live"] is False
    for pid in (0, -1, True, 10**30, "12"):
        assert procs.pid_alive(pid) is False


def test_status_writer_records_pid_and_create_time(tmp_path):
    writer = st.StatusWriter(tmp_path)
    data = json.loads((tmp_path / st.STATUS_FILE).read_text())
    assert data["pid"] == os.getpid() and abs(data["pid_created_at"] - procs.create_time()) < 1e-3
    writer.stop_heartbeat()


def test_train_on_a_locked_folder_is_refused_in_words(run_dir, capsys):
    before = (run_dir / "config.json").read_bytes()
    with lk.TrainerLock(run_dir):
        assert main(["train", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert "already training in another process" in err and "dragonfarm cancel" in err and "Traceback" not in err
    assert not (run_dir / st.STATUS_FILE).exists() and (run_dir / "config.json").read_bytes() == before


def test_the_lock_file_is_never_packed(run_dir):
    from trainer.run.share import pack_members

    (run_dir / "adapter").mkdir()
    (run_dir / "adapter" / "adapter_config.json").write_text("{}")
    with lk.TrainerLock(run_dir):
        pass
    assert (run_dir / LOCK_FILE).exists() and LOCK_FILE not in pack_members(run_dir, with_data=True)


class FakeMsvcrt:
    """msvcrt.locking as Windows does it, for one byte, across 'handles' (fds)."""
    LK_NBLCK, LK_UNLCK = 2, 0

    def __init__(self):
        self.owner: dict[int, int] = {}  # inode -> fd holding byte 0
        self.calls = []

    def locking(self, fd, mode, nbytes):
        self.calls.append((mode, nbytes, os.lseek(fd, 0, os.SEEK_CUR)))
        inode = os.fstat(fd).st_ino
        if mode == self.LK_NBLCK:
            if inode in self.owner and self.owner[inode] != fd:
                raise PermissionError(13, "Permission denied")
            self.owner[inode] = fd
        elif mode == self.LK_UNLCK:
            self.owner.pop(inode, None)


def test_windows_branch_locks_the_first_byte(run_dir, monkeypatch):
    fake = FakeMsvcrt()
    monkeypatch.setitem(sys.modules, "msvcrt", fake)
    monkeypatch.setattr(lk, "WINDOWS", True)
    with lk.TrainerLock(run_dir):
        assert lk.lock_held(run_dir) is True
        with pytest.raises(lk.LockHeld):
            lk.TrainerLock(run_dir, wait=0).acquire()
    assert lk.lock_held(run_dir) is False
    assert {(mode, n, pos) for mode, n, pos in fake.calls} == {(fake.LK_NBLCK, 1, 0), (fake.LK_UNLCK, 1, 0)}


HOLD_WITH_CHILD = ("import subprocess, sys, time; from trainer.run.lock import TrainerLock; "
                   "TrainerLock(sys.argv[1]).acquire(); "
                   "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], close_fds=False); "
                   "print(c.pid, flush=True); time.sleep(60)")


def test_a_program_the_trainer_started_does_not_keep_the_lock(run_dir):
    holder = subprocess.Popen([sys.executable, "-c", HOLD_WITH_CHILD, str(run_dir)], cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, text=True)
    child = None
    try:
        child = int(holder.stdout.readline())
        assert lk.lock_held(run_dir) is True
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
        assert procs.pid_alive(child) and lk.lock_held(run_dir) is False
    finally:
        holder.kill()
        holder.wait(timeout=10)
        holder.stdout.close()
        if child and procs.pid_alive(child):
            os.kill(child, signal.SIGKILL)


def test_the_python_api_takes_the_lock_too(run_dir):
    from trainer.engine.loop import train
    from trainer.run.errors import UserError

    with lk.TrainerLock(run_dir):
        with pytest.raises(UserError, match="already training in another process"):
            train(run_dir, verbose=False)
    assert not (run_dir / st.STATUS_FILE).exists()
