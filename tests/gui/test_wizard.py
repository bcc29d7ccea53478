"""The new-run wizard: each page blocks Next with a reason, and the finished
wizard makes exactly the run folder `dragonfarm new` makes for the same choices."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtWidgets import QWizard

from dragonfarm_gui.wizard.new_run_wizard import NewRunWizard

from .conftest import FIXTURES
from .helpers import wizard_idle

ROOT = Path(__file__).resolve().parents[2]
CSV = FIXTURES / "support.csv"
SYSTEM = "You are the friendly support team of Acme."


def _next_enabled(wizard) -> bool:
    return wizard.button(QWizard.WizardButton.NextButton).isEnabled()


@pytest.fixture
def wizard(qtbot, tmp_path):
    w = NewRunWizard(tmp_path / "wizard-runs")
    qtbot.addWidget(w)
    w.show()
    return w


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_wizard_makes_the_same_run_folder_as_dragonfarm_new(wizard, qtbot, tmp_path):
    # Data
    assert not _next_enabled(wizard)
    wizard.data_page.set_file(CSV)
    wizard_idle(qtbot, wizard)
    wizard.data_page.system_edit.setText(SYSTEM)
    wizard.data_page.system_edit.editingFinished.emit()
    wizard_idle(qtbot, wizard)
    wizard.data_page.eval_spin.setValue(25)
    assert _next_enabled(wizard), wizard.data_page.reason.text()
    assert wizard.choices.mapping.system_prompt == SYSTEM
    wizard.next()
    # Model
    wizard.model_page.select_preset("Qwen/Qwen2.5-0.5B-Instruct")
    assert _next_enabled(wizard)
    wizard.next()
    # Run folder
    wizard.folder_page.name_edit.setText("wizard-run")
    assert _next_enabled(wizard), wizard.folder_page.reason.text()
    wizard.next()
    # Settings: Quick try
    wizard.settings_page.radios["quick"].click()
    assert wizard.choices.settings["epochs"] == 1.0 and wizard.choices.settings["lora_r"] == 16
    wizard.next()
    # Summary: two test questions of your own (blank lines dropped), and only make the folder
    wizard.summary_page.questions_edit.setPlainText("Where is my parcel?\n\n  Can I pay by invoice?  \n")
    assert wizard.choices.questions == ["Where is my parcel?", "Can I pay by invoice?"]
    wizard.summary_page.start_box.setChecked(False)
    assert ("Quick try: max length 512 tokens, epochs 1, learning rate 0.0005, batch size 4, LoRA rank 16"
            in wizard.summary_page.summary.toPlainText())
    wizard.button(QWizard.WizardButton.FinishButton).click()
    qtbot.waitUntil(lambda: wizard.created_run is not None, timeout=15000)
    made = wizard.created_run
    assert made == tmp_path / "wizard-runs" / "wizard-run"
    assert wizard.start_now is False

    cli_runs = tmp_path / "cli-runs"
    subprocess.run([sys.executable, "-m", "trainer", "new", "--data", str(CSV), "--runs-dir", str(cli_runs),
                    "--name", "wizard-run", "--model", "Qwen/Qwen2.5-0.5B-Instruct", "--system", SYSTEM,
                    "--eval-fraction", "0.25", "--preset", "quick", "--epochs", "1", "--learning-rate", "0.0005", "--lora-r", "16",
                    "--lora-alpha", "32", "--batch-size", "4", "--max-length", "512",
                    "--question", "Where is my parcel?", "--question", "Can I pay by invoice?", "--quiet"],
                   check=True, cwd=ROOT, capture_output=True, timeout=60)
    cli = cli_runs / "wizard-run"
    ours, theirs = _read(made / "config.json"), _read(cli / "config.json")
    assert ours.pop("created_at") and theirs.pop("created_at")
    assert ours == theirs
    assert ours["max_length"] == 512 and ours["model"] == "Qwen/Qwen2.5-0.5B-Instruct"
    assert ours["check_questions"] == ["Where is my parcel?", "Can I pay by invoice?"]
    assert (made / "data" / "train.jsonl").read_bytes() == (cli / "data" / "train.jsonl").read_bytes()
    # 12 examples: under 20, so both keep every example for training (trainer/dataimport/split.py)
    assert not (made / "data" / "eval.jsonl").exists() and not (cli / "data" / "eval.jsonl").exists()
    ours, theirs = _read(made / "data" / "import.json"), _read(cli / "data" / "import.json")
    assert ours.pop("imported_at") and theirs.pop("imported_at")
    assert ours == theirs
    assert sorted(p.name for p in made.rglob("*")) == sorted(p.name for p in cli.rglob("*"))


def test_test_questions_are_checked_and_come_back_with_duplicate(wizard, qtbot, tmp_path):
    from trainer.run.config import MAX_CHECK_QUESTIONS

    wizard.data_page.set_file(CSV)
    wizard_idle(qtbot, wizard)
    while wizard.currentPage() is not wizard.summary_page:  # the defaults on every other page
        assert _next_enabled(wizard), wizard.currentPage().reason.text()
        wizard.next()
    page = wizard.summary_page
    finish = wizard.button(QWizard.WizardButton.FinishButton)
    page.questions_edit.setPlainText("\n".join(f"Question {i}?" for i in range(MAX_CHECK_QUESTIONS + 1)))
    assert not finish.isEnabled()
    assert page.reason.text() == (f"Your test questions: {MAX_CHECK_QUESTIONS + 1} questions; keep at most "
                                  f"{MAX_CHECK_QUESTIONS} (each one is answered twice per run)")
    page.questions_edit.setPlainText("Too long? " + "x" * 2000)
    assert not finish.isEnabled() and "has 2,010 characters; keep it under 2,000" in page.reason.text()
    page.questions_edit.setPlainText("Is the shop open on Sundays?")
    assert finish.isEnabled(), page.reason.text()
    page.start_box.setChecked(False)
    finish.click()
    qtbot.waitUntil(lambda: wizard.created_run is not None, timeout=15000)
    assert _read(wizard.created_run / "config.json")["check_questions"] == ["Is the shop open on Sundays?"]

    from dragonfarm_gui.wizard.prefill import prefill_from_run

    again = NewRunWizard(tmp_path / "wizard-runs", prefill=prefill_from_run(wizard.created_run))
    qtbot.addWidget(again)
    assert again.choices.questions == ["Is the shop open on Sundays?"]


def test_data_page_shows_shape_preview_problems_and_split(wizard, qtbot):
    page = wizard.data_page
    page.set_file(CSV)
    wizard_idle(qtbot, wizard)
    assert "12 usable examples" in page.detected.text()
    assert page.combos["prompt_column"].currentText() == "Question"
    assert page.combos["reply_column"].currentText() == "Answer"
    assert "Where is my order?" in page.preview.toPlainText()
    items = [page.problems.item(i).text() for i in range(page.problems.count())]
    assert len(items) == 1 and items[0].startswith("Skipped: ") and "14" in items[0]  # spreadsheet row 14
    assert page.split_label.text().startswith("All 12 examples train: with fewer than 20 examples each one matters")
    assert page.split_label.text().endswith("the last page lets you add a few test questions of your own to see that.")
    assert page.split_label.wordWrap()


def test_data_page_blocks_with_reasons(wizard, qtbot, tmp_path):
    page = wizard.data_page
    assert page.reason.text() == "Choose a file with your examples, or use the example dataset, to continue."
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    page.set_file(empty)
    wizard_idle(qtbot, wizard)
    assert not _next_enabled(wizard) and "empty" in page.reason.text().lower()
    page.set_file(CSV)
    wizard_idle(qtbot, wizard)
    page.set_mapping(shape="columns", prompt_column="Nope", reply_column="Answer")
    wizard_idle(qtbot, wizard)
    assert not _next_enabled(wizard)
    assert page.reason.text().startswith("None of the rows can be used yet: support.csv has no column 'Nope'")
    page.set_mapping(shape="columns", prompt_column="Question", reply_column="Answer")
    wizard_idle(qtbot, wizard)
    assert _next_enabled(wizard)


def test_example_dataset_is_one_click_away(wizard, qtbot):
    wizard.data_page.example_button.click()
    wizard_idle(qtbot, wizard)
    assert wizard.choices.data_path is not None and wizard.choices.data_path.parent.name == "examples"
    assert _next_enabled(wizard), wizard.data_page.reason.text()


def test_model_page_blocks_bad_models_and_asks_for_token(wizard, qtbot, tmp_path):
    from dragonfarm_gui.logic import tokens

    wizard.data_page.set_file(CSV)

    wizard_idle(qtbot, wizard)
    wizard.next()
    page = wizard.model_page
    page.set_other("not a model id")
    assert not _next_enabled(wizard) and "is not a Hugging Face model id" in page.reason.text()
    page.set_other(str(tmp_path / "missing.gguf"))
    assert "does not exist on this computer" in page.reason.text()
    folder = tmp_path / "model"
    folder.mkdir()
    page.set_other(str(folder))
    assert "has no config.json" in page.reason.text()
    (folder / "config.json").write_text("{}")
    page.set_other(str(folder))
    assert _next_enabled(wizard)
    page.select_preset("meta-llama/Llama-3.2-1B-Instruct")
    assert not _next_enabled(wizard) and "needs a Hugging Face token" in page.reason.text()
    page.token_edit.setText("not-a-token")
    assert "does not look like a Hugging Face token" in page.reason.text()
    page.token_edit.setText("hf_" + "a" * 30)
    assert _next_enabled(wizard)
    wizard.next()
    assert tokens.get_token() == "hf_" + "a" * 30
    assert tokens.token_file().stat().st_mode & 0o777 == 0o600


def test_folder_and_settings_pages_block_with_reasons(wizard, qtbot, tmp_path):
    wizard.data_page.set_file(CSV)
    wizard_idle(qtbot, wizard)
    wizard.next()
    wizard.next()
    page = wizard.folder_page
    (tmp_path / "wizard-runs" / "taken").mkdir(parents=True)
    page.name_edit.setText("taken")
    assert not _next_enabled(wizard) and "already exists" in page.reason.text()
    page.name_edit.setText("my run")
    assert "no spaces" in page.reason.text()
    page.name_edit.setText("my-run")
    assert _next_enabled(wizard)
    wizard.next()
    settings = wizard.settings_page
    settings.fields["epochs"].setValue(0)
    assert not _next_enabled(wizard)
    assert settings.reason.text().startswith("Fix this setting: epochs: must be more than 0")
    assert settings.custom_label.isVisible()
    settings.radios["thorough"].click()
    assert _next_enabled(wizard) and settings.fields["epochs"].value() == 5
    assert "About" in settings.estimate_label.text() and "GB of memory" in settings.estimate_label.text()
