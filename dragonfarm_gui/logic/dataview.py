"""What the wizard's data page says about a scanned file. No Qt.

The page scans in two steps (the first QUICK_ROWS rows at once, then every
row in a worker); these functions word both, and the progress of each.
"""
from __future__ import annotations

import html

from . import theme

QUICK_ROWS = 1000
ROLE_NAMES = {"user": "Person", "assistant": "Model", "system": "Instructions"}
ROLE_COLORS = {"user": "chat_user", "assistant": "chat_model", "system": "chat_system"}


def chats_html(chats: list) -> str:
    muted = theme.color("muted")
    if not chats:
        return f"<p style='color:{muted}'>The first examples appear here as chats.</p>"
    out = []
    for i, chat in enumerate(chats, 1):
        out.append(f"<p style='color:{muted}; margin:6px 0 2px 0'>Example {i}</p>")
        for turn in chat:
            role = turn.get("role", "")
            text = html.escape(str(turn.get("content", ""))).replace("\n", "<br>")
            bg = theme.color(ROLE_COLORS.get(role, "chat_system"))
            out.append(f"<div style='background:{bg}; color:{theme.color('text')}; padding:4px 8px; margin:2px 0'>"
                       f"<b>{ROLE_NAMES.get(role, html.escape(role))}:</b> {text}</div>")
    return "".join(out)


def format_words(report) -> str:
    """'CSV file (UTF-8)': the format, and the text encoding when the import library found one."""
    words = f"{report.format.upper()} file"
    encoding = getattr(report, "encoding", None)
    if encoding and report.format != "xlsx":
        words += f" ({encoding_words(encoding)})"
    return words


def encoding_words(encoding: str) -> str:
    e = encoding.lower().replace("_", "-")
    if e in ("utf-8", "utf8", "utf-8-sig"):
        return "UTF-8"
    if e.startswith("utf-16"):
        return "UTF-16"
    if e in ("cp1252", "windows-1252"):
        return "Windows-1252"
    if e in ("latin-1", "latin1", "iso-8859-1"):
        return "Latin-1"
    return encoding


def detected_html(report) -> str:
    """The line under the file: format, shape and counts, and whether every row was checked."""
    n = report.counts
    name = html.escape(report.file)
    if not report.complete:
        return (f"<b>{name}</b>: {format_words(report)} with {report.shape_words}. "
                f"In the first {n.rows:,} rows: <b>{n.usable:,} usable examples</b>"
                + (f", {n.skipped:,} skipped" if n.skipped else "") + ". Checking the rest…")
    return (f"<b>{name}</b>: {format_words(report)} with {report.shape_words}. "
            f"{n.rows:,} rows, <b>{n.usable:,} usable examples</b>"
            + (f", {n.skipped:,} skipped" if n.skipped else "")
            + (f", {n.duplicates:,} duplicates left out" if n.duplicates else "") + ".")


def problems_label(report) -> str:
    if not report.problems_total:
        return "No problems found." + ("" if report.complete else " (so far)")
    more = report.problems_total - len(report.problems)
    so_far = "" if report.complete else " so far"
    return f"Problems ({report.problems_total:,}{so_far}" + (f", first {len(report.problems)} shown)" if more > 0
                                                             else ")")


def scan_progress_words(rows: int) -> str:
    return f"Checking every row… {rows:,} read" if rows else "Reading the file…"


def create_progress(phase: str, rows: int, total_rows: int) -> tuple[int, str]:
    """Run creation's progress as (per mille, words): checking is the first half, writing the second."""
    total = max(1, total_rows)
    done = min(rows, total) + (total if phase == "writing" else 0)
    words = {"checking": "Checking the examples", "writing": "Writing the run folder"}.get(phase, "Preparing")
    return int(1000 * done / (2 * total)), f"{words}… {rows:,} of {total_rows:,} rows"


CANCELLED_SCAN = ("The check was cancelled, so not every row was looked at. Press Check again to finish it, "
                  "or choose another file.")
