"""The wizard keeps the window alive on big files: the scan and the run
creation run in a worker, with progress and Cancel, and leave nothing behind."""
from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QThreadPool
from PySide6.QtWidgets import QWizard

from dragonfarm_gui.wizard.new_run_wizard import NewRunWizard

from .helpers import wizard_idle

WAIT = 30000


def _next_enabled(wizard) -> bool:
    return wizard.button(QWizard.WizardButton.NextButton).isEnabled()


def _big_csv(path: Path, rows: int) -> Path:
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write("prompt,completion\n")
        fh.writelines(f"Question {i}?,Answer {i}.\n" if i % 1000 != 999 else f"Question {i}?,\n" for i in range(rows))
    return path


@pytest.fixture(scope="module")
def big_csv(tmp_path_factory) -> Path:
    return _big_csv(tmp_path_factory.mktemp("big") / "big.csv", 60_000)


@pytest.fixture
def wizard(qtbot, tmp_path):
    w = NewRunWizard(tmp_path / "runs")
    qtbot.addWidget(w)
    w.show()
    yield w
    w.close()
    qtbot.waitUntil(lambda: QThreadPool.globalInstance().activeThreadCount() == 0, timeout=WAIT)


def test_first_rows_show_at_once_then_the_full_count(wizard, qtbot, big_csv):
    page = wizard.data_page
    partial = []
    page.scanner.partial.connect(lambda report: partial.append((report, _next_enabled(wizard),
                                                                page.detected.text())))
    page.set_file(big_csv)
    assert page.busy() and not _next_enabled(wizard)
    assert page.scan_row.isVisible() and page.scan_row.button.text() == "Stop checking"
    qtbot.waitUntil(lambda: bool(partial), timeout=WAIT)
    first, next_enabled, words = partial[0]
    assert not first.complete and first.counts.rows == 1000 and not next_enabled
    assert "In the first 1,000 rows" in words and "Checking the rest" in words
    wizard_idle(qtbot, wizard, WAIT)
    assert "60,000 rows" in page.detected.text() and "59,940 usable examples" in page.detected.text()
    assert "(UTF-8)" in page.detected.text()  # the encoding the import library found
    assert _next_enabled(wizard) and not page.scan_row.isVisible()


def test_a_column_change_rescans_and_drops_the_old_scan(wizard, qtbot, big_csv):
    page = wizard.data_page
    page.set_file(big_csv)
    qtbot.waitUntil(lambda: page.choices.report is not None, timeout=WAIT)  # the first look
    page.set_mapping(prompt_column="completion", reply_column="prompt")  # while the full scan runs
    assert page.busy() and not _next_enabled(wizard)
    wizard_idle(qtbot, wizard, WAIT)
    report = page.choices.report
    assert report.complete and report.mapping.prompt_column == "completion"
    assert report.counts.rows == 60_000


def test_cancel_the_scan_blocks_next_with_a_reason_and_check_again_finishes(wizard, qtbot, big_csv):
    page = wizard.data_page
    page.set_file(big_csv)
    page.scan_row.button.click()
    wizard_idle(qtbot, wizard, WAIT)
    assert not _next_enabled(wizard)
    assert "not every row was looked at" in page.reason.text()
    assert page.scan_row.button.text() == "Check again"
    page.scan_row.button.click()
    wizard_idle(qtbot, wizard, WAIT)
    assert _next_enabled(wizard) and page.choices.report.complete


def test_closing_mid_scan_stops_the_worker(wizard, qtbot, big_csv):
    page = wizard.data_page
    page.set_file(big_csv)
    job = page.scanner.job
    wizard.close()
    assert job.cancelled and not page.busy()
    qtbot.waitUntil(lambda: page.scanner.pending() == 0, timeout=WAIT)
    assert QThreadPool.globalInstance().activeThreadCount() == 0


def _to_summary(wizard, qtbot, data: Path) -> None:
    wizard.data_page.set_file(data)
    wizard_idle(qtbot, wizard, WAIT)
    for _ in range(4):
        wizard.next()
    assert wizard.currentPage() is wizard.summary_page


def test_cancel_run_creation_leaves_no_folder(wizard, qtbot, big_csv, tmp_path):
    _to_summary(wizard, qtbot, big_csv)
    finish = wizard.button(QWizard.WizardButton.FinishButton)
    finish.click()
    page = wizard.summary_page
    assert page.busy() and not finish.isEnabled() and page.progress_row.isVisible()
    qtbot.waitUntil(lambda: page.progress_row.bar.value() > 0, timeout=WAIT)  # it is under way
    page.progress_row.button.click()
    qtbot.waitUntil(lambda: page.creator.pending() == 0, timeout=WAIT)
    assert wizard.created_run is None and wizard.isVisible()
    assert not any((tmp_path / "runs").iterdir()) if (tmp_path / "runs").exists() else True
    assert "no run folder was made" in page.progress_row.label.text()
    assert finish.isEnabled()


def test_closing_mid_creation_removes_the_half_made_run(wizard, qtbot, big_csv, tmp_path):
    _to_summary(wizard, qtbot, big_csv)
    wizard.button(QWizard.WizardButton.FinishButton).click()
    page = wizard.summary_page
    qtbot.waitUntil(lambda: "Writing" in page.progress_row.label.text(), timeout=WAIT)
    wizard.close()
    qtbot.waitUntil(lambda: page.creator.pending() == 0, timeout=WAIT)
    assert wizard.created_run is None
    assert not any((tmp_path / "runs").iterdir())


def test_a_failed_creation_says_why_in_words(wizard, qtbot, tmp_path, monkeypatch):
    data = _big_csv(tmp_path / "small.csv", 20)
    _to_summary(wizard, qtbot, data)
    data.write_text("")  # the file changed after it was checked
    wizard.button(QWizard.WizardButton.FinishButton).click()
    page = wizard.summary_page
    qtbot.waitUntil(lambda: not page.busy(), timeout=WAIT)
    assert page.reason.text().startswith("The run could not be made: ") and "Traceback" not in page.reason.text()
    assert wizard.created_run is None and wizard.isVisible()


def test_back_mid_creation_cancels_it_and_the_page_works_again(wizard, qtbot, big_csv, tmp_path):
    _to_summary(wizard, qtbot, big_csv)
    wizard.button(QWizard.WizardButton.FinishButton).click()
    page = wizard.summary_page
    assert not page.start_box.isEnabled()
    wizard.back()
    qtbot.waitUntil(lambda: page.creator.pending() == 0, timeout=WAIT)
    assert not page.busy() and page.start_box.isEnabled()
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    wizard.next()
    wizard.button(QWizard.WizardButton.FinishButton).click()
    qtbot.waitUntil(lambda: wizard.created_run is not None, timeout=WAIT * 4)
    assert (wizard.created_run / "config.json").is_file() and not wizard.isVisible()
