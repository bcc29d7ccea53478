"""The ordered steps that build the managed trainer environment (no Qt).

Everything is built in a staging folder beside the real one. Only when every
step has worked does the last step write the marker (with the versions) and
swap the staging folder into place, so a half-made environment is never taken
for a good one (trainer.run.launch ignores a folder without the marker).

Both the Qt dialog (QProcess) and the plain runner (subprocess) run these.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from trainer import __version__ as APP_VERSION

from . import layout as layout_mod
from .layout import EnvLayout
from .torch_index import TORCH_VERSION, TorchChoice


class SetupError(RuntimeError):
    """A step failed; the message is for the person, in plain words."""


CHECK_CODE = (
    "import json, sys, torch, transformers, peft, accelerate, huggingface_hub, safetensors, trainer\n"
    "print(json.dumps({'python': sys.version.split()[0], 'torch': torch.__version__,"
    " 'cuda': torch.version.cuda, 'transformers': transformers.__version__, 'peft': peft.__version__,"
    " 'accelerate': accelerate.__version__, 'huggingface_hub': huggingface_hub.__version__,"
    " 'safetensors': safetensors.__version__, 'trainer': trainer.__version__}))\n"
)


@dataclass
class SetupContext:
    layout: EnvLayout
    uv: Path
    choice: TorchChoice
    requirements: Path
    sources: Path
    versions: dict = field(default_factory=dict)


@dataclass
class Step:
    title: str
    argv: list[str] | None = None                                   # a command to run
    prepare: Callable[[SetupContext], None] | None = None           # quick, before argv
    finish: Callable[[SetupContext, str], None] | None = None       # quick, after success; gets stdout
    network: bool = False                                           # downloads things

    def describe(self) -> str:
        return " ".join(self.argv) if self.argv else self.title


def make_context(uv: Path | None = None, choice: TorchChoice | None = None,
                 env_layout: EnvLayout | None = None) -> SetupContext:
    """A context for this machine. Raises SetupError when uv cannot be found or
    no torch build fits (e.g. an Intel Mac)."""
    from .torch_index import choose_for_this_machine

    uv = uv or layout_mod.find_uv()
    if uv is None:
        raise SetupError("DragonFarm could not find its installer helper (uv). Reinstall DragonFarm, "
                         f"or set {layout_mod.UV_ENV} to the path of a uv program.")
    try:
        choice = choice or choose_for_this_machine()
    except ValueError as exc:
        raise SetupError(str(exc)) from None
    if not choice.supported:
        raise SetupError(f"{choice.reason} {choice.hint}".strip())
    return SetupContext(env_layout or EnvLayout.default(), Path(uv), choice,
                        layout_mod.requirements_file(), layout_mod.trainer_sources_dir())


def build_steps(ctx: SetupContext) -> list[Step]:
    uv, lay = str(ctx.uv), ctx.layout
    py = str(lay.staging_python())
    torch_cmd = [uv, "pip", "install", "--python", py, f"torch=={TORCH_VERSION}"]
    if ctx.choice.index_url:
        torch_cmd += ["--index-url", ctx.choice.index_url]
    if ctx.choice.find_links:
        torch_cmd += ["--find-links", ctx.choice.find_links]
    base_python = os.environ.get(layout_mod.BASE_PYTHON_ENV)
    if base_python:  # a given interpreter instead of a uv-managed one (offline machines, tests)
        get_python = Step(f"Using Python {base_python}", prepare=_check_base_python)
    else:
        get_python = Step(f"Getting Python {layout_mod.PYTHON_VERSION}",
                          [uv, "python", "install", layout_mod.PYTHON_VERSION], network=True)
    return [
        get_python,
        Step("Making a new environment", [uv, "venv", "--python", base_python or layout_mod.PYTHON_VERSION,
                                          "--relocatable", str(lay.staging_dir)], prepare=_prepare_staging),
        Step(f"Installing PyTorch ({ctx.choice.build} build, about 1-3 GB)", torch_cmd, network=True),
        Step("Installing the training libraries", [uv, "pip", "install", "--python", py,
                                                   "-r", str(ctx.requirements)], network=True),
        Step("Adding DragonFarm's trainer", prepare=_copy_trainer),
        Step("Checking the environment", [py, "-c", CHECK_CODE], finish=_read_versions),
        Step("Finishing", prepare=_finalize),
    ]


def _check_base_python(ctx: SetupContext) -> None:
    if not Path(os.environ.get(layout_mod.BASE_PYTHON_ENV, "")).is_file():
        raise SetupError(f"{layout_mod.BASE_PYTHON_ENV} does not name a Python program.")


def _prepare_staging(ctx: SetupContext) -> None:
    lay = ctx.layout
    lay.base.mkdir(parents=True, exist_ok=True)
    if lay.staging_dir.exists():
        shutil.rmtree(lay.staging_dir)


def _copy_trainer(ctx: SetupContext) -> None:
    dest = ctx.layout.site_packages(ctx.layout.staging_dir)
    dest.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("trainer",):   # its resources/ (presets, icons, examples) are inside
        source = ctx.sources / name
        if not source.is_dir():
            raise SetupError(f"DragonFarm's own files are incomplete ({name} is missing). Reinstall DragonFarm.")
        shutil.copytree(source, dest / name, ignore=ignore, dirs_exist_ok=True)


def _read_versions(ctx: SetupContext, output: str) -> None:
    for line in reversed(output.splitlines()):
        if line.strip().startswith("{"):
            try:
                ctx.versions = json.loads(line)
                return
            except ValueError:
                break
    raise SetupError("The new environment did not answer its check. Press Retry.")


def marker_data(ctx: SetupContext) -> dict:
    digest = hashlib.sha256(ctx.requirements.read_bytes()).hexdigest() if ctx.requirements.is_file() else ""
    return {
        "complete": True,
        "app_version": APP_VERSION,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "torch_build": ctx.choice.build,
        "torch_index": ctx.choice.index_url or "default",
        "requirements_sha256": digest,
        "versions": dict(ctx.versions),
    }


def _finalize(ctx: SetupContext) -> None:
    from trainer.run import launch

    lay = ctx.layout
    if not lay.staging_python().exists():
        raise SetupError("The new environment is incomplete. Press Retry.")
    tmp = lay.staging_dir / (launch.ENV_MARKER + ".tmp")
    tmp.write_text(json.dumps(marker_data(ctx), indent=2), encoding="utf-8")
    os.replace(tmp, lay.staging_dir / launch.ENV_MARKER)
    swap_into_place(lay)


def swap_into_place(lay: EnvLayout) -> None:
    """Staging becomes the environment; the previous one is moved aside first
    and deleted afterwards, or put back if the swap fails."""
    if lay.old_dir.exists():
        shutil.rmtree(lay.old_dir, ignore_errors=True)
    moved_old = False
    if lay.env_dir.exists():
        try:
            os.replace(lay.env_dir, lay.old_dir)
        except OSError:
            raise SetupError("The current training environment is in use. Stop any running training, "
                             "close other DragonFarm windows, then press Retry.") from None
        moved_old = True
    try:
        os.replace(lay.staging_dir, lay.env_dir)
    except OSError as exc:
        if moved_old:
            os.replace(lay.old_dir, lay.env_dir)
        raise SetupError(f"The new environment could not be put in place ({exc.strerror}). Press Retry.") from None
    if moved_old:
        shutil.rmtree(lay.old_dir, ignore_errors=True)


def environment_state(env_layout: EnvLayout | None = None, requirements: Path | None = None) -> str:
    """'ready'; 'missing' (never set up, or half-made); or 'outdated' (made for
    other pins than this app's, e.g. after an update: offer Repair)."""
    from trainer.run import launch

    lay = env_layout or EnvLayout.default()
    marker = launch.read_env_marker(lay.env_dir) if launch.managed_env_ready(lay.env_dir) else None
    if marker is None:
        return "missing"
    requirements = requirements or layout_mod.requirements_file()
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest() if requirements.is_file() else ""
    torch = str((marker.get("versions") or {}).get("torch", ""))
    if marker.get("requirements_sha256") != digest or not torch.startswith(TORCH_VERSION):
        return "outdated"
    return "ready"


def discard_staging(lay: EnvLayout) -> None:
    """After a failure or Cancel: remove the half-made environment (best effort)."""
    shutil.rmtree(lay.staging_dir, ignore_errors=True)


def failure_message(step: Step, index: int, total: int, tail: list[str], log_file: Path) -> str:
    last = next((line.strip() for line in reversed(tail) if line.strip()), "")
    text = f"Step {index} of {total}, \u201c{step.title}\u201d, did not work."
    if last:
        text += f"\nLast message: {last[:300]}"
    if step.network:
        text += "\nCheck that this computer is online and has about 8 GB of free disk space, then press Retry."
    else:
        text += "\nPress Retry. If it fails again, use Repair in Settings."
    return text + f"\nThe full log is in {log_file}."
