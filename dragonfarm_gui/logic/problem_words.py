"""Import problems in the app's words: trainer/dataimport writes messages for
the command line ("use --prompt-column ..."); inside the wizard they name the
wizard's own controls. No Qt."""
from __future__ import annotations

import re

# Command-line flag -> the wizard control that does the same (data page labels).
FLAG_CONTROLS = {
    "--prompt-column": "Prompt column",
    "--reply-column": "Reply column",
    "--input-column": "Extra input column",
    "--system-column": "System prompt column",
    "--messages-column": "Chat column",
    "--sheet": "Sheet",
}
_FLAG = re.compile(r"--[a-z][a-z-]*")


def in_app_words(message: str, cli_hint: str = "") -> str:
    """`message` with its command-line ending (`cli_hint`) told in terms of the
    wizard's controls; unchanged when it has none."""
    if not cli_hint or not message.endswith(cli_hint):
        return message
    base = message[: len(message) - len(cli_hint)].rstrip("; ,")
    flags = _FLAG.findall(cli_hint)
    if not flags or any(f not in FLAG_CONTROLS for f in flags):
        return base + "."  # a flag the wizard has no control for: leave the command line out
    words = cli_hint.replace("on the command line use", "use")
    words = re.sub(r"with (--[a-z][a-z-]*)", r"in \1", words)
    words = _FLAG.sub(lambda m: f"the “{FLAG_CONTROLS[m.group(0)]}” list", words)
    return f"{base}; {words}."


def problem_words(problem) -> str:
    """A dataimport Problem's message for the app."""
    return in_app_words(problem.message, getattr(problem, "cli_hint", ""))
