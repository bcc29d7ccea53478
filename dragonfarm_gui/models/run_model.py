"""The run list as a Qt table model, refreshed live from the runs folder.

A run with a damaged file is one row that says so ("Damaged: eval.json, a
list, not an object"); it never hides the other runs or stops the refresh.
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import (QAbstractTableModel, QFileSystemWatcher, QModelIndex, QObject,
                            QSortFilterProxyModel, Qt, QTimer)
from PySide6.QtGui import QBrush, QColor

from trainer.run.reader import list_runs

from ..logic.runview import fmt_created, fmt_number, model_words, state_words
from ..logic.theme import state_text_color

COLUMNS = (("name", "Name"), ("model", "Model"), ("state", "State"), ("progress", "Progress"),
           ("created_at", "Created"), ("eval_loss", "Held-out"))
HEADER_TIPS = {"eval_loss": "Loss on the held-out examples after training (lower is better)",
               "progress": "Steps done of all steps", "created_at": "When the run was made"}
PATH_ROLE = Qt.ItemDataRole.UserRole + 1
SORT_ROLE = Qt.ItemDataRole.UserRole + 2
STATE_ROLE = Qt.ItemDataRole.UserRole + 3
REFRESH_MS = 1500


def _progress(row: dict) -> tuple[str, float]:
    total, step = row.get("total_steps") or 0, row.get("step") or 0
    if not total:
        return ("—", -1.0)
    frac = min(1.0, step / total)
    return (f"{frac:.0%}", frac)


def damage_words(row: dict) -> str:
    """'Damaged: status.json, not complete JSON' for a damaged run, else ''."""
    damaged = row.get("damaged") or []
    return f"Damaged: {damaged[0]}" if damaged else ""


class RunListModel(QAbstractTableModel):
    def __init__(self, runs_dir: Path, parent: QObject | None = None):
        super().__init__(parent)
        self.runs_dir = Path(runs_dir)
        self.rows: list[dict] = []
        self._watcher = QFileSystemWatcher(self)
        self._watcher.directoryChanged.connect(lambda _p: self.refresh())
        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self.refresh)

    def start(self) -> None:
        self.refresh()
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()
        paths = self._watcher.directories()
        if paths:
            self._watcher.removePaths(paths)

    def set_runs_dir(self, runs_dir: Path) -> None:
        self.stop()
        self.runs_dir = Path(runs_dir)
        self.beginResetModel()
        self.rows = []
        self.endResetModel()
        self.start()

    def refresh(self) -> None:
        if self.runs_dir.is_dir() and str(self.runs_dir) not in self._watcher.directories():
            self._watcher.addPath(str(self.runs_dir))
        try:
            fresh = [run.summary() for run in list_runs(self.runs_dir)]  # summary() never raises for a damaged run
        except OSError:
            return  # the runs folder itself went away or cannot be read; keep what is shown
        by_path = {r["path"]: r for r in fresh}
        # remove gone rows (from the end so indexes stay valid)
        for i in range(len(self.rows) - 1, -1, -1):
            if self.rows[i]["path"] not in by_path:
                self.beginRemoveRows(QModelIndex(), i, i)
                del self.rows[i]
                self.endRemoveRows()
        known = {r["path"]: i for i, r in enumerate(self.rows)}
        for path, row in by_path.items():
            if path in known:
                i = known[path]
                if self.rows[i] != row:
                    self.rows[i] = row
                    self.dataChanged.emit(self.index(i, 0), self.index(i, len(COLUMNS) - 1))
            else:
                n = len(self.rows)
                self.beginInsertRows(QModelIndex(), n, n)
                self.rows.append(row)
                self.endInsertRows()

    def row_for_path(self, path: str) -> int:
        for i, r in enumerate(self.rows):
            if r["path"] == path:
                return i
        return -1

    # ----- Qt model API --------------------------------------------------------
    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section][1]
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.ToolTipRole:
            return HEADER_TIPS.get(COLUMNS[section][0])
        return None

    def data(self, index: QModelIndex, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or index.row() >= len(self.rows):
            return None
        row = self.rows[index.row()]
        key = COLUMNS[index.column()][0]
        if role == PATH_ROLE:
            return row["path"]
        if role == STATE_ROLE:
            return row["state"]
        if role == Qt.ItemDataRole.DisplayRole:
            if key == "state":
                return damage_words(row) or state_words(row["state"])
            if key == "progress":
                return _progress(row)[0]
            if key == "created_at":
                return fmt_created(row.get("created_at") or "")
            if key == "eval_loss":
                return fmt_number(row.get("eval_loss")) if row.get("eval_loss") is not None else ""
            if key == "model":
                return model_words(str(row.get("model") or ""))
            return str(row.get(key) or "")
        if role == SORT_ROLE:
            if key == "progress":
                return _progress(row)[1]
            if key == "eval_loss":
                value = row.get("eval_loss")
                return value if isinstance(value, (int, float)) else float("inf")
            return str(row.get(key) or "").lower()
        if role == Qt.ItemDataRole.ForegroundRole and key == "state":
            return QBrush(QColor(state_text_color(row["state"])))
        if role == Qt.ItemDataRole.ToolTipRole:
            if row.get("damaged"):
                return "Damaged:\n" + "\n".join(row["damaged"][:10]) + "\nOpen the folder to look, or delete the run."
            if row.get("error"):
                return row["error"]
            if key == "model":
                return str(row.get("model") or "")
            return row["path"]
        return None


class RunFilterModel(QSortFilterProxyModel):
    """Sorts by the raw values and filters by text (name or model) and state."""

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.setSortRole(SORT_ROLE)
        self.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.setFilterKeyColumn(-1)
        self.states: tuple[str, ...] = ()

    def set_states(self, states: tuple[str, ...]) -> None:
        if hasattr(self, "beginFilterChange"):  # Qt 6.9+
            self.beginFilterChange()
            self.states = tuple(states)
            self.endFilterChange()
        else:
            self.states = tuple(states)
            self.invalidateFilter()

    def filterAcceptsRow(self, source_row: int, source_parent: QModelIndex) -> bool:  # noqa: N802
        if self.states:
            index = self.sourceModel().index(source_row, 0, source_parent)
            if self.sourceModel().data(index, STATE_ROLE) not in self.states:
                return False
        return super().filterAcceptsRow(source_row, source_parent)
