"""What the app's wizard relies on: an edited report.mapping is used as it is,
progress is reported, and cancelling leaves no folder behind."""
from __future__ import annotations

import dataclasses

import pytest

from dihelpers import A, U, fixture, run_chats
from trainer.dataimport import DataImportError, Mapping, create_run, inspect_file


def test_an_edited_report_mapping_is_used_as_it_is(tmp_path):
    report = inspect_file(fixture("table.tsv"))
    assert report.mapping.system_column == "System"
    edited = dataclasses.replace(report.mapping, system_column=None)  # the person cleared the system column
    assert inspect_file(fixture("table.tsv"), mapping=edited).preview[0] == [U("Where is my order?"),
                                                                            A("It ships today.")]
    run = create_run(fixture("table.tsv"), runs_dir=tmp_path, mapping=edited)
    assert run_chats(run)[0] == [U("Where is my order?"), A("It ships today.")]


def test_an_unknown_shape_is_refused():
    with pytest.raises(DataImportError, match="'tables' is not a shape DragonFarm knows"):
        inspect_file(fixture("qa.csv"), mapping=Mapping(shape="tables"))


def test_progress_is_reported_and_can_cancel(tmp_path):
    data = tmp_path / "big.csv"
    data.write_text("prompt,completion\n" + "".join(f"q{i},a{i}\n" for i in range(25_000)), encoding="utf-8")
    seen = []
    inspect_file(data, progress=seen.append)
    assert seen == [10_000, 20_000, 25_000]

    calls = []

    def cancel(phase, rows):
        calls.append((phase, rows))
        if phase == "writing":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        create_run(data, runs_dir=tmp_path / "runs", progress=cancel)
    assert calls == [("checking", 10_000), ("checking", 20_000), ("checking", 25_000), ("writing", 10_000)]
    assert list((tmp_path / "runs").iterdir()) == []  # the half-made folder is gone


def test_the_import_library_stays_light():
    import subprocess
    import sys

    code = ("import sys, trainer.dataimport, trainer.cli.data\n"
            "heavy = [m for m in ('torch', 'transformers', 'peft', 'accelerate', 'PySide6') if m in sys.modules]\n"
            "print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == ""


def test_run_names_are_safe_folder_names():
    from trainer.dataimport import run_name_for

    assert run_name_for("/data/Kundenanfragen (final).xlsx") == "Kundenanfragen-final"
    assert run_name_for("x.csv", "Beispiele für Kunden") == "Beispiele-für-Kunden"
    assert run_name_for("x.csv", "a/b\\c:d*e?") == "a-b-c-d-e"
    assert run_name_for("x.csv", "con") == "run-con"
    assert run_name_for("x.csv", "...") == "run"
