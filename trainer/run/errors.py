"""One error type for problems a person can fix, carried to them in words."""
from __future__ import annotations


class UserError(Exception):
    """A problem with a plain-language message and, where there is one, the fix.

    The command line prints `str(error)`; the trainer also writes it into
    status.json as `error` so the app can show it on the run page.
    """

    def __init__(self, message: str, fix: str | None = None):
        self.message = message
        self.fix = fix
        super().__init__(message if not fix else f"{message}\n{fix}")
