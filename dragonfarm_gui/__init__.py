"""DragonFarm's desktop app (PySide6 + pyqtgraph).

It never imports torch, transformers or peft: it talks to the trainer only
through run-folder files and starts it as a separate process.
"""
__all__ = ["__version__"]

from trainer import __version__  # noqa: E402  (stdlib-only package init)
