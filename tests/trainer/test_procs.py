"""psutil-based process and memory helpers (trainer/run/procs.py)."""
from __future__ import annotations

import os
import subprocess
import sys
import time

from trainer.run import procs

STUBBORN = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(120)"


def test_kill_survivors_kills_what_ignores_terminate():
    stubborn = subprocess.Popen([sys.executable, "-c", STUBBORN],
                                stdout=subprocess.PIPE, text=True)
    try:
        assert stubborn.stdout.readline().strip() == "ready"
        found = procs.stop_tree(stubborn.pid)
        time.sleep(0.3)
        assert stubborn.poll() is None  # SIGTERM ignored
        assert procs.kill_survivors(found) == 1
        assert stubborn.wait(timeout=10) != 0
    finally:
        stubborn.kill()
        stubborn.wait(timeout=10)
        stubborn.stdout.close()


def test_system_memory_without_sysconf(monkeypatch):
    from trainer.engine.device import Facts, probe_cpu

    monkeypatch.delattr(os, "sysconf", raising=False)  # as on Windows
    facts = Facts()
    probe_cpu(facts)
    assert facts.system_memory_gb == procs.system_memory_gb() > 0
