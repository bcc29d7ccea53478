"""The live view: new progress lines reach the plot and labels; status changes reach the list."""
from __future__ import annotations

from PySide6.QtCore import Qt

from trainer.run import status as st

from .helpers import append_line, append_raw, train_line, write_status

WAIT = 3000


def _page(window, qtbot, run):
    qtbot.waitUntil(lambda: window.run_page is not None and window.run_page.run is not None
                    and window.run_page.run.path == run, timeout=WAIT)
    return window.run_page


def test_progress_lines_update_plot_and_labels(window, qtbot, sample_run):
    page = _page(window, qtbot, sample_run)
    write_status(sample_run, st.TRAINING, step=2, total_steps=10, device="cpu", device_name="Test CPU",
                 precision="fp32")
    append_line(sample_run, train_line(1, 3.0))
    append_line(sample_run, train_line(2, 2.5, learning_rate=2e-4, tokens_per_second=640.0, eta_s=125.0))
    qtbot.waitUntil(lambda: page.plot.steps == [1.0, 2.0], timeout=WAIT)
    assert page.plot.losses == [3.0, 2.5]
    assert list(page.plot.raw_curve.getData()[1]) == [3.0, 2.5]
    assert len(page.plot.smooth_curve.getData()[1]) == 2
    qtbot.waitUntil(lambda: page.values["step"].text() == "2 / 10 (20%)", timeout=WAIT)
    assert page.values["loss"].text() == "2.500"
    assert page.values["learning_rate"].text() == "2.00e-04"
    assert page.values["tokens_per_second"].text() == "640"
    assert page.values["eta"].text() == "2 min 05 s"
    assert page.values["device"].text() == "CPU: Test CPU (fp32)"
    assert page.state_label.text() == "Training"


def test_line_written_in_two_halves(window, qtbot, sample_run):
    page = _page(window, qtbot, sample_run)
    append_line(sample_run, train_line(1, 3.0))
    qtbot.waitUntil(lambda: page.plot.steps == [1.0], timeout=WAIT)
    text = '{"step": 2, "epoch": 0.2, "loss": 2.25, "learning_rate": 0.0001, "tokens_per_second": 100.0}\n'
    append_raw(sample_run, text[:30])
    qtbot.wait(700)  # longer than the fallback timer: the half line must not be drawn
    assert page.plot.steps == [1.0]
    append_raw(sample_run, text[30:])
    qtbot.waitUntil(lambda: page.plot.steps == [1.0, 2.0], timeout=WAIT)
    assert page.plot.losses == [3.0, 2.25]
    assert page.values["loss"].text() == "2.250"


def test_eval_points_and_hover_values(window, qtbot, sample_run):
    page = _page(window, qtbot, sample_run)
    for step, loss in ((1, 3.0), (2, 2.0), (3, 1.5)):
        append_line(sample_run, train_line(step, loss))
    append_line(sample_run, {"step": 2, "epoch": 0.2, "eval_loss": 2.4, "elapsed_s": 4.0, "time": 0})
    qtbot.waitUntil(lambda: page.plot.eval_steps == [2.0], timeout=WAIT)
    xs, ys = page.plot.eval_points.getData()
    assert list(xs) == [2.0] and list(ys) == [2.4]
    assert page.values["loss"].text() == "1.500"  # an eval line does not replace the last training loss
    text = page.plot.show_values_at(2.2)
    assert text.startswith("Step 2: loss 2.0000")
    assert "held-out loss 2.4000" in text
    assert page.plot.hover_label.text() == text


def test_status_change_updates_run_list(window, qtbot, sample_run):
    from dragonfarm_gui.models.run_model import STATE_ROLE

    model = window.run_list.model
    qtbot.waitUntil(lambda: model.rowCount() == 1, timeout=WAIT)

    def row_texts():
        return [model.data(model.index(0, c)) for c in range(model.columnCount())]

    write_status(sample_run, st.TRAINING, step=3, total_steps=12)
    qtbot.waitUntil(lambda: model.data(model.index(0, 0), STATE_ROLE) == st.TRAINING, timeout=WAIT)
    assert row_texts()[2:4] == ["Training", "25%"]
    write_status(sample_run, st.DONE, step=12, total_steps=12)
    st.write_json_atomic(sample_run / "eval.json", {"before": {"loss": 3.0}, "after": {"loss": 1.25}})
    qtbot.waitUntil(lambda: row_texts()[2] == "Finished" and row_texts()[5] == "1.250", timeout=WAIT)
    assert row_texts()[3] == "100%"


