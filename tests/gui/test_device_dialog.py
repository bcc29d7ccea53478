"""The device check dialog: every case of `check --json`, shown in words with
the CPU-fallback reason and the one fix; run through a QProcess without freezing."""
from __future__ import annotations

import json

import pytest

from dragonfarm_gui.widgets.device_dialog import DeviceDialog, parse_check_output
from trainer.run.settings import load_settings

BASE = {"torch_version": "2.13.0", "torch_cuda": None, "mps_available": False, "gpu_name": None,
        "gpu_memory_gb": None, "system_memory_gb": 31.3, "nvidia_gpu_present": False, "nvidia_driver": None,
        "cpu_fallback_reason": None, "reason": None, "fix": None}

CASES = {
    "cuda": dict(BASE, device="cuda", device_name="NVIDIA GeForce RTX 4070", precision="bf16", torch_build="cuda 12.8",
                 torch_cuda="12.8", gpu_name="NVIDIA GeForce RTX 4070", gpu_memory_gb=12.0, nvidia_gpu_present=True,
                 nvidia_driver="570.86", summary="Training runs on the NVIDIA GPU."),
    "mps": dict(BASE, device="mps", device_name="Apple M2", precision="fp16", torch_build="mps", mps_available=True,
                system_memory_gb=16.0, summary="Training runs on the Apple GPU."),
    "cpu": dict(BASE, device="cpu", device_name="AMD Ryzen 7", precision="fp32", torch_build="cpu",
                summary="No GPU was found; training runs on the CPU."),
    "no_driver": dict(BASE, device="cpu", device_name="Intel Core i7", precision="fp32", torch_build="cuda 12.8",
                      torch_cuda="12.8", nvidia_gpu_present=True, cpu_fallback_reason="no_driver",
                      reason="Windows sees an NVIDIA GPU, but no NVIDIA driver is installed.",
                      fix="Install the latest driver from nvidia.com/drivers, restart, and check again.",
                      summary="CPU fallback."),
    "driver_too_old": dict(BASE, device="cpu", device_name="Intel Core i7", precision="fp32", torch_build="cuda 12.8",
                           torch_cuda="12.8", nvidia_gpu_present=True, nvidia_driver="452.39",
                           gpu_name="NVIDIA GeForce GTX 1660", cpu_fallback_reason="driver_too_old",
                           reason="The driver 452.39 is older than CUDA 12.8 needs (528.33 or newer).",
                           fix="Update the NVIDIA driver from nvidia.com/drivers, restart, and check again.",
                           summary="CPU fallback."),
    "cpu_only_torch": dict(BASE, device="cpu", device_name="Intel Core i7", precision="fp32", torch_build="cpu",
                           nvidia_gpu_present=True, nvidia_driver="570.86", gpu_name="NVIDIA GeForce RTX 3060",
                           cpu_fallback_reason="cpu_only_torch",
                           reason="The installed PyTorch was built without CUDA.",
                           fix="Open Settings > Repair training environment to install the CUDA build of PyTorch.",
                           summary="CPU fallback."),
}

HEADLINES = {
    "cuda": "Training will use your NVIDIA GPU (NVIDIA GeForce RTX 4070).",
    "mps": "Training will use your Mac's GPU (Apple Silicon).",
    "cpu": "Training will run on the CPU. That works for the smallest models, slowly.",
    "no_driver": "Training will run on the CPU (slow): there is an NVIDIA GPU, but its driver is missing.",
    "driver_too_old": "Training will run on the CPU (slow): the NVIDIA driver is too old for this PyTorch.",
    "cpu_only_torch": "Training will run on the CPU (slow): the installed PyTorch is the CPU-only build.",
}


@pytest.fixture
def dialog(qtbot):
    d = DeviceDialog()
    qtbot.addWidget(d)
    yield d
    d.runner.stop()


