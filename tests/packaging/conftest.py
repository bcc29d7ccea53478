"""Fixtures for the packaging tests: a fake `uv` that records its arguments
and can be told to fail or stall at a given step, and a temporary env layout."""
from __future__ import annotations

import json
import os
import stat
import sys
import textwrap
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

FAKE_UV = textwrap.dedent('''\
    #!{python}
    """A stand-in for uv: records argv, imitates the few commands we use."""
    import json, os, sys, time
    from pathlib import Path

    args = sys.argv[1:]
    with open(os.environ["FAKE_UV_LOG"], "a") as log:
        log.write(json.dumps(["uv"] + args) + "\\n")
    joined = " ".join(args)
    fail_file = os.environ.get("FAKE_UV_FAIL_FILE")
    if fail_file and os.path.exists(fail_file):
        needle = open(fail_file).read().strip()
        if needle and needle in joined:
            os.remove(fail_file)
            print("error: Failed to download `" + needle + "`: connection reset", flush=True)
            sys.exit(2)
    stall = os.environ.get("FAKE_UV_STALL")
    if stall and stall in joined:
        print("Downloading " + stall + " ...", flush=True)
        time.sleep(60)
    if args[:2] == ["python", "install"]:
        print("Installed Python 3.11.18 in 0.01s")
    elif args[:1] == ["venv"]:
        env = Path(args[-1])
        site = env / "lib" / "python3.11" / "site-packages"
        site.mkdir(parents=True)
        (env / "bin").mkdir()
        (env / "pyvenv.cfg").write_text("home = /fake\\nrelocatable = true\\n")
        py = env / "bin" / "python"
        py.write_text(open(os.environ["FAKE_PY_SOURCE"]).read())
        py.chmod(0o755)
        print("Creating virtual environment at: " + str(env))
    elif args[:2] == ["pip", "install"]:
        target = args[args.index("--python") + 1]
        assert os.path.exists(target), "no such python " + target
        print("Resolved 20 packages in 0.1s")
        print(" + " + (args[4] if len(args) > 4 and args[4] != "-r" else "requirements"))
    else:
        print("fake uv: unknown command " + joined, file=sys.stderr)
        sys.exit(2)
''')

FAKE_PYTHON = textwrap.dedent('''\
    #!{python}
    import json, os, sys
    with open(os.environ["FAKE_UV_LOG"], "a") as log:
        log.write(json.dumps(["python"] + sys.argv[1:]) + "\\n")
    if os.environ.get("FAKE_PY_FAIL"):
        print("ModuleNotFoundError: No module named 'torch'", file=sys.stderr)
        sys.exit(1)
    site = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib", "python3.11", "site-packages")
    assert os.path.isfile(os.path.join(site, "trainer", "__init__.py")), "trainer was not copied"
    print(json.dumps({{"python": "3.11.18", "torch": "2.13.0+cpu", "cuda": None, "transformers": "5.24.0",
                      "peft": "0.21.2", "accelerate": "1.15.0", "huggingface_hub": "2.4.0",
                      "safetensors": "0.8.0", "trainer": "0.1.0"}}))
''')


class FakeUv:
    def __init__(self, folder: Path):
        self.folder = folder
        self.path = folder / "uv"
        self.log = folder / "calls.jsonl"
        self.fail_file = folder / "fail-once.txt"
        py_source = folder / "fake_python.py"
        py_source.write_text(FAKE_PYTHON.format(python=sys.executable))
        self.path.write_text(FAKE_UV.replace("{python}", sys.executable))
        self.path.chmod(self.path.stat().st_mode | stat.S_IEXEC)
        self.env = {"FAKE_UV_LOG": str(self.log), "FAKE_PY_SOURCE": str(py_source),
                    "FAKE_UV_FAIL_FILE": str(self.fail_file)}

    def fail_once(self, needle: str) -> None:
        self.fail_file.write_text(needle)

    def calls(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


@pytest.fixture
def fake_uv(tmp_path, monkeypatch) -> FakeUv:
    if os.name == "nt":
        pytest.skip("the fake uv is a POSIX script")
    fake = FakeUv(tmp_path / "fakeuv" if (tmp_path / "fakeuv").mkdir() is None else tmp_path)
    for key, value in fake.env.items():
        monkeypatch.setenv(key, value)
    for key in ("DRAGONFARM_TORCH_INDEX", "DRAGONFARM_BASE_PYTHON", "DRAGONFARM_PYTHON"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("DRAGONFARM_ENV_DIR", str(tmp_path / "DragonFarm" / "env"))
    monkeypatch.setenv("DRAGONFARM_CONFIG_DIR", str(tmp_path / "config"))
    return fake


@pytest.fixture
def env_layout(tmp_path):
    from dragonfarm_gui.envsetup.layout import EnvLayout

    return EnvLayout(tmp_path / "DragonFarm" / "env")
