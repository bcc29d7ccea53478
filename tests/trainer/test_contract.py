"""status.json, progress.jsonl and the read API, without torch."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from trainer.run import status as st
from trainer.run.reader import list_runs, verdict
from trainer.run.progress import ProgressReader, ProgressWriter, read_progress

ROOT = Path(__file__).resolve().parents[2]


def test_status_reader_never_sees_invalid_json(tmp_path):
    writer = st.StatusWriter(tmp_path, state=st.TRAINING)
    stop = threading.Event()

    def write_loop():
        i = 0
        while not stop.is_set():
            i += 1
            writer.update(step=i, message="x" * (i % 5000))

    thread = threading.Thread(target=write_loop)
    thread.start()
    seen = 0
    try:
        deadline = time.time() + 1.5
        while time.time() < deadline:
            with open(tmp_path / st.STATUS_FILE, encoding="utf-8") as fh:
                data = json.load(fh)  # raises on a torn read
            assert data["state"] == st.TRAINING
            seen += 1
    finally:
        stop.set()
        thread.join()
    assert seen > 50


def test_dead_pid_reads_interrupted(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    st.write_json_atomic(tmp_path / st.STATUS_FILE, {"state": st.TRAINING, "pid": proc.pid, "host": socket.gethostname(),
                                                     "heartbeat_at": time.time()})
    assert st.effective_state(st.read_status(tmp_path)) == st.INTERRUPTED


def test_stale_heartbeat_reads_interrupted_and_fresh_reads_live(tmp_path):
    base = {"state": st.TRAINING, "pid": os.getpid(), "host": "another-machine"}
    assert st.effective_state({**base, "heartbeat_at": time.time() - 600}) == st.INTERRUPTED
    assert st.effective_state({**base, "heartbeat_at": time.time()}) == st.TRAINING
    assert st.effective_state({**base, "state": st.DONE, "heartbeat_at": 0}) == st.DONE


def test_heartbeat_thread_refreshes(tmp_path):
    writer = st.StatusWriter(tmp_path, state=st.LOADING)
    first = st.read_status(tmp_path)["heartbeat_at"]
    writer.start_heartbeat(every=0.05)
    time.sleep(0.3)
    writer.stop_heartbeat()
    assert st.read_status(tmp_path)["heartbeat_at"] > first


def test_progress_partial_last_line_is_held_back(tmp_path):
    ProgressWriter(tmp_path).log({"step": 1, "loss": 2.0})
    with open(tmp_path / "progress.jsonl", "a") as fh:
        fh.write('{"step": 2, "lo')
    reader = ProgressReader(tmp_path)
    assert reader.read_new() == [{"step": 1, "loss": 2.0}]
    assert read_progress(tmp_path) == [{"step": 1, "loss": 2.0}]
    with open(tmp_path / "progress.jsonl", "a") as fh:
        fh.write('ss": 1.5}\n{"step": 3, "loss": 1.0}\n')
    assert reader.read_new() == [{"step": 2, "loss": 1.5}, {"step": 3, "loss": 1.0}]
    assert reader.read_new() == []


def test_progress_reader_restarts_when_file_shrinks(tmp_path):
    w = ProgressWriter(tmp_path)
    for i in range(5):
        w.log({"step": i})
    reader = ProgressReader(tmp_path)
    assert len(reader.read_new()) == 5
    (tmp_path / "progress.jsonl").write_text('{"step": 0}\n')
    assert reader.read_new() == [{"step": 0}] and reader.reset


def test_run_api_and_listing(tmp_path):
    from trainer.run.config import TrainConfig

    TrainConfig(model="m", name="a").save(tmp_path / "a")
    (tmp_path / "not-a-run").mkdir()
    runs = list_runs(tmp_path)
    assert [r.name for r in runs] == ["a"]
    assert runs[0].state == st.QUEUED and runs[0].summary()["model"] == "m"


def test_verdict_words():
    assert verdict({"before": {"loss": 2.0}, "after": {"loss": 1.0}})["verdict"] == "learned"
    assert verdict({"before": {"loss": 2.0}, "after": {"loss": 1.99}})["verdict"] == "little change"
    rising = [{"eval_loss": x} for x in (2.0, 1.0, 1.2, 1.5)]
    assert verdict({"before": {"loss": 2.0}, "after": {"loss": 1.5}}, rising)["verdict"] == "overfitting"
    assert verdict({"before": {"loss": 1.0}, "after": None}) is None


def test_contract_modules_import_without_torch():
    """The app's side of the contract must work with torch made unimportable."""
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('torch', 'transformers', 'peft', 'accelerate', 'PySide6'):\n"
        "            raise ImportError('blocked: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import trainer.run.config, trainer.run.status, trainer.run.progress, trainer.api, trainer.run.presets, "
        "trainer.run.settings, trainer.run.launch\n"
        "import trainer.cli\n"
        "trainer.cli.build_parser()\n"
        "assert not any(m.split('.')[0] in ('torch', 'transformers', 'peft') for m in sys.modules)\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_check_without_torch_says_what_to_do():
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'torch': raise ImportError(name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from trainer.cli import main\n"
        "sys.exit(main(['check', '--json']))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    data = json.loads(out.stdout)
    assert data["cpu_fallback_reason"] == "no_torch" and "Repair" in data["fix"]
