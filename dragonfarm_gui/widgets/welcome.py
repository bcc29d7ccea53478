"""The page shown when no run is selected: what DragonFarm does, and the two ways in."""
from __future__ import annotations

from typing import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QPushButton, QVBoxLayout, QWidget


class WelcomePage(QWidget):
    def __init__(self, new_run: Callable[[bool], object], parent: QWidget | None = None):
        super().__init__(parent)
        title = QLabel("<h2>Teach a small model to answer like your examples</h2>")
        title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        text = QLabel("Bring a spreadsheet or file of example questions and answers, pick a model, "
                      "and watch it learn. Everything stays on this computer.")
        text.setWordWrap(True)
        text.setAlignment(Qt.AlignmentFlag.AlignCenter)
        new = QPushButton("New run…")
        new.setObjectName("primaryButton")
        new.setToolTip("Start the new-run wizard (Ctrl+N)")
        new.clicked.connect(lambda: new_run(False))
        example = QPushButton("Try the example dataset…")
        example.setToolTip("Start the wizard with a small example dataset already chosen")
        example.clicked.connect(lambda: new_run(True))
        layout = QVBoxLayout(self)
        layout.addStretch(1)
        layout.addWidget(title)
        layout.addWidget(text)
        for b in (new, example):
            b.setMinimumWidth(240)
            layout.addWidget(b, 0, Qt.AlignmentFlag.AlignHCenter)
        layout.addStretch(2)
