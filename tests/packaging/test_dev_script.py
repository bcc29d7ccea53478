"""scripts/dev.py picks torch by the app's rule (envsetup/torch_index.py) and
falls back to the pinned version from the default index when the PyTorch index
cannot be reached. Fakes only: no network, no nvidia-smi, no pip."""
from __future__ import annotations

import importlib.util
import sys
import urllib.error
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CPU = "https://download.pytorch.org/whl/cpu"


@pytest.fixture(scope="module")
def dev():
    spec = importlib.util.spec_from_file_location("dragonfarm_dev_script", ROOT / "scripts" / "dev.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def machine(dev, monkeypatch):
    """machine(facts) makes dev.py see these facts instead of probing the computer."""
    def use(facts):
        rule = dev.torch_rule()
        monkeypatch.setattr(rule, "probe_facts", lambda: facts)
        monkeypatch.setattr(dev, "torch_rule", lambda: rule)
        return rule
    monkeypatch.delenv("DRAGONFARM_TORCH_INDEX", raising=False)
    return use


def _facts(dev, *args):
    return dev.torch_rule().MachineFacts(*args)


def test_same_version_as_the_app(dev):
    from dragonfarm_gui.envsetup import torch_index

    assert dev.torch_rule().TORCH_VERSION == torch_index.TORCH_VERSION == "2.13.0"


def test_linux_without_gpu_gets_the_cpu_build_when_the_index_answers(dev, machine):
    machine(_facts(dev, "linux", "x86_64"))
    choice, version = dev.choose_torch()
    args, words = dev.torch_install(choice, version, reachable=lambda url: url == CPU)
    assert args == ["torch==2.13.0", "--index-url", CPU]
    assert "cpu build" in words


def test_unreachable_index_falls_back_to_the_pinned_version(dev, machine):
    machine(_facts(dev, "linux", "x86_64"))
    choice, version = dev.choose_torch()
    asked = []
    args, words = dev.torch_install(choice, version, reachable=lambda url: asked.append(url) or False)
    assert asked == [CPU]
    assert args == ["torch==2.13.0"]
    assert "cannot be reached" in words and "cpu build" in words


def test_windows_nvidia_gets_cuda(dev, machine):
    machine(_facts(dev, "windows", "AMD64", "581.57", (8, 9), "RTX 4070"))
    choice, version = dev.choose_torch()
    args, words = dev.torch_install(choice, version, reachable=lambda url: True)
    assert args == ["torch==2.13.0", "--index-url", "https://download.pytorch.org/whl/cu130"]
    assert "RTX 4070" in words


def test_default_index_is_not_probed(dev, machine):
    machine(_facts(dev, "macos", "arm64"))
    choice, version = dev.choose_torch()

    def must_not_probe(url):
        raise AssertionError(url)
    args, words = dev.torch_install(choice, version, reachable=must_not_probe)
    assert args == ["torch==2.13.0"] and "default package index" in words


def test_override_and_bad_override(dev, machine, monkeypatch, tmp_path):
    machine(_facts(dev, "windows", "AMD64", "581.57", (8, 9)))
    monkeypatch.setenv("DRAGONFARM_TORCH_INDEX", str(tmp_path))
    choice, version = dev.choose_torch()
    assert dev.torch_install(choice, version, lambda url: False)[0] == ["torch==2.13.0", "--find-links", str(tmp_path)]
    monkeypatch.setenv("DRAGONFARM_TORCH_INDEX", "cuda please")
    with pytest.raises(SystemExit, match="is not understood"):
        dev.choose_torch()


class _Response:
    def __init__(self, status):
        self.status = status

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_index_reachable_with_fake_opener(dev):
    seen = []
    assert dev.index_reachable(CPU, opener=lambda url, timeout: seen.append((url, timeout)) or _Response(200))
    assert seen == [(CPU + "/torch/", 6.0)]

    def offline(url, timeout):
        raise urllib.error.URLError("Name or service not known")
    assert not dev.index_reachable(CPU, opener=offline)
    assert not dev.index_reachable(CPU, opener=lambda url, timeout: _Response(503))

    def hangs(url, timeout):
        raise TimeoutError("timed out")
    assert not dev.index_reachable(CPU, opener=hangs)


def test_setup_installs_the_chosen_torch_before_the_project(dev, machine, monkeypatch, tmp_path, capsys):
    machine(_facts(dev, "linux", "x86_64"))
    venv = tmp_path / "venv"
    python = venv / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("")
    commands = []
    monkeypatch.setattr(dev, "VENV", venv)
    monkeypatch.setattr(dev, "venv_python", lambda: python)
    monkeypatch.setattr(dev, "run", lambda *cmd: commands.append(cmd[1:]))
    monkeypatch.setattr(dev, "index_reachable", lambda url: False)
    monkeypatch.setattr(dev, "installed_version", lambda py, name: "2.13.0+cpu")
    dev.ensure_env("train", with_test_model=False)
    pip = [c[3:] for c in commands]
    assert pip[1] == ("--quiet", "torch==2.13.0")
    assert pip[2] == ("--quiet", "-e", ".[train]")
    out = capsys.readouterr().out
    assert "cannot be reached" in out and "torch in" in out and "2.13.0+cpu" in out
    commands.clear()
    dev.ensure_env("train", with_test_model=False)  # set up already: nothing to install
    assert commands == []
