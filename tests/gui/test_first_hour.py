"""What a new user saw in the first hour: the plot's step range before
training, the main splitter moving with text lengths, the Progress column."""
from __future__ import annotations

import pytest

from trainer.run import status as st

from .helpers import append_line, write_status

WAIT = 10_000
LONG_NAME = "customer-support-replies-for-the-spring-catalogue-with-the-new-return-policy-" * 2


def _page(window, qtbot, run):
    qtbot.waitUntil(lambda: window.run_page is not None and window.run_page.run is not None
                    and window.run_page.run.path == run, timeout=5000)
    return window.run_page


def test_plot_shows_the_whole_step_range_from_the_start(window, qtbot, sample_run):
    page = _page(window, qtbot, sample_run)
    write_status(sample_run, st.TRAINING, step=0, total_steps=400)
    append_line(sample_run, {"step": 0, "epoch": 0.0, "eval_loss": 2.5, "elapsed_s": 0.0, "time": 0.0})
    qtbot.waitUntil(lambda: page.plot.eval_steps == [0.0], timeout=WAIT)
    qtbot.waitUntil(lambda: page.plot.total_steps == 400, timeout=WAIT)
    item = page.plot.plot.getPlotItem()
    (x0, x1), _ = item.vb.viewRange()
    assert -20 < x0 <= 0 and 400 <= x1 < 420, (x0, x1)
    assert not item.getAxis("bottom").autoSIPrefix  # no "(x0.001)"
    append_line(sample_run, {"step": 1, "epoch": 0.0, "loss": 2.4, "elapsed_s": 1.0, "time": 1.0})
    qtbot.waitUntil(lambda: page.plot.steps == [1.0], timeout=WAIT)
    (x0, x1), _ = item.vb.viewRange()
    assert -20 < x0 <= 0 and 400 <= x1 < 420, (x0, x1)


def test_plot_range_follows_steps_past_the_total_and_resets(qtbot):
    from dragonfarm_gui.widgets.loss_plot import LossPlot

    plot = LossPlot()
    qtbot.addWidget(plot)
    plot.set_total_steps(10)
    plot.add_records([{"step": s, "loss": 1.0 / s} for s in range(1, 16)])
    (_x0, x1), _ = plot.plot.getPlotItem().vb.viewRange()
    assert x1 >= 15
    plot.clear()
    assert plot.total_steps == 0
    (x0, x1), (y0, y1) = plot.plot.getPlotItem().vb.viewRange()
    assert x1 <= 11 and y1 < 5  # the next run's empty plot shows nothing of this one's range


@pytest.fixture
def long_run(runs_dir):
    from trainer.dataimport import create_run

    from .conftest import FIXTURES

    return create_run(FIXTURES / "support.csv", runs_dir=runs_dir, name=LONG_NAME.strip("-"),
                      config_overrides={"epochs": 1})


def test_splitter_keeps_the_persons_split_through_text_changes(window, qtbot, long_run):
    page = _page(window, qtbot, long_run)
    window.split.setSizes([520, 760])
    qtbot.wait(50)
    sizes = window.split.sizes()
    minimum = page.minimumWidth()
    assert 0 < minimum < sizes[1]
    assert page.layout().minimumSize().width() <= minimum
    for state, fields in ((st.LOADING, {"message": "Getting the model " + "x" * 200}),
                          (st.TRAINING, {"step": 3, "total_steps": 1_000_000, "device": "cuda",
                                         "device_name": "NVIDIA GeForce RTX 4090 Laptop GPU with a long name"}),
                          (st.FAILED, {"error": "Something went wrong " * 20}),
                          (st.CANCELLED, {"step": 5, "total_steps": 10})):
        write_status(long_run, state, live=state in st.ACTIVE_STATES, **fields)
        qtbot.waitUntil(lambda s=state: page.view_state == s, timeout=WAIT)
        qtbot.wait(30)
        assert window.split.sizes() == sizes, state
        assert page.minimumWidth() == minimum, state
        assert page.layout().minimumSize().width() <= minimum, state  # the content never asks for more
    write_status(long_run, st.TRAINING, live=False, step=4, total_steps=10)
    qtbot.waitUntil(lambda: page.view_state == st.INTERRUPTED, timeout=WAIT)
    assert window.split.sizes() == sizes
    assert page.title.full_text() == long_run.name
    assert page.title.text().endswith("…") and page.title.toolTip() == long_run.name


def test_split_is_remembered(qtbot, runs_dir):
    from dragonfarm_gui.widgets.main_window import MainWindow

    first = MainWindow()
    qtbot.addWidget(first)
    first.show()
    first.split.setSizes([400, 880])
    qtbot.wait(20)
    sizes = first.split.sizes()
    first.shutdown()
    second = MainWindow()
    qtbot.addWidget(second)
    second.resize(first.size())  # the offscreen platform does not restore window geometry
    second.show()
    qtbot.wait(20)
    assert second.split.sizes() == sizes
    second.shutdown()


def _cell_image(table, row, col):
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtWidgets import QStyleOptionViewItem

    index = table.model().index(row, col)
    option = QStyleOptionViewItem()
    option.initFrom(table)
    option.rect = table.visualRect(index).translated(-table.visualRect(index).topLeft())
    option.rect.setWidth(200)
    image = QImage(option.rect.size(), QImage.Format.Format_RGB32)
    image.fill(0xFFFFFF)
    painter = QPainter(image)
    table.itemDelegateForColumn(col).paint(painter, option, index)
    painter.end()
    return image


def test_progress_column_is_a_bar(window, qtbot, sample_run):
    from PySide6.QtGui import QColor, QPalette

    from dragonfarm_gui.widgets.run_list import PROGRESS_COLUMN, ProgressDelegate

    table = window.run_list.table
    assert isinstance(table.itemDelegateForColumn(PROGRESS_COLUMN), ProgressDelegate)
    palette = table.palette()
    palette.setColor(QPalette.ColorRole.Highlight, QColor(255, 0, 0))
    table.setPalette(palette)
    write_status(sample_run, st.TRAINING, step=1, total_steps=4)
    model = window.run_list.model
    qtbot.waitUntil(lambda: model.data(model.index(0, PROGRESS_COLUMN)) == "25%", timeout=WAIT)

    def red(image, x):
        c = image.pixelColor(x, image.height() // 2)
        return c.red() > 150 and c.green() < 110 and c.blue() < 110

    image = _cell_image(table, 0, PROGRESS_COLUMN)
    assert red(image, 12) and not red(image, 150)  # a quarter filled
    write_status(sample_run, st.TRAINING, step=4, total_steps=4)
    qtbot.waitUntil(lambda: model.data(model.index(0, PROGRESS_COLUMN)) == "100%", timeout=WAIT)
    image = _cell_image(table, 0, PROGRESS_COLUMN)
    assert red(image, 12) and red(image, 185)
