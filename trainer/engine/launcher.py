"""`dragonfarm train RUN --gpus N`: start N trainer processes on one run folder and watch them.

Each process is `python -m trainer train RUN` with the environment a
distributed launch uses (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and a free
MASTER_PORT on 127.0.0.1); trainer.engine.parallel does the rest. Process 0
is the trainer the run folder knows: it takes the trainer lock and writes
status.json, progress.jsonl and the rest, and its pid is in status.json.
This launcher waits for all of them and passes a stop on (a signal it gets,
on Windows as the cancel file). When one process fails, the others cannot go
on (they would wait for it forever): they are stopped, and if the failure
was not process 0's own, status.json says which process failed and why.

Standard library only, apart from asking torch how many GPUs it sees
(which starts no CUDA context in this process).
"""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from trainer.run import status as st
from trainer.run.errors import UserError
from trainer.run.files import STATUS_FILE
from trainer.run.lock import LockHeld, TrainerLock, lock_held

ADDRESS = "127.0.0.1"
GRACE_S = 15.0   # after a follower fails: time for process 0 to notice and say so itself
KILL_AFTER_S = 10.0


def gpus_available() -> int:
    """NVIDIA GPUs torch can train on here (CUDA_VISIBLE_DEVICES counts)."""
    if sys.platform == "darwin":
        return 0  # no CUDA on a Mac (and torch loads later, after PYTORCH_ENABLE_MPS_FALLBACK is set)
    try:
        import torch

        return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0
    except Exception:  # noqa: BLE001 - a broken torch: the trainer itself says so
        return 0


def processes_for(gpus: str | None, device: str, found: int | None = None) -> int:
    """How many processes a run trains with: `--gpus N`, else one per NVIDIA GPU (one without any)."""
    if device not in ("auto", "cuda"):
        if gpus not in (None, "1", "all"):
            raise UserError(f"This run's settings say to train on the {device.upper()}, and --gpus {gpus} needs "
                            "NVIDIA GPUs.", "Leave out --gpus, or set the run's device to auto.")
        return 1
    found = gpus_available() if found is None else found
    if gpus in (None, "all"):
        return max(1, found)
    n = int(gpus)
    if n > 1 and n > found:
        have = f"{found} NVIDIA GPU{'s' if found != 1 else ''} that training can use" if found else \
            "no NVIDIA GPU that training can use"
        raise UserError(f"--gpus {n} asks for {n} GPUs, but this computer has {have}.",
                        "Run `dragonfarm check` to see what training can use; leave out --gpus to use every GPU.")
    return n


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((ADDRESS, 0))
        return int(s.getsockname()[1])


def process_env(base: dict[str, str], rank: int, size: int, port: int) -> dict[str, str]:
    env = dict(base)
    env.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(size), LOCAL_WORLD_SIZE=str(size),
               MASTER_ADDR=ADDRESS, MASTER_PORT=str(port))
    # The processes share the CPU cores rather than each taking all of them.
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // size)))
    if os.name == "nt":
        env.setdefault("USE_LIBUV", "0")  # torch's Windows builds may lack libuv for the rendezvous store
    return env


def launch(run_dir: str | Path, processes: int, resume: bool = False, env: dict[str, str] | None = None) -> int:
    """Train `run_dir` with `processes` data-parallel processes; the exit code for `dragonfarm train`."""
    run_dir = Path(run_dir).resolve()
    if lock_held(run_dir):
        raise UserError(f"The run {run_dir.name} is already training in another process.",
                        f"Wait for it, or stop it with: dragonfarm cancel {run_dir}")
    port = free_port()
    base = dict(os.environ if env is None else env)
    command = [sys.executable, "-m", "trainer", "train", str(run_dir), *(["--resume"] if resume else [])]
    procs: list[subprocess.Popen] = []
    old = _forward_stops(procs, run_dir)
    try:
        try:
            for rank in range(processes):
                procs.append(subprocess.Popen(command, env=process_env(base, rank, processes, port)))
        except OSError as exc:
            for p in procs:
                p.kill()
            raise UserError(f"Could not start the training processes ({exc.strerror or exc}).",
                            "Train with one process (--gpus 1), or check that the trainer's Python still exists.") from exc
        codes, first = _watch(procs)
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    if first is None or first == 0:
        return codes[0]
    words = _record_failure(run_dir, first, codes[first])
    if words:
        print(f"dragonfarm: {words}", file=sys.stderr, flush=True)
        return 1
    return codes[0]


def _watch(procs: list[subprocess.Popen]) -> tuple[list[int], int | None]:
    """Wait for every process; once one fails (or process 0 is done), stop the rest after a grace time.
    (exit codes, the rank that failed first)."""
    first: int | None = None
    stop_at: float | None = None
    kill_at: float | None = None
    while True:
        codes = [p.poll() for p in procs]
        if all(c is not None for c in codes):
            return [int(c) for c in codes], first  # type: ignore[arg-type]
        now = time.monotonic()
        failed = [r for r, c in enumerate(codes) if c not in (None, 0)]
        if first is None and failed:
            first = failed[0]
        if stop_at is None and kill_at is None and (failed or codes[0] is not None):
            # Process 0 gets time to notice another's failure and say so; after process 0, nothing is left to do.
            stop_at = now + (GRACE_S if first != 0 else 2.0)
        if stop_at is not None and now >= stop_at:
            for p in procs:
                if p.poll() is None:
                    p.terminate()
            stop_at, kill_at = None, now + KILL_AFTER_S
        if kill_at is not None and now >= kill_at:
            for p in procs:
                if p.poll() is None:
                    p.kill()
            kill_at = float("inf")
        time.sleep(0.1)


def _forward_stops(procs: list[subprocess.Popen], run_dir: Path) -> dict[Any, Any]:
    """A stop asked of the launcher reaches every process: they then stop together at the next step."""
    def forward(signum: int, frame: Any) -> None:
        if os.name == "nt":
            st.request_cancel(run_dir)  # Windows processes take no polite signals; the cancel file works
            return
        for p in procs:
            if p.poll() is None:
                p.send_signal(signum)

    old = {}
    for name in ("SIGTERM", "SIGINT", "SIGBREAK"):
        sig = getattr(signal, name, None)
        if sig is not None:
            try:
                old[sig] = signal.signal(sig, forward)
            except (ValueError, OSError):  # not the main thread
                pass
    return old


def _record_failure(run_dir: Path, rank: int, code: int) -> str | None:
    """Process `rank` (> 0) failed first: status.json says so, unless process 0 had already finished."""
    from trainer.engine.session import follower_log

    log_name = follower_log(rank)
    why = _last_failure(run_dir / log_name) or f"it ended with exit code {code}"
    words = (f"Training stopped because process {rank} of the run (GPU {rank}) failed: {why} "
             f"The details are in {log_name}.")
    try:
        with TrainerLock(run_dir):
            data = st.read_json(run_dir / STATUS_FILE, None)
            if not isinstance(data, dict) or data.get("state") in (st.DONE, st.CANCELLED):
                return None
            if data.get("state") == st.FAILED and why in str(data.get("error") or ""):
                return None  # process 0 failed for the same reason and said so itself
            data.update(state=st.FAILED, error=words, message=words, error_detail=f"process {rank}: {why}"[:2000])
            st.write_json_atomic(run_dir / STATUS_FILE, data)
    except (LockHeld, OSError):
        return None
    return words


def _last_failure(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    found = re.findall(r"Run failed: (.+)", text)
    return found[-1].strip() if found else None
