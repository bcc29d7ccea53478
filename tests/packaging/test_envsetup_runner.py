"""The first-use setup with a fake uv: commands and order, progress, failure
with the log, Retry, Cancel, and never taking a half-made environment."""
from __future__ import annotations

import json
import os
import sys
import threading
import time

import pytest

from dragonfarm_gui.envsetup import steps as steps_mod
from dragonfarm_gui.envsetup.runner import Progress, SetupRunner
from dragonfarm_gui.envsetup.steps import CHECK_CODE, SetupContext, SetupError, make_context
from dragonfarm_gui.envsetup.torch_index import CPU_INDEX, TorchChoice
from trainer.run import launch

CPU = TorchChoice(CPU_INDEX, "cpu", "No NVIDIA GPU found.")


def context(fake_uv, env_layout, choice=CPU) -> SetupContext:
    return make_context(uv=fake_uv.path, choice=choice, env_layout=env_layout)


def expected_calls(ctx: SetupContext) -> list[list[str]]:
    staging_py = str(ctx.layout.staging_python())
    return [
        ["uv", "python", "install", "3.11"],
        ["uv", "venv", "--python", "3.11", "--relocatable", str(ctx.layout.staging_dir)],
        ["uv", "pip", "install", "--python", staging_py, "torch==2.13.0", "--index-url", CPU_INDEX],
        ["uv", "pip", "install", "--python", staging_py, "-r", str(ctx.requirements)],
        ["python", "-c", CHECK_CODE],
    ]


def test_commands_in_order_and_a_marked_environment(fake_uv, env_layout):
    ctx = context(fake_uv, env_layout)
    events: list[Progress] = []
    result = SetupRunner(ctx, events.append).run()
    assert result.ok, result.message
    assert fake_uv.calls() == expected_calls(ctx)
    # step starts, in order, each once
    starts = [(p.index, p.total) for p in events if p.line is None]
    assert starts == [(i, 7) for i in range(1, 8)]
    assert [p.title for p in events if p.line is None][2] == "Installing PyTorch (cpu build, about 1-3 GB)"
    assert Progress(3, 7, "Installing PyTorch (cpu build, about 1-3 GB)", " + torch==2.13.0") in events
    # the environment is in place, marked, with the trainer and resources inside
    env = env_layout.env_dir
    assert not env_layout.staging_dir.exists()
    assert launch.managed_env_ready(env)
    marker = launch.read_env_marker(env)
    assert marker["torch_build"] == "cpu" and marker["torch_index"] == CPU_INDEX
    assert marker["versions"]["torch"] == "2.13.0+cpu"
    assert marker["app_version"] == "0.1.0"
    site = env_layout.site_packages(env)
    assert (site / "trainer" / "run" / "launch.py").is_file()
    assert (site / "trainer" / "resources" / "presets.json").is_file()
    assert not list(site.rglob("__pycache__"))
    log = env_layout.log_file.read_text()
    assert "step 3/7: Installing PyTorch" in log and "Setup finished." in log


def test_default_index_has_no_index_flag(fake_uv, env_layout):
    ctx = context(fake_uv, env_layout, TorchChoice(None, "default", "Linux"))
    assert SetupRunner(ctx).run().ok
    torch_call = fake_uv.calls()[2]
    assert torch_call[-1] == "torch==2.13.0" and "--index-url" not in torch_call


def test_failure_shows_the_log_line_then_retry_works(fake_uv, env_layout):
    ctx = context(fake_uv, env_layout)
    fake_uv.fail_once("torch==2.13.0")
    events: list[Progress] = []
    result = SetupRunner(ctx, events.append).run()
    assert not result.ok and not result.cancelled
    assert result.message.startswith("Step 3 of 7, \u201cInstalling PyTorch (cpu build, about 1-3 GB)\u201d, did not work.")
    assert "Last message: error: Failed to download `torch==2.13.0`: connection reset" in result.message
    assert "online" in result.message and str(env_layout.log_file) in result.message
    assert "(exit code 2)" in env_layout.log_file.read_text()
    # nothing half-made is left or taken
    assert not env_layout.staging_dir.exists() and not env_layout.env_dir.exists()
    assert not launch.managed_env_ready(env_layout.env_dir)
    assert len(fake_uv.calls()) == 3 and max(p.index for p in events) == 3
    # Retry: a fresh run of the same plan succeeds
    retry = SetupRunner(ctx).run()
    assert retry.ok, retry.message
    assert fake_uv.calls()[3:] == expected_calls(ctx)
    assert launch.managed_env_ready(env_layout.env_dir)


