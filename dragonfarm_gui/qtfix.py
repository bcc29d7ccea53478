"""Work around a PySide6 6.12 bug on Python 3.11 and older.

PySide6 6.12.0's bindings return None from void C++ methods without taking a
reference to it, which is only harmless on Python 3.12+ where None is
immortal (PEP 683). On 3.11 every such call (QPainter.setPen, setFont, ...)
lowers None's reference count by one; it starts near 5,000, so a window that
paints a plot dies within seconds with "Fatal Python error: none_dealloc".
Giving None a reference count no program can use up makes it immortal here
too. Nothing else changes; on 3.12+ this does nothing.
"""
from __future__ import annotations

import ctypes
import platform
import sys

_DONE = False


def protect_none() -> bool:
    """Make None, True and False effectively immortal on CPython < 3.12; True when applied."""
    global _DONE
    if _DONE or sys.version_info >= (3, 12) or platform.python_implementation() != "CPython":
        return False
    # ob_refcnt is the first field of every CPython object (a Py_ssize_t).
    # True and False too: emitting a bool signal (and pyqtgraph's setData) drops them the same way.
    for singleton in (None, True, False):
        ctypes.c_ssize_t.from_address(id(singleton)).value += 1 << 60
    _DONE = True
    return True