def _form(dialog) -> dict[str, str]:
    out = {}
    for row in range(dialog.form.rowCount()):
        label = dialog.form.itemAt(row, dialog.form.ItemRole.LabelRole).widget().text().rstrip(":")
        out[label] = dialog.form.itemAt(row, dialog.form.ItemRole.FieldRole).widget().text()
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_each_case_is_shown_in_words(dialog, case):
    check = CASES[case]
    dialog.show()
    dialog.show_result(check)
    assert HEADLINES[case] in dialog.headline.text()
    form = _form(dialog)
    assert form["Device name"] == check["device_name"]
    assert form["PyTorch build"] == check["torch_build"]
    assert form["System memory"] == f"{check['system_memory_gb']:.1f} GB"
    if check["cpu_fallback_reason"]:
        assert dialog.fallback.isVisible()
        assert check["reason"] in dialog.reason_label.text()
        assert dialog.fix_label.text() == f"<b>The fix:</b> {check['fix']}"
        assert f"The fix: {check['fix']}" in dialog.text()
    else:
        assert not dialog.fallback.isVisible()
        assert "The fix" not in dialog.text()
    assert load_settings()["device_check"] == check
    dialog.copy()
    from PySide6.QtGui import QGuiApplication

    assert QGuiApplication.clipboard().text() == dialog.text()


def test_gpu_rows(dialog):
    dialog.show_result(CASES["cuda"])
    form = _form(dialog)
    assert form["GPU memory"] == "12.0 GB" and form["NVIDIA driver"] == "570.86"
    assert form["Training device"] == "NVIDIA GPU (CUDA)"
    dialog.show_result(CASES["no_driver"])
    form = _form(dialog)
    assert form["NVIDIA driver"] == "not installed" and form["GPU"] == "NVIDIA GPU (not usable yet)"


def test_check_runs_in_a_qprocess_without_freezing(dialog, qtbot, fake_python, monkeypatch):
    monkeypatch.setenv("FAKE_CHECK_JSON", json.dumps(CASES["driver_too_old"]))
    dialog.show()
    dialog.run_check()
    assert dialog.runner.is_running()  # returned at once; the window keeps painting
    assert dialog.busy.isVisible()
    qtbot.waitUntil(lambda: dialog.result is not None, timeout=10_000)
    assert dialog.result == CASES["driver_too_old"]
    assert not dialog.busy.isVisible() and not dialog.runner.is_running()
    assert load_settings()["device_checked"] is True


def test_check_that_fails_is_explained(dialog, qtbot, fake_python, monkeypatch):
    monkeypatch.setenv("FAKE_CHECK_JSON", "Traceback: ImportError: DLL load failed")
    monkeypatch.setenv("FAKE_CHECK_EXIT", "1")
    dialog.run_check()
    qtbot.waitUntil(lambda: not dialog.runner.is_running() and dialog.again_button.isEnabled(), timeout=10_000)
    assert dialog.result is None
    assert "The check could not run." in dialog.headline.text()


def test_parse_check_output_skips_noise():
    assert parse_check_output('loading\n{"device": "cpu"}\n') == {"device": "cpu"}
    assert parse_check_output("no json here") is None


def test_first_start_opens_the_check_once(qtbot, fake_python):
    from dragonfarm_gui.widgets.main_window import MainWindow

    win = MainWindow(first_start_check=True)
    qtbot.addWidget(win)
    win.show()
    win.start()
    qtbot.waitUntil(lambda: win.device_dialog is not None and win.device_dialog.result is not None, timeout=10_000)
    assert win.device_dialog.isVisible()
    assert load_settings()["device_checked"] is True
    win.device_dialog.close()
    win.shutdown()
    again = MainWindow(first_start_check=True)
    qtbot.addWidget(again)
    again.start()
    qtbot.wait(600)
    assert again.device_dialog is None
    again.shutdown()


def test_several_gpus_are_named_with_how_many_a_run_uses(dialog):
    two = dict(CASES["cuda"], gpus=2, gpus_found=2, gpu_names=["NVIDIA A100"] * 2)
    dialog.show_result(two)
    assert "Training will use your 2 NVIDIA GPUs together, sharing each step." in dialog.headline.text()
    assert _form(dialog)["GPU"] == "2 × NVIDIA A100"
    dialog.show_result(dict(two, gpu_names=["NVIDIA A100", "NVIDIA L4"]))
    assert _form(dialog)["GPU"] == "NVIDIA A100, NVIDIA L4"
    dialog.show_result(dict(CASES["cuda"], gpus=1, gpus_found=1))
    assert "together" not in dialog.headline.text() and _form(dialog)["GPU"] == "NVIDIA GeForce RTX 4070"
    dialog.show_result(dict(CASES["mps"], gpus=0))
    assert "GPUs" not in dialog.headline.text()