def test_failed_check_leaves_no_environment(fake_uv, env_layout, monkeypatch):
    monkeypatch.setenv("FAKE_PY_FAIL", "1")
    result = SetupRunner(context(fake_uv, env_layout)).run()
    assert not result.ok
    assert "Step 6 of 7, \u201cChecking the environment\u201d" in result.message
    assert "No module named 'torch'" in result.message
    assert not env_layout.env_dir.exists() and not env_layout.staging_dir.exists()


def test_failed_repair_keeps_the_working_environment(fake_uv, env_layout):
    assert SetupRunner(context(fake_uv, env_layout)).run().ok
    before = launch.read_env_marker(env_layout.env_dir)
    fake_uv.fail_once("requirements-trainer.txt")
    result = SetupRunner(context(fake_uv, env_layout)).run()
    assert not result.ok and "Step 4 of 7" in result.message
    assert launch.read_env_marker(env_layout.env_dir) == before
    assert launch.managed_env_ready(env_layout.env_dir)


def test_repair_replaces_the_environment(fake_uv, env_layout):
    assert SetupRunner(context(fake_uv, env_layout)).run().ok
    stale = env_layout.env_dir / "stale-file"
    stale.write_text("from the old environment")
    assert SetupRunner(context(fake_uv, env_layout)).run().ok
    assert not stale.exists() and not env_layout.old_dir.exists()
    assert launch.managed_env_ready(env_layout.env_dir)


def test_cancel_kills_the_running_step_and_cleans_up(fake_uv, env_layout, monkeypatch):
    monkeypatch.setenv("FAKE_UV_STALL", "torch==")
    runner = SetupRunner(context(fake_uv, env_layout), lambda p: p.line and "Downloading" in p.line and started.set())
    started = threading.Event()
    results = []
    thread = threading.Thread(target=lambda: results.append(runner.run()))
    begin = time.monotonic()
    thread.start()
    assert started.wait(20), "the torch step never started"
    runner.cancel()
    thread.join(20)
    assert not thread.is_alive()
    assert time.monotonic() - begin < 20
    assert results[0].cancelled and not results[0].ok
    assert not env_layout.staging_dir.exists() and not env_layout.env_dir.exists()
    assert "Cancelled by the user." in env_layout.log_file.read_text()


def test_half_made_environment_is_never_used(env_layout, monkeypatch):
    env = env_layout.env_dir
    python = launch.managed_env_python(env)
    python.parent.mkdir(parents=True)
    python.write_text("")
    monkeypatch.setenv("DRAGONFARM_ENV_DIR", str(env))
    monkeypatch.delenv("DRAGONFARM_PYTHON", raising=False)
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert not launch.managed_env_ready(env)
    with pytest.raises(launch.NoTrainerPython):
        launch.trainer_python()
    # a marker that does not say complete is not enough either
    (env / launch.ENV_MARKER).write_text(json.dumps({"complete": False}))
    with pytest.raises(launch.NoTrainerPython):
        launch.trainer_python()
    (env / launch.ENV_MARKER).write_text("{broken")
    assert launch.read_env_marker(env) is None
    (env / launch.ENV_MARKER).write_text(json.dumps({"complete": True}))
    assert launch.trainer_python() == str(python)


def test_uv_missing_is_a_plain_error(env_layout, monkeypatch, tmp_path):
    monkeypatch.delenv("DRAGONFARM_UV", raising=False)
    monkeypatch.setattr(steps_mod.layout_mod, "find_uv", lambda: None)
    with pytest.raises(SetupError, match="could not find its installer helper"):
        make_context(choice=CPU, env_layout=env_layout)


