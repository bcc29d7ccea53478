"""The torch index decision table: every branch, with exact expected builds."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from dragonfarm_gui.envsetup import torch_index as ti
from dragonfarm_gui.envsetup.torch_index import CPU_INDEX, MachineFacts, choose_torch_index

CU130 = "https://download.pytorch.org/whl/cu130"
CU126 = "https://download.pytorch.org/whl/cu126"


def win(driver, cap=None, name="NVIDIA GeForce RTX 4070"):
    return MachineFacts("windows", "AMD64", driver, cap, name)


@pytest.mark.parametrize("facts, build, url", [
    # Ada (8.9) with a current driver: the newest stable CUDA build
    (win("581.57", (8, 9)), "cu130", CU130),
    # exactly the CUDA 13.0 minimum driver on Windows
    (win("580.88", (8, 6)), "cu130", CU130),
    # one below it: falls back to CUDA 12.6, which still covers Ampere
    (win("580.87", (8, 6)), "cu126", CU126),
    (win("566.36", (7, 5)), "cu126", CU126),
    # exactly the CUDA 12.6 Update 3 minimum
    (win("561.17", (8, 0)), "cu126", CU126),
    # too old for any build: CPU
    (win("561.09", (8, 0)), "cpu", CPU_INDEX),
    (win("537.58", (8, 9)), "cpu", CPU_INDEX),
    # Blackwell (RTX 50xx, sm_120) needs the CUDA 13 build ...
    (win("581.80", (12, 0), "NVIDIA GeForce RTX 5090"), "cu130", CU130),
    (win("580.88", (10, 0), "NVIDIA B200"), "cu130", CU130),
    # ... and never gets cu126, which has no Blackwell kernels
    (win("572.83", (12, 0), "NVIDIA GeForce RTX 5080"), "cpu", CPU_INDEX),
    # Pascal / Maxwell / Volta: only the CUDA 12.6 build has their kernels, even with a new driver
    (win("581.57", (6, 1), "NVIDIA GeForce GTX 1080"), "cu126", CU126),
    (win("566.03", (5, 2), "NVIDIA GeForce GTX 970"), "cu126", CU126),
    (win("581.57", (7, 0), "Tesla V100"), "cu126", CU126),
    (win("552.22", (6, 1), "NVIDIA GeForce GTX 1080"), "cpu", CPU_INDEX),
    # Kepler: too old whatever the driver
    (win("474.44", (3, 5), "GeForce GTX 780"), "cpu", CPU_INDEX),
    # capability unknown (old nvidia-smi): the widest build if the driver allows
    (win("565.90", None), "cu126", CU126),
    (win("472.12", None), "cpu", CPU_INDEX),
    # driver string unreadable
    (win("N/A", (8, 6)), "cpu", CPU_INDEX),
    # Windows without NVIDIA, and Windows on ARM
    (MachineFacts("windows", "AMD64"), "cpu", CPU_INDEX),
    (MachineFacts("windows", "ARM64", "581.57", (8, 9)), "cpu", CPU_INDEX),
    # Apple Silicon and Linux with NVIDIA: the default index; Linux x86_64 without: CPU (no CUDA download)
    (MachineFacts("macos", "arm64"), "default", None),
    (MachineFacts("linux", "x86_64", "580.95.05", (8, 9)), "default", None),
    (MachineFacts("linux", "x86_64"), "cpu", CPU_INDEX),
    (MachineFacts("linux", "aarch64"), "default", None),
    # something else entirely
    (MachineFacts("freebsd14", "amd64"), "cpu", CPU_INDEX),
])
def test_auto_choice(facts, build, url):
    choice = choose_torch_index(facts)
    assert (choice.build, choice.index_url, choice.supported) == (build, url, True)
    assert choice.reason


def test_cpu_fallback_for_old_driver_says_which_driver_to_get():
    assert "561.17" in choose_torch_index(win("552.22", (8, 6))).hint
    assert "580.88" in choose_torch_index(win("572.83", (12, 0))).hint


def test_intel_mac_is_unsupported_with_a_plain_reason():
    choice = choose_torch_index(MachineFacts("macos", "x86_64"))
    assert choice.supported is False
    assert "Apple Silicon" in choice.hint


@pytest.mark.parametrize("value, build, url", [
    ("", "default", None),
    ("   ", "default", None),
    ("cpu", "cpu", CPU_INDEX),
    ("cu126", "cu126", CU126),
    ("https://mirror.example/torch/cu130", "custom", "https://mirror.example/torch/cu130"),
    ("file:///srv/wheels/simple", "custom", "file:///srv/wheels/simple"),
])
def test_override_wins_over_the_facts(value, build, url):
    for facts in (win("581.57", (8, 9)), MachineFacts("macos", "x86_64"), MachineFacts("linux", "x86_64")):
        choice = choose_torch_index(facts, value)
        assert (choice.build, choice.index_url, choice.supported) == (build, url, True)


def test_override_auto_decides_as_usual():
    assert choose_torch_index(win("581.57", (8, 9)), "auto").build == "cu130"
    assert choose_torch_index(win("581.57", (8, 9)), "AUTO").build == "cu130"
    assert choose_torch_index(win("581.57", (8, 9)), None).build == "cu130"


def test_override_local_wheel_folder(tmp_path):
    choice = choose_torch_index(MachineFacts("linux", "x86_64"), str(tmp_path))
    assert (choice.build, choice.index_url, choice.find_links) == ("local", None, str(tmp_path))


def test_override_garbage_is_a_plain_error():
    with pytest.raises(ValueError, match="DRAGONFARM_TORCH_INDEX='cuda please' is not understood"):
        choose_torch_index(MachineFacts("linux", "x86_64"), "cuda please")


@pytest.mark.parametrize("text, expected", [
    ("581.57", (581, 57)), ("560.35.05", (560, 35)), (" 452.39 ", (452, 39)), ("N/A", None), (None, None), ("", None),
])
def test_parse_driver(text, expected):
    assert ti.parse_driver(text) == expected


def test_torch_pin_matches_the_trainer_requirements_and_pyproject():
    root = Path(__file__).resolve().parents[2]
    requirements = (root / "packaging" / "requirements-trainer.txt").read_text()
    assert not re.search(r"^torch\b", requirements, re.M), "torch is installed in its own step"
    for name in ("transformers", "peft", "accelerate", "huggingface_hub", "safetensors", "gguf", "platformdirs"):
        assert re.search(rf"^{name}==\d", requirements, re.M), name
    assert re.fullmatch(r"\d+\.\d+\.\d+", ti.TORCH_VERSION)


class FakeRun:
    def __init__(self, outputs):
        self.outputs = list(outputs)
        self.calls = []

    def __call__(self, argv, **kwargs):
        self.calls.append(argv)
        assert kwargs["timeout"] > 0
        result = self.outputs.pop(0)
        if isinstance(result, Exception):
            raise result
        return subprocess.CompletedProcess(argv, result[0], result[1], "")


def test_nvidia_smi_query(monkeypatch):
    run = FakeRun([(0, "581.57, 8.9, NVIDIA GeForce RTX 4070\n")])
    monkeypatch.setattr(ti.subprocess, "run", run)
    monkeypatch.setattr("shutil.which", lambda name: "/usr/bin/nvidia-smi")
    assert ti.query_nvidia_smi() == ("581.57", (8, 9), "NVIDIA GeForce RTX 4070")


def test_nvidia_smi_without_compute_cap_field(monkeypatch):
    run = FakeRun([(6, "Field \"compute_cap\" is not a valid field to query.\n"), (0, "472.12, Quadro P2000\n")])
    monkeypatch.setattr(ti.subprocess, "run", run)
    monkeypatch.setattr("shutil.which", lambda name: "/usr/bin/nvidia-smi")
    assert ti.query_nvidia_smi() == ("472.12", None, "Quadro P2000")
    assert len(run.calls) == 2


@pytest.mark.parametrize("error", [subprocess.TimeoutExpired("nvidia-smi", 10), OSError("broken")])
def test_nvidia_smi_never_raises(monkeypatch, error):
    monkeypatch.setattr(ti.subprocess, "run", FakeRun([error]))
    monkeypatch.setattr("shutil.which", lambda name: "/usr/bin/nvidia-smi")
    assert ti.query_nvidia_smi() == (None, None, None)


def test_no_nvidia_smi(monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: None)
    monkeypatch.setattr(ti.os, "name", "posix")
    assert ti.query_nvidia_smi() == (None, None, None)
