"""A stand-in for `python -m trainer ...` in GUI tests: writes status.json,
progress.jsonl, eval.json and samples.json the way docs/run-folder.md says,
in well under a second. Called as: fake_trainer.py -m trainer COMMAND ...

Environment knobs: FAKE_STEPS (6), FAKE_DELAY (seconds per step, 0.05),
FAKE_HANG_AT (step at which to hang, for kill tests), FAKE_CHECK_JSON
(what `check --json` prints), FAKE_FAIL (fail with this error text),
FAKE_LINGER (seconds between the last status and the exit, still holding
the run's lock, as a real process does on a busy machine).
"""
import json
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from trainer.run import status as st  # noqa: E402
from trainer.run.lock import TrainerLock  # noqa: E402
from trainer.run.progress import ProgressWriter  # noqa: E402

DEFAULT_CHECK = {"device": "cpu", "device_name": "Fake CPU", "precision": "fp32", "torch_version": "2.13.0",
                 "torch_build": "cpu", "torch_cuda": None, "mps_available": False, "gpu_name": None,
                 "gpu_memory_gb": None, "system_memory_gb": 16.0, "nvidia_gpu_present": False,
                 "nvidia_driver": None, "cpu_fallback_reason": None, "reason": None, "fix": None,
                 "summary": "Training runs on the CPU."}


def train(run: Path, resume: bool) -> int:
    steps = int(os.environ.get("FAKE_STEPS", "6"))
    delay = float(os.environ.get("FAKE_DELAY", "0.05"))
    hang_at = int(os.environ.get("FAKE_HANG_AT", "0"))
    lock = TrainerLock(run).acquire()  # like `dragonfarm train`: held until this process ends  # noqa: F841
    start = 0
    if not resume:  # a fresh start clears the last try's results, as the real trainer does
        for name in ("progress.jsonl", "eval.json", "samples.json"):
            (run / name).unlink(missing_ok=True)
        for name in ("checkpoints", "adapter"):
            shutil.rmtree(run / name, ignore_errors=True)
    if resume:
        ckpts = sorted(int(p.name.split("-")[1]) for p in (run / "checkpoints").glob("step-*"))
        start = ckpts[-1] if ckpts else 0
    writer = st.StatusWriter(run, state=st.LOADING, message="Loading the model", device="cpu",
                             device_name="Fake CPU", precision="fp32", params_total=1000, params_trainable=10,
                             step=start, total_steps=steps, epoch=0.0,
                             **({"resumed_from": start} if resume else {}))
    st.clear_cancel(run) if not resume else None
    if os.environ.get("FAKE_FAIL"):
        writer.update(state=st.FAILED, error=os.environ["FAKE_FAIL"], error_detail="FakeError: boom")
        print("Traceback: FakeError: boom", file=sys.stderr)
        return 1
    progress = ProgressWriter(run)
    writer.update(state=st.TRAINING, message="Training")
    t0 = time.time()
    for step in range(start + 1, steps + 1):
        if hang_at and step == hang_at:
            while True:
                time.sleep(0.2)
                writer.update()  # heartbeat
        time.sleep(delay)
        loss = 3.0 - 2.0 * step / steps
        progress.log({"step": step, "epoch": step / steps, "loss": loss, "learning_rate": 2e-4 * (1 - step / steps),
                      "grad_norm": 1.0, "tokens_per_second": 1234.0, "elapsed_s": time.time() - t0,
                      "eta_s": (steps - step) * delay, "time": time.time()})
        if step % 2 == 0:
            progress.log({"step": step, "epoch": step / steps, "eval_loss": loss + 0.1,
                          "elapsed_s": time.time() - t0, "time": time.time()})
            ck = run / "checkpoints" / f"step-{step}"
            ck.mkdir(parents=True, exist_ok=True)
            (ck / "trainer_state.json").write_text("{}")
        writer.update(step=step, epoch=step / steps)
        if st.cancel_requested(run):
            writer.update(state=st.SAVING, message="Saving the adapter")
            _adapter(run)
            writer.update(state=st.CANCELLED, message="Stopped; the adapter is saved")
            return 3
    writer.update(state=st.SAVING, message="Saving the adapter")
    _adapter(run)
    st.write_json_atomic(run / "eval.json", {"before": {"loss": 3.1, "perplexity": 22.2, "examples": 2},
                                             "after": {"loss": 1.1, "perplexity": 3.0, "examples": 2}})
    st.write_json_atomic(run / "samples.json", {"samples": [
        {"messages": [{"role": "user", "content": "Can I pay by invoice?"}], "prompt": "Can I pay by invoice?",
         "reference": None, "yours": True, "base": "Invoices are documents.", "finetuned": "Yes, within 30 days!"},
        {"messages": [{"role": "user", "content": "Where is my order?"}], "prompt": "Where is my order?",
         "reference": "It ships tomorrow.", "base": "I am a language model.", "finetuned": "It ships tomorrow!"}]})
    writer.update(state=st.DONE, message="Finished", metrics={"train_loss": 1.0, "eval_loss_before": 3.1,
                                                              "eval_loss_after": 1.1, "runtime_s": 1.0,
                                                              "tokens_per_second": 1234.0})
    return 0


def _adapter(run: Path) -> None:
    (run / "adapter").mkdir(exist_ok=True)
    (run / "adapter" / "adapter_config.json").write_text("{}")


def main(argv: list[str]) -> int:
    if argv[:2] != ["-m", "trainer"]:
        print("fake trainer: expected -m trainer", file=sys.stderr)
        return 2
    cmd, rest = argv[2], argv[3:]
    if cmd == "check":
        print("torch loaded in 1.2 s")  # noise before the JSON, as a real check may print
        print(os.environ.get("FAKE_CHECK_JSON") or json.dumps(DEFAULT_CHECK))
        return int(os.environ.get("FAKE_CHECK_EXIT", "0"))
    if cmd == "train":
        code = train(Path(rest[0]), "--resume" in rest)
        time.sleep(float(os.environ.get("FAKE_LINGER", "0")))
        return code
    print(f"fake trainer: unknown command {cmd}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