def test_dead_trainer_shows_interrupted_with_resume(window, qtbot, sample_run):
    page = _page(window, qtbot, sample_run)
    write_status(sample_run, st.TRAINING, live=False, step=4, total_steps=10)
    qtbot.waitUntil(lambda: page.view_state == st.INTERRUPTED, timeout=WAIT)
    assert page.state_label.text() == "Interrupted (can be resumed)"
    assert page.buttons["resume"].isEnabled()
    assert not page.buttons["cancel"].isEnabled()
    assert "Resume" in page.message.text()


def test_progress_reset_when_file_shrinks(window, qtbot, sample_run):
    page = _page(window, qtbot, sample_run)
    append_line(sample_run, train_line(1, 3.0))
    append_line(sample_run, train_line(2, 2.0))
    qtbot.waitUntil(lambda: len(page.plot.steps) == 2, timeout=WAIT)
    (sample_run / "progress.jsonl").write_text("")
    append_line(sample_run, train_line(1, 2.9))
    qtbot.waitUntil(lambda: page.plot.losses == [2.9], timeout=WAIT)


def test_run_list_sorts_and_filters(window, qtbot, runs_dir, sample_run):
    from trainer.dataimport import create_run

    from .conftest import FIXTURES

    other = create_run(FIXTURES / "support.csv", runs_dir=runs_dir, name="another")
    write_status(sample_run, st.DONE, live=False, step=3, total_steps=3)
    st.write_json_atomic(sample_run / "eval.json", {"before": {"loss": 3.0}, "after": {"loss": 2.0}})
    write_status(other, st.DONE, live=False, step=3, total_steps=3)
    st.write_json_atomic(other / "eval.json", {"before": {"loss": 3.0}, "after": {"loss": 1.0}})
    rl = window.run_list
    proxy = rl.proxy
    qtbot.waitUntil(lambda: proxy.rowCount() == 2 and proxy.index(0, 5).data() in ("1.000", "2.000"), timeout=WAIT)

    def names():
        return [proxy.index(r, 0).data() for r in range(proxy.rowCount())]

    rl.table.sortByColumn(5, Qt.SortOrder.AscendingOrder)
    assert names() == ["another", "support"]
    rl.table.sortByColumn(5, Qt.SortOrder.DescendingOrder)
    assert names() == ["support", "another"]
    rl.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)
    assert names() == ["another", "support"]
    rl.search.setText("SUPP")
    assert names() == ["support"]
    rl.search.clear()
    rl.state_filter.setCurrentIndex(1)  # Running
    assert names() == []
    write_status(other, st.TRAINING, step=1, total_steps=3)
    qtbot.waitUntil(lambda: names() == ["another"], timeout=WAIT)
    rl.state_filter.setCurrentIndex(2)  # Finished
    assert names() == ["support"]


def test_the_legend_names_held_out_dots_only_when_the_run_holds_examples_out(window, qtbot, sample_run):
    import json

    page = _page(window, qtbot, sample_run)

    def named() -> list[str]:
        return [label.text for _sample, label in page.plot.legend.items]
    assert "Held-out loss" in named()
    nothing = {"loss": None, "perplexity": None, "examples": 0}
    (sample_run / "eval.json").write_text(json.dumps({"before": nothing, "after": None}))
    qtbot.waitUntil(lambda: "Held-out loss" not in named(), timeout=WAIT)
    assert named() == ["Training loss", "Smoothed"]
    (sample_run / "eval.json").write_text(json.dumps({"before": {"loss": 3.0, "examples": 4}, "after": None}))
    qtbot.waitUntil(lambda: named() == ["Training loss", "Smoothed", "Held-out loss"], timeout=WAIT)
