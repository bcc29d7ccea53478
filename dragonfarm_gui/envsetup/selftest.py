"""`--self-test`: proves a built app works without a person. The app opens its
main window, then this checks that the bundle holds what the first-use setup
needs (resources, trainer sources, requirements, uv when frozen) and runs the
device check (`python -m trainer check --json`) in the trainer's Python, and
returns the exit code. No Qt imports: it only pumps the given app's events.

Prints one line per check and, if DRAGONFARM_SELFTEST_REPORT names a file,
writes the whole report there as JSON (a windowed app has no console on Windows).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from trainer.run import launch
from trainer.run.resources import resources_dir

from . import layout

FLAG = "--self-test"
REPORT_ENV = "DRAGONFARM_SELFTEST_REPORT"
SCREENSHOT_ENV = "DRAGONFARM_SELFTEST_SCREENSHOT"   # a .png path: a picture of the main window
CHECK_TIMEOUT_S = 300
STYLESHEET = Path(__file__).resolve().parents[1] / "style" / "app.qss"  # as dragonfarm_gui/style reads it


def wants_self_test(argv: list[str]) -> bool:
    return FLAG in argv


def parse_json_object(text: str) -> dict | None:
    """The first JSON object in `text` (pretty-printed or one line), or None."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
            if isinstance(value, dict):
                return value
        except ValueError:
            pass
        start = text.find("{", start + 1)
    return None


def run_device_check(timeout: float = CHECK_TIMEOUT_S) -> tuple[bool, str, dict | None]:
    """(ok, words, the check's JSON) for `check --json` in the trainer's Python."""
    try:
        program, args = launch.trainer_command("check", "--json")
    except launch.NoTrainerPython as exc:
        return False, str(exc), None
    flags = getattr(subprocess, "CREATE_NO_WINDOW", 0)
    try:
        done = subprocess.run([program, *args], env=launch.trainer_env(), capture_output=True, text=True,
                              encoding="utf-8", errors="replace", timeout=timeout, stdin=subprocess.DEVNULL,
                              creationflags=flags)
    except subprocess.TimeoutExpired:
        return False, f"the device check took longer than {timeout:.0f} s", None
    except OSError as exc:
        return False, f"could not start {program}: {exc.strerror or exc}", None
    data = parse_json_object(done.stdout)
    if done.returncode != 0 or data is None:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return False, f"exit code {done.returncode}: {tail}", data
    return True, f"device {data.get('device')}: {data.get('summary', '')}".strip(), data


def bundle_checks() -> list[tuple[str, bool, str]]:
    """(name, ok, detail) for the files the app and the first-use setup need."""
    res = resources_dir()
    sources = layout.trainer_sources_dir()
    checks = [
        ("resources", (res / "presets.json").is_file(), str(res)),
        ("icon", (res / "icons" / "dragonfarm.png").is_file(), str(res / "icons" / "dragonfarm.png")),
        ("trainer sources", (sources / "trainer" / "__init__.py").is_file()
         and (sources / "trainer" / "resources" / "presets.json").is_file(), str(sources)),
        ("trainer requirements", layout.requirements_file().is_file(), str(layout.requirements_file())),
        ("stylesheet", STYLESHEET.is_file(), str(STYLESHEET)),
    ]
    if launch.is_frozen():
        uv = layout.find_uv({"PATH": ""})   # the bundled one, not one from PATH
        checks.append(("bundled uv", bool(uv and uv.is_file() and os.access(uv, os.X_OK)), str(uv)))
        leaked = [name for name in ("torch", "transformers", "peft", "accelerate") if name in sys.modules]
        checks.append(("no torch in the app", not leaked, ", ".join(leaked) or "none imported"))
    return checks


def run_self_test(app: Any, window: Any) -> int:
    """Called by the app's main() instead of app.exec() when --self-test is given."""
    start = time.monotonic()
    deadline = start + 10
    while not window.isVisible() and time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.02)
    app.processEvents()
    results: list[dict] = [{"check": "main window", "ok": bool(window.isVisible()),
                            "detail": window.windowTitle() or type(window).__name__}]
    shot = os.environ.get(SCREENSHOT_ENV)
    if shot and hasattr(window, "grab"):
        window.grab().save(shot)
    results += [{"check": name, "ok": ok, "detail": detail} for name, ok, detail in bundle_checks()]
    ok, words, data = run_device_check()
    results.append({"check": "device check", "ok": ok, "detail": words})
    app.processEvents()
    passed = all(item["ok"] for item in results)
    report = {"passed": passed, "frozen": launch.is_frozen(), "seconds": round(time.monotonic() - start, 2),
              "trainer_python": os.environ.get("DRAGONFARM_PYTHON") or "", "results": results, "device": data,
              "app_code": str(Path(__file__).resolve().parents[1]), "resources": str(resources_dir())}
    for item in results:
        print(f"self-test {'PASS' if item['ok'] else 'FAIL'}: {item['check']}: {item['detail']}", flush=True)
    print(f"self-test {'passed' if passed else 'FAILED'} in {report['seconds']} s", flush=True)
    target = os.environ.get(REPORT_ENV)
    if target:
        Path(target).write_text(json.dumps(report, indent=2), encoding="utf-8")
    window.close()
    app.processEvents()
    return 0 if passed else 1
