"""Import problems name the wizard's controls inside the app, and command-line
flags only on the command line."""
from __future__ import annotations

from pathlib import Path

from dragonfarm_gui.logic.problem_words import in_app_words
from .helpers import wizard_idle
from trainer.dataimport import inspect_file

WORKBOOK = Path(__file__).resolve().parents[1] / "dataimport" / "fixtures" / "workbook.xlsx"


def test_mapping_problem_keeps_flags_for_the_cli_and_names_controls_in_the_app():
    problem = inspect_file(WORKBOOK).problems[0]
    assert "--prompt-column" in problem.message  # the command line still says what to type
    words = in_app_words(problem.message, problem.cli_hint)
    assert words == ("Choose the column that holds the prompts (the columns of the sheet 'Notes' are "
                     "'These are my notes'); use the “Prompt column” list and the “Reply column” list; "
                     "or pick another sheet ('Answers') in the “Sheet” list.")


def test_messages_without_a_hint_are_unchanged_and_unknown_flags_are_dropped():
    assert in_app_words("Row 3 has an empty reply", "") == "Row 3 has an empty reply"
    assert in_app_words("Fix it; use --prompt-column", "use --other") == "Fix it; use --prompt-column"
    assert in_app_words("Pick a column; on the command line use --frobnicate",
                        "on the command line use --frobnicate") == "Pick a column."


def test_wizard_data_page_shows_no_command_line_flags(qtbot, tmp_path):
    from dragonfarm_gui.wizard.new_run_wizard import NewRunWizard

    wizard = NewRunWizard(tmp_path / "runs")
    qtbot.addWidget(wizard)
    wizard.show()
    page = wizard.data_page
    page.set_file(WORKBOOK)
    wizard_idle(qtbot, wizard)  # the scan runs in a worker
    texts = [page.problems.item(i).text() for i in range(page.problems.count())]
    assert texts and any("“Prompt column” list" in t for t in texts)
    assert not any("--" in t for t in texts)
    reason = page.problem()
    assert "“Reply column” list" in reason and "--" not in reason
