"""The setup dialog with pytest-qt and the fake uv: progress, the log,
failure with Retry, Cancel, and no QProcess left running."""
from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtWidgets import QDialog  # noqa: E402

from dragonfarm_gui.envsetup import dialog as dialog_mod  # noqa: E402
from dragonfarm_gui.envsetup.dialog import EnvSetupDialog  # noqa: E402
from dragonfarm_gui.envsetup.steps import SetupError, make_context  # noqa: E402
from dragonfarm_gui.envsetup.torch_index import CPU_INDEX, TorchChoice  # noqa: E402
from trainer.run import launch  # noqa: E402

CPU = TorchChoice(CPU_INDEX, "cpu", "No NVIDIA GPU found: using the CPU build.")
WAIT_MS = 30_000


@pytest.fixture
def make_dialog(qtbot, fake_uv, env_layout):
    made = []

    def factory(repair=False):
        dlg = EnvSetupDialog(None, repair=repair,
                             context_factory=lambda: make_context(uv=fake_uv.path, choice=CPU, env_layout=env_layout))
        qtbot.addWidget(dlg)
        made.append(dlg)
        return dlg

    yield factory
    for dlg in made:
        if dlg.is_running():
            dlg.cancel()
            qtbot.waitUntil(lambda d=dlg: not d.is_running(), timeout=WAIT_MS)
        assert dlg._proc is None


def test_success_reports_progress_and_accepts(qtbot, make_dialog, fake_uv, env_layout):
    dlg = make_dialog()
    dlg.show()
    assert dlg.start_button.isVisible() and not dlg.retry_button.isVisible()
    with qtbot.waitSignal(dlg.setup_succeeded, timeout=WAIT_MS):
        dlg.start()
    assert dlg.result() == QDialog.Accepted
    assert dlg.result_info.ok
    assert dlg.progress_bar.maximum() == 7 and dlg.progress_bar.value() == 7
    log = dlg.log_view.toPlainText()
    for title in ("Getting Python 3.11", "Making a new environment", "Installing PyTorch (cpu build",
                  "Installing the training libraries", "Adding DragonFarm's trainer",
                  "Checking the environment", "Finishing"):
        assert "\u25b6 " + title in log
    assert " + torch==2.13.0" in log and "Installed Python 3.11.18" in log
    assert [call[:2] for call in fake_uv.calls()] == [
        ["uv", "python"], ["uv", "venv"], ["uv", "pip"], ["uv", "pip"], ["python", "-c"]]
    assert launch.managed_env_ready(env_layout.env_dir)


def test_failure_shows_message_and_retry_works(qtbot, make_dialog, fake_uv, env_layout):
    dlg = make_dialog()
    dlg.show()
    fake_uv.fail_once("torch==2.13.0")
    with qtbot.waitSignal(dlg.setup_failed, timeout=WAIT_MS) as failed:
        dlg.start()
    message = failed.args[0]
    assert message.startswith("Step 3 of 7, \u201cInstalling PyTorch")
    assert dlg.message_label.isVisible() and dlg.message_label.text() == message
    assert dlg.retry_button.isVisible() and dlg.close_button.isEnabled() and not dlg.cancel_button.isEnabled()
    assert "error: Failed to download `torch==2.13.0`: connection reset" in dlg.log_view.toPlainText()
    assert dlg.step_label.text() == "Setup did not finish."
    assert not env_layout.env_dir.exists() and not env_layout.staging_dir.exists()
    with qtbot.waitSignal(dlg.setup_succeeded, timeout=WAIT_MS):
        dlg.retry_button.click()
    assert not dlg.message_label.isVisible()
    assert launch.managed_env_ready(env_layout.env_dir)


def test_cancel_stops_the_running_step(qtbot, make_dialog, fake_uv, env_layout, monkeypatch):
    monkeypatch.setenv("FAKE_UV_STALL", "torch==")
    dlg = make_dialog()
    dlg.show()
    dlg.start()
    qtbot.waitUntil(lambda: "Downloading torch==" in dlg.log_view.toPlainText(), timeout=WAIT_MS)
    assert dlg.cancel_button.isEnabled() and not dlg.close_button.isEnabled()
    dlg.cancel_button.click()
    qtbot.waitUntil(lambda: not dlg.is_running(), timeout=WAIT_MS)
    assert dlg.result_info.cancelled
    assert dlg.step_label.text() == "Cancelled."
    assert dlg.retry_button.isVisible()
    assert not env_layout.staging_dir.exists() and not env_layout.env_dir.exists()


def test_closing_while_running_cancels_then_closes(qtbot, make_dialog, monkeypatch):
    monkeypatch.setenv("FAKE_UV_STALL", "torch==")
    dlg = make_dialog()
    dlg.show()
    dlg.start()
    qtbot.waitUntil(lambda: "Downloading torch==" in dlg.log_view.toPlainText(), timeout=WAIT_MS)
    with qtbot.waitSignal(dlg.rejected, timeout=WAIT_MS):
        dlg.close()
    assert not dlg.is_running() and dlg.result_info.cancelled


def test_context_error_is_shown_in_plain_words(qtbot):
    def broken():
        raise SetupError("DragonFarm could not find its installer helper (uv). Reinstall DragonFarm.")

    dlg = EnvSetupDialog(None, context_factory=broken)
    qtbot.addWidget(dlg)
    dlg.show()
    with qtbot.waitSignal(dlg.setup_failed, timeout=WAIT_MS):
        dlg.start()
    assert "could not find its installer helper" in dlg.message_label.text()
    assert not dlg.is_running() and dlg.retry_button.isVisible()


def test_open_setup_dialog_skips_when_not_needed(monkeypatch):
    monkeypatch.setenv("DRAGONFARM_PYTHON", "/usr/bin/python3")
    assert dialog_mod.needs_setup() is False
    assert dialog_mod.open_setup_dialog(None) is True
    monkeypatch.delenv("DRAGONFARM_PYTHON")
    assert dialog_mod.needs_setup() is False      # from source: the current interpreter


def test_needs_setup_in_the_frozen_app(monkeypatch, env_layout):
    import sys

    monkeypatch.delenv("DRAGONFARM_PYTHON", raising=False)
    monkeypatch.setenv("DRAGONFARM_ENV_DIR", str(env_layout.env_dir))
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert dialog_mod.needs_setup() is True