def test_unsupported_machine_stops_before_downloading(fake_uv, env_layout):
    intel_mac = TorchChoice(None, "default", "PyTorch no longer makes builds for Intel Macs.", supported=False,
                            hint="DragonFarm needs a Mac with Apple Silicon (M1 or newer).")
    with pytest.raises(SetupError, match="Intel Macs. DragonFarm needs a Mac with Apple Silicon"):
        make_context(uv=fake_uv.path, choice=intel_mac, env_layout=env_layout)
    assert fake_uv.calls() == []


def test_given_base_python_skips_the_python_download(fake_uv, env_layout, monkeypatch):
    monkeypatch.setenv("DRAGONFARM_BASE_PYTHON", sys.executable)
    ctx = context(fake_uv, env_layout)
    assert SetupRunner(ctx).run().ok
    calls = fake_uv.calls()
    assert calls[0] == ["uv", "venv", "--python", sys.executable, "--relocatable", str(env_layout.staging_dir)]
    assert ctx.layout.uv_environment()["UV_PYTHON_PREFERENCE"] == "system"


def test_uv_environment_is_isolated(env_layout, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    monkeypatch.setenv("VIRTUAL_ENV", "/a/venv")
    monkeypatch.delenv("DRAGONFARM_BASE_PYTHON", raising=False)
    env = env_layout.uv_environment()
    assert "PYTHONPATH" not in env and "VIRTUAL_ENV" not in env
    assert env["UV_PYTHON_INSTALL_DIR"] == str(env_layout.base / "python")
    assert env["UV_CACHE_DIR"] == str(env_layout.base / "uv-cache")
    assert env["UV_NO_CONFIG"] == "1" and env["UV_PYTHON_PREFERENCE"] == "only-managed"


def test_frozen_child_env_drops_the_bundle_library_path(monkeypatch):
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    env = launch.clean_child_env({"LD_LIBRARY_PATH": "/bundle/_internal", "LD_LIBRARY_PATH_ORIG": "/usr/local/lib",
                                  "DYLD_LIBRARY_PATH": "/bundle", "QT_PLUGIN_PATH": "/bundle/qt", "HOME": "/h"})
    assert env == {"LD_LIBRARY_PATH": "/usr/local/lib", "HOME": "/h"}
    monkeypatch.setattr(sys, "frozen", False)
    assert launch.clean_child_env({"LD_LIBRARY_PATH": "/x"}) == {"LD_LIBRARY_PATH": "/x"}


def test_environment_state_follows_the_pins(fake_uv, env_layout, tmp_path):
    from dragonfarm_gui.envsetup.steps import environment_state

    ctx = context(fake_uv, env_layout)
    assert environment_state(env_layout, ctx.requirements) == "missing"
    assert SetupRunner(ctx).run().ok
    assert environment_state(env_layout, ctx.requirements) == "ready"
    changed = tmp_path / "requirements-trainer.txt"
    changed.write_text(ctx.requirements.read_text() + "tokenizers==0.30.0\n")
    assert environment_state(env_layout, changed) == "outdated"
    marker = env_layout.marker
    data = json.loads(marker.read_text())
    data["versions"]["torch"] = "2.12.1+cpu"
    marker.write_text(json.dumps(data))
    assert environment_state(env_layout, ctx.requirements) == "outdated"


def test_frozen_trainer_env_uses_the_bundled_trainer(monkeypatch, tmp_path):
    (tmp_path / "trainer_src" / "trainer").mkdir(parents=True)
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    env = launch.trainer_env({"PATH": "/bin", "PYTHONPATH": "/extra"})
    assert env["PYTHONPATH"] == str(tmp_path / "trainer_src") + os.pathsep + "/extra"
    from dragonfarm_gui.envsetup import layout

    assert layout.trainer_sources_dir() == tmp_path / "trainer_src"
