"""The battery warning when a run starts on battery, the Settings checkbox, and the run page's
"keeping the computer awake" note. psutil's battery is faked."""
from __future__ import annotations

import types

from dragonfarm_gui.logic.power import Battery, battery, battery_warning


def test_battery_reading_and_unknowns():
    fake = types.SimpleNamespace(percent=41.0, power_plugged=False, secsleft=3900)
    assert battery(lambda: fake) == Battery(41.0, False, 3900.0)
    assert battery(lambda: None) is None

    def broken():
        raise RuntimeError("no sensors")
    assert battery(broken) is None
    unlimited = types.SimpleNamespace(percent=100.0, power_plugged=True, secsleft=-2)   # psutil's POWER_TIME_UNLIMITED
    assert battery(lambda: unlimited).seconds_left is None


def test_battery_warning_words():
    assert battery_warning(None, 600) is None
    assert battery_warning(Battery(80, True, None), 600) is None
    words = battery_warning(Battery(41, False, 3900), 7200)
    assert "on battery (41%, about 1 h 05 min left)" in words
    assert "estimated to take 2 h 00 min" in words and "longer than the battery will last" in words
    assert "plug it in" in words
    assert "longer than" not in battery_warning(Battery(90, False, 20000), 600)


def test_starting_on_battery_asks_first(qtbot, tmp_path, monkeypatch, make_run):
    from dragonfarm_gui.widgets import main_window as mw

    monkeypatch.setenv("DRAGONFARM_RUNS_DIR", str(tmp_path))
    window = mw.MainWindow()
    qtbot.addWidget(window)
    run = make_run("r")
    started, asked = [], []
    monkeypatch.setattr(mw, "start_training", lambda path, **k: started.append(path))
    window.ensure_environment = lambda: True
    window.read_battery = lambda: Battery(30, False, 1800)
    window.confirm_on_battery = lambda words: asked.append(words) or False
    assert window.start_run(run) is None and started == []
    assert "on battery (30%" in asked[0] and "estimated to take" in asked[0]
    window.confirm_on_battery = lambda words: True
    window.start_run(run)
    assert started == [run]
    window.read_battery = lambda: None          # unknown: no question
    window.confirm_on_battery = lambda words: asked.append(words) or False
    window.start_run(run)
    assert len(started) == 2 and len(asked) == 1


class FakePopen:
    pid = 4242

    def poll(self):
        return None


def test_settings_checkbox_and_the_trainers_environment(qtbot, tmp_path, monkeypatch):
    from dragonfarm_gui.process import trainer_process
    from dragonfarm_gui.widgets.settings_dialog import SettingsDialog
    from trainer.run.settings import load_settings

    d = SettingsDialog()
    qtbot.addWidget(d)
    assert d.keep_awake.isChecked() and d.keep_awake.toolTip()
    d.keep_awake.setChecked(False)
    d.accept()
    assert load_settings()["keep_awake"] is False
    seen = {}

    def fake_env(*a, **k):
        seen.update(k)
        return {}
    monkeypatch.setattr(trainer_process, "trainer_env", fake_env)
    started = []
    monkeypatch.setattr(trainer_process, "start_detached", lambda *a, **k: started.append(a) or FakePopen())
    run = tmp_path / "run"
    run.mkdir()
    trainer_process.start_training(run, settings=load_settings())
    assert seen["keep_awake"] is False and started


def test_run_page_says_it_keeps_the_computer_awake(qtbot, make_run):
    from dragonfarm_gui.widgets.run_page import RunPage

    run = make_run("r")
    page = RunPage()
    qtbot.addWidget(page)
    page.show()
    page.show_run(run)
    status = {"state": "training", "written_state": "training", "step": 1, "total_steps": 10,
              "keeping_awake": "caffeinate"}
    page._on_status(status)
    assert page.awake_note.isVisible() and "keeping the computer awake" in page.awake_note.text().lower()
    page._on_status(dict(status, keeping_awake=None))
    assert not page.awake_note.isVisible()
    page._on_status(dict(status, state="done", written_state="done"))
    assert not page.awake_note.isVisible()
    page.stop_following()
