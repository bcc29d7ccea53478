"""A damaged run in the app: one row that says so, the other runs intact, no
error dialog on refresh, a page that names the damage, Open folder and Delete."""
from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from trainer.run import status as st

from .helpers import write_status

DAMAGE = {
    "eval.json": (b"[1, 2]", "eval.json, a list, not an object"),
    "status.json": (b'{"state": "done", "pid": 1000000000000000000000000000000', "status.json, not complete JSON"),
    "progress.jsonl": (b'{"step": 1, "loss": "abc"}\n', "progress.jsonl, line 1: loss is 'abc', not a number"),
    "samples.json": (b'{"samples": 7}', "samples.json, samples is not a list"),
}


@pytest.fixture
def three_runs(runs_dir):
    from trainer.dataimport import create_run

    from .conftest import FIXTURES

    runs = [create_run(FIXTURES / "support.csv", runs_dir=runs_dir, name=name) for name in ("alpha", "bravo", "charlie")]
    for run in runs:
        write_status(run, st.DONE, live=False, step=6, total_steps=6)
    return runs


@pytest.mark.parametrize("name", sorted(DAMAGE))
def test_damaged_run_is_one_row_and_the_page_says_why(qtbot, three_runs, name, monkeypatch):
    from dragonfarm_gui.widgets.main_window import MainWindow

    data, words = DAMAGE[name]
    bad = three_runs[1]
    (bad / name).write_bytes(data)
    errors = []
    monkeypatch.setattr("dragonfarm_gui.widgets.main_window.show_error", lambda *a, **k: errors.append(a))
    monkeypatch.setattr("sys.excepthook", lambda *a: errors.append(a))
    win = MainWindow()
    win.ask_on_close = lambda live: "keep"
    qtbot.addWidget(win)
    win.show()
    win.start()
    try:
        model = win.run_list.model
        for _ in range(3):
            model.refresh()
        assert model.rowCount() == 3
        rows = {model.data(model.index(i, 0)): i for i in range(3)}
        state_of = {n: model.data(model.index(i, 2)) for n, i in rows.items()}
        assert state_of["alpha"] == state_of["charlie"] == "Finished"
        assert state_of["bravo"].startswith("Damaged: " + words[:30])
        assert words in model.data(model.index(rows["bravo"], 2), Qt.ItemDataRole.ToolTipRole)

        win.run_list.state_filter.setCurrentIndex(3)  # Needs attention
        assert win.run_list.proxy.rowCount() == 1
        win.run_list.state_filter.setCurrentIndex(0)

        assert win.run_list.select_path(str(bad))
        page = win.run_page
        qtbot.waitUntil(lambda: page is not None and page.run is not None and page.run.path == bad, timeout=5000)
        qtbot.waitUntil(lambda: page.error_box.isVisible(), timeout=5000)
        assert "damaged" in page.error_text.text() and words.split(",")[0] in page.error_text.text()
        assert page.buttons["open"].isEnabled() and page.buttons["delete"].isEnabled()
        if name == "status.json":
            assert page.view_state == st.DAMAGED and not page.buttons["start"].isVisible()

        opened = []
        monkeypatch.setattr("dragonfarm_gui.widgets.main_window.QDesktopServices.openUrl", lambda url: opened.append(url))
        page.buttons["open"].click()
        assert opened and opened[0].toLocalFile() == str(bad)
        trashed = []
        monkeypatch.setattr("send2trash.send2trash", lambda p: trashed.append(p))
        monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
        page.buttons["delete"].click()
        assert trashed == [str(bad)]
        assert errors == []
    finally:
        win.shutdown()


def test_damaged_status_is_not_shown_as_never_started(qtbot, three_runs):
    from dragonfarm_gui.widgets.run_page import RunPage

    bad = three_runs[0]
    (bad / "status.json").write_bytes(b"\x00\xff binary")
    page = RunPage()
    qtbot.addWidget(page)
    page.show_run(str(bad))
    try:
        assert page.view_state == st.DAMAGED and page.state_label.text() == "Damaged"
        assert not page.buttons["start"].isVisible()
        assert "status.json, not text (binary or damaged)" in page.error_text.text()
    finally:
        page.stop_following()


def test_error_text_from_a_run_folder_is_not_html(qtbot, three_runs):
    from dragonfarm_gui.widgets.run_page import RunPage

    run = three_runs[0]
    write_status(run, st.FAILED, live=False, error="<img src=x> <a href='file:///'>click</a>")
    page = RunPage()
    qtbot.addWidget(page)
    page.show_run(str(run))
    try:
        assert "&lt;img src=x&gt;" in page.error_text.text() and "<a " not in page.error_text.text()
    finally:
        page.stop_following()


def test_status_json_written_as_list_does_not_break_the_follower(qtbot, three_runs):
    from dragonfarm_gui.process.follower import RunFollower

    run = three_runs[2]
    follower = RunFollower(run, use_watcher=False)
    seen = []
    follower.status_changed.connect(seen.append)
    follower.start()
    try:
        (run / "status.json").write_text(json.dumps([1, 2, 3]))
        follower.poll(force_status=True)
        assert seen[-1]["state"] == st.DAMAGED and seen[-1]["live"] is False
    finally:
        follower.stop()
