"""The --self-test logic (with a fake device check), the icon files made from
the SVG, and the packaging files' key settings."""
from __future__ import annotations

import json
import plistlib
import struct
import sys
from pathlib import Path

import pytest

from dragonfarm_gui.envsetup import selftest
from trainer import __version__
from trainer.run import launch

ROOT = Path(__file__).resolve().parents[2]
ICONS = ROOT / "trainer" / "resources" / "icons"


class FakeWindow:
    def __init__(self):
        self.visible = True
        self.closed = False

    def isVisible(self):  # noqa: N802 - mimics Qt
        return self.visible

    def windowTitle(self):  # noqa: N802
        return "DragonFarm"

    def close(self):
        self.closed = True


class FakeApp:
    def __init__(self):
        self.pumped = 0

    def processEvents(self):  # noqa: N802
        self.pumped += 1


CHECK = {"device": "cpu", "summary": "Training will use the CPU.", "torch_version": "2.13.0+cpu"}


def fake_command(code: str):
    return lambda *args, **kwargs: (sys.executable, ["-c", code])


def test_self_test_passes_and_writes_a_report(monkeypatch, tmp_path, capsys):
    report = tmp_path / "report.json"
    monkeypatch.setenv(selftest.REPORT_ENV, str(report))
    monkeypatch.setattr(selftest.launch, "trainer_command",
                        fake_command(f"import json; print(json.dumps({CHECK!r}, indent=2))"))
    window, app = FakeWindow(), FakeApp()
    assert selftest.run_self_test(app, window) == 0
    assert window.closed and app.pumped >= 2
    data = json.loads(report.read_text())
    assert data["passed"] is True and data["device"] == CHECK
    names = [item["check"] for item in data["results"]]
    assert names == ["main window", "resources", "icon", "trainer sources", "trainer requirements", "stylesheet",
                     "device check"]
    out = capsys.readouterr().out
    assert "self-test PASS: device check: device cpu: Training will use the CPU." in out
    assert "self-test passed in" in out


def test_self_test_fails_when_the_check_fails(monkeypatch, capsys):
    monkeypatch.delenv(selftest.REPORT_ENV, raising=False)
    monkeypatch.setattr(selftest.launch, "trainer_command",
                        fake_command("import sys; print('No module named trainer', file=sys.stderr); sys.exit(1)"))
    assert selftest.run_self_test(FakeApp(), FakeWindow()) == 1
    assert "self-test FAIL: device check: exit code 1: No module named trainer" in capsys.readouterr().out


def test_self_test_without_trainer_python(monkeypatch):
    def missing(*args, **kwargs):
        raise launch.NoTrainerPython("The training environment is not set up yet.")

    monkeypatch.setattr(selftest.launch, "trainer_command", missing)
    ok, words, data = selftest.run_device_check()
    assert (ok, words, data) == (False, "The training environment is not set up yet.", None)


def test_parse_json_object():
    assert selftest.parse_json_object('noise\n{\n  "device": "cpu"\n}\n') == {"device": "cpu"}
    assert selftest.parse_json_object('{broken\n{"a": 1}') == {"a": 1}
    assert selftest.parse_json_object("nothing") is None
    assert selftest.wants_self_test(["app", "--self-test"]) and not selftest.wants_self_test(["app"])


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_icons_made_from_the_svg():
    assert (ICONS / "dragonfarm.svg").read_text().lstrip().startswith("<svg")
    assert png_size((ICONS / "dragonfarm.png").read_bytes()) == (256, 256)
    for size in (16, 32, 48, 256):
        assert png_size((ICONS / f"dragonfarm-{size}.png").read_bytes()) == (size, size)
    ico = (ICONS / "dragonfarm.ico").read_bytes()
    reserved, kind, count = struct.unpack("<HHH", ico[:6])
    assert (reserved, kind, count) == (0, 1, 7)
    sides = []
    for index in range(count):
        width, height, _, _, planes, bits, length, offset = struct.unpack("<BBBBHHII", ico[6 + 16 * index:22 + 16 * index])
        assert png_size(ico[offset:offset + length]) == ((width or 256), (height or 256))
        sides.append(width or 256)
    assert sides == [16, 24, 32, 48, 64, 128, 256]
    icns = (ICONS / "dragonfarm.icns").read_bytes()
    assert icns[:4] == b"icns" and struct.unpack(">I", icns[4:8])[0] == len(icns)
    assert b"ic10" in icns and b"icp4" in icns


def test_packaging_files_agree():
    info = plistlib.loads((ROOT / "packaging" / "macos" / "Info.plist").read_bytes())
    assert info["CFBundleShortVersionString"] == __version__
    assert info["CFBundleExecutable"] == "DragonFarm"
    spec = (ROOT / "packaging" / "dragonfarm.spec").read_text()
    for name in ('"torch"', '"transformers"', '"peft"', '"accelerate"'):
        assert name in spec.split("EXCLUDES = [", 1)[1].split("]", 1)[0]
    assert "uv.find_uv_bin()" in spec and "console=False" in spec
    iss = (ROOT / "packaging" / "windows" / "dragonfarm.iss").read_text()
    assert "PrivilegesRequired=lowest" in iss and "{autodesktop}" in iss and "{autoprograms}" in iss
    build = (ROOT / "packaging" / "requirements-build.txt").read_text()
    assert "uv==" in build and "pyinstaller==" in build


def test_release_workflow_builds_both():
    yaml = pytest.importorskip("yaml")
    flow = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())
    jobs = flow["jobs"]
    assert jobs["windows"]["runs-on"] == "windows-latest" and jobs["macos"]["runs-on"] == "macos-latest"
    assert set(jobs["publish"]["needs"]) == {"windows", "macos"}
    signing = [step for step in jobs["windows"]["steps"] if step.get("name", "").startswith("Sign")]
    assert signing and all(step["if"] == "env.WINDOWS_CERT_PFX_BASE64 != ''" for step in signing)


def test_envsetup_never_imports_the_training_stack_and_logic_has_no_qt():
    import subprocess

    script = (
        "import sys, importlib\n"
        "for name in ('torch_index', 'layout', 'steps', 'runner', 'selftest', '__main__'):\n"
        "    importlib.import_module('dragonfarm_gui.envsetup.' + name)\n"
        "qt = sorted(m for m in sys.modules if m.startswith('PySide6'))\n"
        "importlib.import_module('dragonfarm_gui.envsetup.dialog')\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers', 'peft', 'accelerate'))\n"
        "print('QT:' + ','.join(qt)); print('HEAVY:' + ','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.splitlines()[-2:] == ["QT:", "HEAVY:"]
