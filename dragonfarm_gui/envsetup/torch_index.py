"""Which PyTorch wheel index fits this machine: a pure decision from facts,
plus a probe that gathers the facts (platform, NVIDIA driver, GPU generation).

No Qt and no torch here: this runs in the app before torch exists.

The rules (checked 2026-11 against the sources below; revisit them whenever
TORCH_VERSION in this file and the torch pin in packaging/requirements-trainer.txt
change - a test keeps the two equal):

* PyTorch 2.13 publishes these CUDA builds for Windows x86_64 (PyTorch RELEASE.md
  "Release Compatibility Matrix" / "PyTorch CUDA Support Matrix", pytorch/pytorch
  PR #187075; the get-started page https://pytorch.org/get-started/locally/ gives
  the index URLs https://download.pytorch.org/whl/<build>):
    cu126 (CUDA 12.6.3): Maxwell 5.0, Pascal 6.0, Volta 7.0, Turing 7.5,
                         Ampere 8.0/8.6, Hopper 9.0 - no Blackwell.
    cu130 (CUDA 13.0.2): Turing 7.5, Ampere 8.0/8.6, Hopper 9.0,
                         Blackwell 10.0/12.0 - nothing older than Turing
                         (CUDA 13 dropped sm_50..sm_70).
  (cu132 is "experimental" in 2.13, so we do not pick it; cu128 and cu118 are
  not built for 2.13 any more: cu118 ended with 2.7, cu128 with 2.11.)
  A GPU of a newer minor revision runs the kernels of the same major one
  (Ada 8.9 uses 8.6, RTX 50xx 12.0, GB10 12.1 uses 12.0).
* Each CUDA build needs a minimum driver (NVIDIA CUDA Toolkit Release Notes,
  table "CUDA Toolkit and Corresponding Driver Versions",
  https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/):
    CUDA 13.0 GA        Linux >= 580.65.06   Windows >= 580.88
    CUDA 12.8 GA        Linux >= 570.26      Windows >= 570.65  (for reference)
    CUDA 12.6 Update 3  Linux >= 560.35.05   Windows >= 561.17
    CUDA 11.8 GA        Linux >= 520.61.05   Windows >= 520.06  (for reference)
  We require the toolkit's own minimum, not the looser "minor version
  compatibility" floor (525/528 for 12.x), because features such as lazy
  loading need the full driver and a failed first run is worse than asking
  for a driver update.
* So, on Windows with an NVIDIA GPU:
    compute capability >= 10 (Blackwell): cu130 if driver >= 580.88, else CPU
                                          and ask for a driver update;
    7.5 .. 9.x (Turing..Hopper): cu130 if driver >= 580.88, else cu126 if
                                 driver >= 561.17, else CPU + driver update;
    5.0 .. 7.4 (Maxwell, Pascal, Volta): cu126 if driver >= 561.17, else CPU;
    below 5.0 (Kepler and older): CPU, the GPU is too old;
    capability unknown (very old nvidia-smi): cu126 if driver >= 561.17.
* macOS on Apple Silicon, and Linux with an NVIDIA driver (or not on x86_64):
  the default index (PyPI) - it carries the MPS build for Macs and the CUDA
  build for Linux.
* Linux x86_64 without an NVIDIA driver: the CPU index. PyPI's Linux build
  bundles CUDA (gigabytes of libraries) that such a machine cannot use.
* Intel Macs: PyTorch stopped building for them after 2.2, so none fits.
* Anything else (Windows without NVIDIA, Windows on ARM): the CPU index.
* DRAGONFARM_TORCH_INDEX overrides all of it: unset or "auto" decides as above,
  "" (set but empty) uses the default index, a build name such as "cu126"
  or "cpu" uses https://download.pytorch.org/whl/<name>, a URL is used as is,
  and an existing local folder of wheels is searched first (offline installs).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass

TORCH_VERSION = "2.13.0"
PYTORCH_INDEX = "https://download.pytorch.org/whl/"
CPU_INDEX = PYTORCH_INDEX + "cpu"
OVERRIDE_ENV = "DRAGONFARM_TORCH_INDEX"

# (build, minimum Windows driver, lowest compute capability, highest-but-excluded)
CUDA_BUILDS = (
    ("cu130", (580, 88), (7, 5), None),
    ("cu126", (561, 17), (5, 0), (10, 0)),
)
DRIVER_FOR_NEWEST = "580.88"
DRIVER_FOR_LEGACY = "561.17"


@dataclass(frozen=True)
class MachineFacts:
    os: str                       # "windows", "macos", "linux" or another name
    arch: str                     # "x86_64", "arm64", ...
    nvidia_driver: str | None = None         # e.g. "581.57"; None: no NVIDIA driver
    compute_capability: tuple[int, int] | None = None  # e.g. (8, 9)
    gpu_name: str | None = None


@dataclass(frozen=True)
class TorchChoice:
    index_url: str | None         # None: the default index (PyPI)
    build: str                    # "cu130", "cu126", "cpu", "default" or "custom"
    reason: str                   # one plain sentence for the setup dialog and log
    supported: bool = True        # False: no torch build fits this machine
    hint: str = ""                # what the person could do, e.g. update the driver
    find_links: str | None = None  # a local folder of wheels (offline installs, tests)


def parse_driver(version: str | None) -> tuple[int, int] | None:
    """'581.57' -> (581, 57); '560.35.05' -> (560, 35); junk -> None."""
    if not version:
        return None
    match = re.match(r"\s*(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else None


def parse_capability(text: str | None) -> tuple[int, int] | None:
    match = re.match(r"\s*(\d+)\.(\d+)", text or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def _override(value: str) -> TorchChoice:
    value = value.strip()
    if value == "":
        return TorchChoice(None, "default", f"{OVERRIDE_ENV} is empty: using the default package index.")
    if re.fullmatch(r"(cpu|cu\d{3}|rocm[\d.]+|xpu)", value):
        return TorchChoice(PYTORCH_INDEX + value, value, f"{OVERRIDE_ENV} asks for the {value} build.")
    if os.path.isabs(value) and os.path.isdir(value):
        return TorchChoice(None, "local", f"{OVERRIDE_ENV} names the wheel folder {value}.", find_links=value)
    if re.match(r"(https?|file)://", value):
        return TorchChoice(value, "custom", f"{OVERRIDE_ENV} names the index {value}.")
    raise ValueError(
        f"{OVERRIDE_ENV}={value!r} is not understood. Use 'auto', leave it empty for the default "
        "index, give a build name such as cu126 or cpu, or an index URL (https://...)."
    )


def _windows_nvidia(facts: MachineFacts) -> TorchChoice:
    driver = parse_driver(facts.nvidia_driver)
    cap = facts.compute_capability
    gpu = facts.gpu_name or "NVIDIA GPU"
    cpu_note = " Training will use the processor (slow)."
    if driver is None:
        return TorchChoice(CPU_INDEX, "cpu", "The NVIDIA driver version could not be read." + cpu_note,
                           hint="Install the current NVIDIA driver, then use Repair in Settings.")
    if cap is not None and cap < (5, 0):
        return TorchChoice(CPU_INDEX, "cpu", f"The {gpu} is too old for PyTorch." + cpu_note)
    for build, min_driver, low, high in CUDA_BUILDS:
        fits_gpu = cap is None and high is not None or (
            cap is not None and cap >= low and (high is None or cap < high))
        if fits_gpu and driver >= min_driver:
            return TorchChoice(PYTORCH_INDEX + build, build,
                               f"{gpu} with driver {facts.nvidia_driver}: using the CUDA {build[2:4]}.{build[4:]} build.")
    need = DRIVER_FOR_NEWEST if cap is not None and cap >= (10, 0) else DRIVER_FOR_LEGACY
    return TorchChoice(CPU_INDEX, "cpu", f"The NVIDIA driver {facts.nvidia_driver} is too old for the {gpu}." + cpu_note,
                       hint=f"Update the NVIDIA driver to {need} or newer, then use Repair in Settings.")


def choose_torch_index(facts: MachineFacts, override: str | None = None) -> TorchChoice:
    """The torch index for these facts. `override` is DRAGONFARM_TORCH_INDEX's
    value (None when unset). Raises ValueError only for an override it cannot read."""
    if override is not None and override.strip().lower() != "auto":
        return _override(override)
    arch = facts.arch.lower()
    if facts.os == "macos":
        if arch in ("arm64", "aarch64"):
            return TorchChoice(None, "default", "Apple Silicon Mac: using the standard build (Apple GPU via MPS).")
        return TorchChoice(None, "default", "PyTorch no longer makes builds for Intel Macs.", supported=False,
                           hint="DragonFarm needs a Mac with Apple Silicon (M1 or newer).")
    if facts.os == "linux":
        if arch in ("x86_64", "amd64") and not facts.nvidia_driver:
            return TorchChoice(CPU_INDEX, "cpu", "Linux without an NVIDIA GPU: using the CPU build "
                               "(the standard one would bring gigabytes of CUDA libraries).")
        return TorchChoice(None, "default", "Linux: using the standard build (NVIDIA GPU if present, else CPU).")
    if facts.os == "windows" and arch in ("x86_64", "amd64") and facts.nvidia_driver:
        return _windows_nvidia(facts)
    return TorchChoice(CPU_INDEX, "cpu", "No NVIDIA GPU found: using the CPU build. Training will be slow.")


def current_os() -> str:
    if sys.platform.startswith("win"):
        return "windows"
    if sys.platform == "darwin":
        return "macos"
    return "linux" if sys.platform.startswith("linux") else sys.platform


def query_nvidia_smi(timeout: float = 10.0) -> tuple[str | None, tuple[int, int] | None, str | None]:
    """(driver version, compute capability of the first GPU, its name) from
    nvidia-smi; (None, None, None) when there is none. Never raises."""
    import shutil

    exe = shutil.which("nvidia-smi")
    if exe is None and os.name == "nt":
        candidate = os.path.join(os.environ.get("SystemRoot", r"C:\Windows"), "System32", "nvidia-smi.exe")
        exe = candidate if os.path.exists(candidate) else None
    if exe is None:
        return None, None, None
    flags = getattr(subprocess, "CREATE_NO_WINDOW", 0)
    for fields in ("driver_version,compute_cap,name", "driver_version,name"):
        try:
            out = subprocess.run([exe, f"--query-gpu={fields}", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=timeout, creationflags=flags)
        except (OSError, subprocess.SubprocessError, ValueError):
            return None, None, None
        line = out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else ""
        parts = [part.strip() for part in line.split(",")]
        if line and parse_driver(parts[0]):
            if fields.startswith("driver_version,compute_cap") and len(parts) >= 3:
                return parts[0], parse_capability(parts[1]), ",".join(parts[2:]) or None
            if len(parts) >= 2 and not fields.startswith("driver_version,compute_cap"):
                return parts[0], None, ",".join(parts[1:]) or None
    return None, None, None


def probe_facts() -> MachineFacts:
    import platform

    driver = cap = name = None
    if current_os() != "macos":
        driver, cap, name = query_nvidia_smi()
    return MachineFacts(current_os(), platform.machine() or "unknown", driver, cap, name)


def choose_for_this_machine(environ: dict[str, str] | None = None) -> TorchChoice:
    environ = os.environ if environ is None else environ
    return choose_torch_index(probe_facts(), environ.get(OVERRIDE_ENV))
