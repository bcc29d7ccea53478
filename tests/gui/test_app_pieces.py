"""The app around the run page: the exception hook and error dialog, entry
points, Duplicate, Delete, Settings, the token store, tooltips, estimates."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication, QMessageBox

from trainer.run import status as st
from trainer.run.config import TrainConfig
from trainer.run.settings import load_settings

from .helpers import write_status

ROOT = Path(__file__).resolve().parents[2]


def test_unexpected_exception_goes_to_dialog_and_log_and_window_stays(window, qtbot):
    from dragonfarm_gui import app
    from dragonfarm_gui.widgets.error_dialog import ErrorDialog

    app.setup_logging()
    old = sys.excepthook
    app.install_excepthook()
    try:
        try:
            raise RuntimeError("boom in a slot")
        except RuntimeError:
            sys.excepthook(*sys.exc_info())
    finally:
        sys.excepthook = old
    dialogs = [w for w in QApplication.topLevelWidgets() if isinstance(w, ErrorDialog) and w.isVisible()]
    assert len(dialogs) == 1
    dialog = dialogs[0]
    assert "RuntimeError: boom in a slot" in dialog.message
    assert "Traceback" not in dialog.message and "Traceback" in dialog.detail.toPlainText()
    assert not dialog.detail.isVisible()
    dialog.log_button.click()
    assert dialog.detail.isVisible()
    for handler in logging.getLogger("dragonfarm_gui").handlers:
        handler.flush()
    assert "boom in a slot" in app.log_path().read_text(encoding="utf-8")
    assert window.isVisible()
    dialog.close()


@pytest.mark.parametrize("command", [["-m", "dragonfarm_gui"], ["-m", "trainer", "gui"]])
def test_entry_points_show_the_window(command, tmp_path):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", DRAGONFARM_GUI_BENCH="1",
               DRAGONFARM_CONFIG_DIR=str(tmp_path), DRAGONFARM_RUNS_DIR=str(tmp_path / "runs"))
    out = subprocess.run([sys.executable, *command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-1500:]
    assert "DRAGONFARM_SHOWN" in out.stdout


def test_window_looks_like_an_app(window):
    from dragonfarm_gui.app import app_icon

    assert window.windowTitle() == "DragonFarm"
    assert window.minimumWidth() >= 800 and window.width() >= 1000
    assert not app_icon().isNull()


def test_duplicate_opens_wizard_with_the_runs_data_and_settings(window, qtbot, sample_run, monkeypatch):
    from dragonfarm_gui.wizard.new_run_wizard import NewRunWizard

    from .helpers import wizard_idle

    made = []
    monkeypatch.setattr(NewRunWizard, "exec", lambda self: made.append(self) or 0)
    cfg = TrainConfig.load(sample_run).with_overrides(lora_r=4, learning_rate=1e-3)
    cfg.save(sample_run)
    window.duplicate_run(str(sample_run))
    wiz = made[0]
    assert wiz.choices.data_path == sample_run / "data" / "train.jsonl"
    assert wiz.choices.eval_path is None  # 12 examples: under 20, nothing was held out (dataimport/split.py)
    assert wiz.choices.settings["lora_r"] == 4 and wiz.choices.settings["learning_rate"] == 1e-3
    assert wiz.choices.name == "support-copy"
    wizard_idle(qtbot, wiz)  # the file is scanned in a worker
    assert wiz.choices.report.counts.usable == 12  # the run's training examples, as chats (all 12 train)
    assert wiz.choices.report.shape == "messages"
    wiz.deleteLater()


def test_delete_asks_then_moves_to_trash(window, sample_run, monkeypatch):
    trashed = []
    monkeypatch.setattr("send2trash.send2trash", lambda p: trashed.append(p))
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.No)
    assert window.delete_run(str(sample_run)) is False and trashed == []
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    assert window.delete_run(str(sample_run)) is True
    assert trashed == [str(sample_run)]


def test_delete_refuses_a_running_run(window, sample_run, monkeypatch):
    shown = []
    monkeypatch.setattr("dragonfarm_gui.widgets.main_window.show_error", lambda *a, **k: shown.append(a))
    write_status(sample_run, st.TRAINING)
    assert window.delete_run(str(sample_run)) is False
    assert shown[0][1] == "Cannot delete a running run"


def test_settings_dialog_saves_and_checks(qtbot, tmp_path):
    from dragonfarm_gui.logic import tokens
    from dragonfarm_gui.widgets.settings_dialog import SettingsDialog

    d = SettingsDialog()
    qtbot.addWidget(d)
    d.python_edit.setText(str(tmp_path / "missing-python"))
    d.accept()
    assert d.result() == 0 and "does not exist" in d.problem.text()
    d.python_edit.setText("")
    d.token_edit.setText("my token")
    d.accept()
    assert "does not look like a Hugging Face token" in d.problem.text()
    d.token_edit.setText("hf_" + "b" * 34)
    d.runs_edit.setText(str(tmp_path / "elsewhere"))
    d.accept()
    assert d.result() == 1
    assert load_settings()["runs_dir"] == str(tmp_path / "elsewhere")
    assert "trainer_python" not in load_settings()
    assert tokens.get_token() == "hf_" + "b" * 34
    assert tokens.token_file().stat().st_mode & 0o777 == 0o600
    assert "hf_" not in (Path(os.environ["DRAGONFARM_CONFIG_DIR"]) / "settings.json").read_text()


def test_every_setting_has_a_tooltip(qtbot, tmp_path):
    from dragonfarm_gui.widgets.settings_dialog import SettingsDialog
    from dragonfarm_gui.wizard.new_run_wizard import NewRunWizard

    wiz = NewRunWizard(tmp_path)
    qtbot.addWidget(wiz)
    missing = [k for k, w in wiz.settings_page.fields.items() if not w.toolTip()]
    assert missing == []
    assert all(r.toolTip() for r in wiz.settings_page.radios.values())
    d = SettingsDialog()
    qtbot.addWidget(d)
    assert all(w.toolTip() for w in (d.runs_edit, d.python_edit, d.token_edit))


def test_estimates_and_presets():
    from dragonfarm_gui.logic.estimates import estimate, format_duration
    from trainer.run.training_presets import matching_preset, preset_by_key

    assert format_duration(42) == "42 s" and format_duration(125) == "2 min 05 s"
    assert format_duration(3 * 3600 + 120) == "3 h 02 min" and format_duration(None) == "—"
    cfg = TrainConfig(epochs=2, batch_size=4, min_examples_seen=0)
    est = estimate(cfg, train_examples=100, avg_tokens=200, params_b=0.135, device="cpu")
    assert est.steps == 50
    few = estimate(TrainConfig(epochs=2, batch_size=4, min_examples_seen=300), train_examples=100, avg_tokens=200,
                   params_b=0.135, device="cpu")
    assert few.steps == 75  # 100 examples seen 3 times: at least 300 in all
    gpu = estimate(cfg, train_examples=100, avg_tokens=200, params_b=0.135, device="cuda")
    assert gpu.seconds < est.seconds and gpu.memory_gb < est.memory_gb
    measured = estimate(cfg, train_examples=100, avg_tokens=200, params_b=0.135, device="cpu", speed_per_b=2.7)
    assert round(measured.seconds) == round(50 * 4 * 200 / 20.0 + 20.0 + 15.0 * 0.135)
    assert matching_preset(preset_by_key("quick").values) == "quick"
    assert matching_preset(dict(preset_by_key("quick").values, epochs=2)) is None


def test_measured_speed_comes_from_the_last_finished_run(runs_dir, sample_run):
    from dragonfarm_gui.logic.estimates import measured_speed

    assert measured_speed(runs_dir, "cpu") is None
    write_status(sample_run, st.DONE, live=False, device="cpu", params_total=135_000_000,
                 metrics={"tokens_per_second": 200.0})
    assert measured_speed(runs_dir, "cpu") == 200.0 * 0.135
    assert measured_speed(runs_dir, "cuda") is None


def test_run_names_and_model_words(tmp_path):
    from dragonfarm_gui.logic.runview import model_words, name_problem, suggest_run_name

    assert suggest_run_name("My Support Replies.csv", "Qwen/Qwen2.5-0.5B-Instruct", tmp_path, "2026-01-02") == \
        "my-support-replies-qwen2.5-0.5b-2026-01-02"
    (tmp_path / "x").mkdir()
    assert "already exists" in name_problem("x", tmp_path)
    assert name_problem("a/b", tmp_path).startswith("The name cannot contain")
    assert model_words("HuggingFaceTB/SmolLM2-135M-Instruct") == "SmolLM2 135M"
    assert model_words("/models/smol.Q4_1.gguf") == "smol.Q4_1.gguf"
    assert model_words("someone/custom-model") == "someone/custom-model"


def test_file_import_run_unpacks_in_a_worker_and_selects_the_run(window, qtbot, sample_run, tmp_path, monkeypatch):
    from trainer.run.share import pack

    said = []
    monkeypatch.setattr(QMessageBox, "information", lambda _p, _t, text: said.append(text))
    archive = pack(sample_run, tmp_path / "shared.zip")
    importer = window.import_run(str(archive))
    assert importer.busy() or said  # the window stays free while the files come out
    with qtbot.waitSignal(importer.ended, timeout=10000):
        pass
    new = window.runs_dir / f"{sample_run.name}-2"
    assert said and said[0].startswith(f"Imported the run as {new.name}.")
    assert window.run_list.current_path() == str(new)
