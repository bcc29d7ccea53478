"""The run list: a sortable, filterable table of every run, updating live."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QItemSelectionModel, Qt, Signal
from PySide6.QtWidgets import (QAbstractItemView, QApplication, QComboBox, QHBoxLayout, QHeaderView, QLineEdit,
                               QStyle, QStyledItemDelegate, QStyleOptionProgressBar, QStyleOptionViewItem,
                               QTableView, QVBoxLayout, QWidget)

from trainer.run import status as st

from ..models.run_model import COLUMNS, PATH_ROLE, SORT_ROLE, RunFilterModel, RunListModel

PROGRESS_COLUMN = [key for key, _label in COLUMNS].index("progress")

STATE_FILTERS = (
    ("All runs", ()),
    ("Running", st.ACTIVE_STATES),
    ("Finished", (st.DONE,)),
    ("Needs attention", (st.FAILED, st.INTERRUPTED, st.DAMAGED)),
    ("Stopped", (st.CANCELLED,)),
)


class ProgressDelegate(QStyledItemDelegate):
    """The Progress column as a bar in the style's own look: the fraction comes
    from the model's sort role (negative: no steps known, plain text "—")."""

    def paint(self, painter, option, index) -> None:
        fraction = index.data(SORT_ROLE)
        if not isinstance(fraction, (int, float)) or fraction < 0:
            super().paint(painter, option, index)
            return
        view = QStyleOptionViewItem(option)
        self.initStyleOption(view, index)
        view.text = ""
        style = option.widget.style() if option.widget is not None else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, view, painter, option.widget)  # selection, row colour
        bar = QStyleOptionProgressBar()
        if option.widget is not None:
            bar.initFrom(option.widget)
        bar.rect = option.rect.adjusted(3, 3, -3, -3)
        bar.palette = option.palette
        bar.state = option.state | QStyle.StateFlag.State_Horizontal
        bar.minimum, bar.maximum = 0, 1000
        bar.progress = round(min(1.0, float(fraction)) * 1000)
        bar.text = str(index.data(Qt.ItemDataRole.DisplayRole) or "")
        bar.textVisible = True
        bar.textAlignment = Qt.AlignmentFlag.AlignCenter
        style.drawControl(QStyle.ControlElement.CE_ProgressBar, bar, painter, option.widget)


class RunList(QWidget):
    run_selected = Signal(str)  # path, or "" when nothing is selected

    def __init__(self, runs_dir: Path, parent: QWidget | None = None):
        super().__init__(parent)
        self.model = RunListModel(runs_dir, self)
        self.proxy = RunFilterModel(self)
        self.proxy.setSourceModel(self.model)

        self.search = QLineEdit()
        self.search.setPlaceholderText("Filter by name or model…")
        self.search.setClearButtonEnabled(True)
        self.search.setToolTip("Show only runs whose name or model contains this text")
        self.search.textChanged.connect(self.proxy.setFilterFixedString)
        self.state_filter = QComboBox()
        self.state_filter.setToolTip("Show only runs in these states")
        for label, _states in STATE_FILTERS:
            self.state_filter.addItem(label)
        self.state_filter.currentIndexChanged.connect(lambda i: self.proxy.set_states(STATE_FILTERS[i][1]))

        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(4, Qt.SortOrder.DescendingOrder)  # newest first
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)
        self.table.setAccessibleName("Runs")
        self.progress_delegate = ProgressDelegate(self.table)
        self.table.setItemDelegateForColumn(PROGRESS_COLUMN, self.progress_delegate)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setMinimumSectionSize(60)
        for col, width in ((1, 105), (2, 110), (3, 84), (4, 88), (5, 66)):
            self.table.setColumnWidth(col, width)
        header.setStretchLastSection(False)
        self.table.selectionModel().currentRowChanged.connect(self._on_current)
        self.proxy.rowsInserted.connect(self._select_first_if_none)

        self.setMinimumWidth(280)
        top = QHBoxLayout()
        top.addWidget(self.search, 1)
        top.addWidget(self.state_filter)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.table, 1)

    def start(self) -> None:
        self.model.start()
        self._select_first_if_none()

    def stop(self) -> None:
        self.model.stop()

    def current_path(self) -> str:
        index = self.table.currentIndex()
        return self.proxy.data(index, PATH_ROLE) or "" if index.isValid() else ""

    def select_path(self, path: str | Path) -> bool:
        self.model.refresh()
        row = self.model.row_for_path(str(path))
        if row < 0:
            return False
        index = self.proxy.mapFromSource(self.model.index(row, 0))
        if not index.isValid():
            self.search.clear()
            self.state_filter.setCurrentIndex(0)
            index = self.proxy.mapFromSource(self.model.index(row, 0))
        self.table.selectionModel().setCurrentIndex(
            index, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows)
        return True

    def _select_first_if_none(self, *_args) -> None:
        if not self.table.currentIndex().isValid() and self.proxy.rowCount() > 0:
            self.table.selectionModel().setCurrentIndex(
                self.proxy.index(0, 0),
                QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows)

    def _on_current(self, current, _previous) -> None:
        self.run_selected.emit(self.proxy.data(current, PATH_ROLE) or "" if current.isValid() else "")
