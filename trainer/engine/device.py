"""What will this train on, and why: the device check.

The facts come from probes (torch, nvidia-smi, the PCI bus, memory) gathered
into one `Facts` record; `decide` turns facts into a verdict and is pure, so
every branch is tested with faked facts.
"""
from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from typing import Any

from trainer.run.config import TRAIN_DEVICES

# Minimum NVIDIA driver for each CUDA runtime torch is built with
# (NVIDIA's CUDA Toolkit release notes, table "CUDA Toolkit and Corresponding
# Driver Versions", minor-version-compatibility minimums: Linux, Windows).
MIN_DRIVER = {
    "11.8": ("450.80.02", "452.39"),
    "12.1": ("525.60.13", "527.41"),
    "12.4": ("525.60.13", "527.41"),
    "12.6": ("525.60.13", "528.33"),
    "12.8": ("525.60.13", "528.33"),
    "12.9": ("525.60.13", "528.33"),
    "13.0": ("580.65.06", "580.00"),
}
# Architectures with fast bf16 (Ampere = compute capability 8.0 and newer).
BF16_MIN_CAPABILITY = (8, 0)


@dataclass
class Facts:
    system: str = field(default_factory=platform.system)          # Windows, Darwin, Linux
    machine: str = field(default_factory=platform.machine)
    torch_version: str | None = None
    torch_cuda: str | None = None          # torch.version.cuda
    cuda_available: bool = False
    cuda_error: str | None = None
    gpu_name: str | None = None
    gpu_memory_gb: float | None = None
    gpu_capability: tuple[int, int] | None = None
    gpu_count: int = 0                     # CUDA devices torch sees
    gpu_names: list[str] = field(default_factory=list)   # each of them
    mps_built: bool = False
    mps_available: bool = False
    mps_bf16: bool = False                 # macOS 14+: PyTorch runs bf16 on the Apple GPU
    nvidia_smi_found: bool = False
    nvidia_driver: str | None = None
    nvidia_gpu_name: str | None = None
    nvidia_gpu_memory_gb: float | None = None
    nvidia_pci_present: bool = False       # an NVIDIA card on the bus, driver or not
    cpu_name: str = ""
    cpu_bf16: bool = False                 # AVX-512 BF16 / AMX matrix units
    cpu_threads: int = 1
    system_memory_gb: float | None = None


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def min_driver_for(cuda: str, system: str) -> str | None:
    key = ".".join(cuda.split(".")[:2])
    row = MIN_DRIVER.get(key)
    if row is None:
        major = key.split(".")[0]
        candidates = [k for k in MIN_DRIVER if k.split(".")[0] == major]
        row = MIN_DRIVER[max(candidates, key=_version_tuple)] if candidates else None
    if row is None:
        return None
    return row[1] if system == "Windows" else row[0]


def decide(facts: Facts, preference: str = "auto") -> dict[str, Any]:
    """The verdict that `dragonfarm check --json` prints (see docs/run-folder.md)."""
    nvidia_present = facts.nvidia_smi_found or facts.nvidia_pci_present or bool(facts.nvidia_driver)
    out: dict[str, Any] = {
        "device": "cpu", "device_name": facts.cpu_name or f"CPU ({facts.machine})", "precision": "fp32",
        "torch_version": facts.torch_version,
        "torch_build": ("cuda " + facts.torch_cuda) if facts.torch_cuda
        else ("mps" if facts.mps_built else ("cpu" if facts.torch_version else "none")),
        "torch_cuda": facts.torch_cuda, "mps_available": facts.mps_available,
        "gpu_name": facts.gpu_name or facts.nvidia_gpu_name, "gpu_memory_gb": facts.gpu_memory_gb or facts.nvidia_gpu_memory_gb,
        "system_memory_gb": facts.system_memory_gb, "nvidia_gpu_present": nvidia_present,
        "nvidia_driver": facts.nvidia_driver, "cpu_fallback_reason": None, "reason": None, "fix": None,
        "gpus": 0, "gpus_found": facts.gpu_count, "gpu_names": list(facts.gpu_names),
    }
    if facts.torch_version is None:
        out.update(cpu_fallback_reason="no_torch", reason="PyTorch is not installed in the training environment.",
                   fix="Set up the training environment again: Settings > Repair (or: pip install torch).")
        out["summary"] = "Cannot train yet: PyTorch is missing."
        return out
    want = preference if preference in TRAIN_DEVICES else "auto"
    if want in ("auto", "cuda") and facts.cuda_available:
        cap = facts.gpu_capability or (0, 0)
        out.update(device="cuda", device_name=facts.gpu_name or "NVIDIA GPU",
                   precision="bf16" if cap >= BF16_MIN_CAPABILITY else "fp16")
        mem = f", {facts.gpu_memory_gb:.0f} GB" if facts.gpu_memory_gb else ""
        out["gpus"] = max(1, facts.gpu_count)  # a run trains on every GPU (trainer.engine.launcher)
        if out["gpus"] > 1:
            names = facts.gpu_names if len(facts.gpu_names) == facts.gpu_count else [out["device_name"]]
            which = f"{facts.gpu_count} × {names[0]}" if len(set(names)) == 1 else ", ".join(names)
            out["summary"] = (f"Training will use all {facts.gpu_count} NVIDIA GPUs ({which}) together in "
                              f"{out['precision']}: each step is shared between them.")
        else:
            out["summary"] = f"Training will use the NVIDIA GPU ({out['device_name']}{mem}) in {out['precision']}."
        return out
    if want in ("auto", "mps") and facts.mps_available:
        out.update(device="mps", device_name=f"Apple GPU ({facts.cpu_name or facts.machine})",
                   precision="bf16" if facts.mps_bf16 else "fp32")
        out["summary"] = "Training will use the Apple GPU (Metal)."
        return out
    out["precision"] = "bf16" if facts.cpu_bf16 else "fp32"
    out["summary"] = (f"Training will use the CPU ({out['device_name']}, {facts.cpu_threads} threads): "
                      "fine for the 135M model, slow for bigger ones.")
    if want == "cpu":
        out["summary"] = "Training will use the CPU, as the run's settings ask."
        return out
    if nvidia_present:
        _explain_cpu_fallback(facts, out)
    return out


def _explain_cpu_fallback(facts: Facts, out: dict[str, Any]) -> None:
    gpu = facts.nvidia_gpu_name or "an NVIDIA GPU"
    if not facts.nvidia_driver:
        out.update(cpu_fallback_reason="no_driver",
                   reason=f"This computer has {gpu}, but its driver is not installed (nvidia-smi was not found or failed).",
                   fix="Install the latest NVIDIA driver from https://www.nvidia.com/Download/index.aspx, "
                       "restart, then run the check again.")
    elif not facts.torch_cuda:
        out.update(cpu_fallback_reason="cpu_only_torch",
                   reason=f"This computer has {gpu} (driver {facts.nvidia_driver}), but the installed PyTorch "
                          f"{facts.torch_version} is a CPU-only build.",
                   fix="Settings > Repair training environment (or: pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/cu128).")
    else:
        need = min_driver_for(facts.torch_cuda, facts.system)
        if need and _version_tuple(facts.nvidia_driver) < _version_tuple(need):
            out.update(cpu_fallback_reason="driver_too_old",
                       reason=f"The NVIDIA driver {facts.nvidia_driver} is too old for PyTorch's CUDA "
                              f"{facts.torch_cuda}, which needs {need} or newer.",
                       fix=f"Update the NVIDIA driver to {need} or newer from https://www.nvidia.com/Download/index.aspx, then restart.")
        else:
            out.update(cpu_fallback_reason="cuda_unusable",
                       reason=f"PyTorch (CUDA {facts.torch_cuda}) could not use {gpu}: {facts.cuda_error or 'no CUDA device visible'}.",
                       fix="Restart the computer; if it persists, update the NVIDIA driver and check that CUDA_VISIBLE_DEVICES is not set.")
    out["summary"] = "Training will use the CPU, not your NVIDIA GPU. " + out["reason"]


# ----- probes -----------------------------------------------------------
def _run(cmd: list[str], timeout: float = 5.0) -> str | None:
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout if result.returncode == 0 else None


def probe_nvidia_smi(facts: Facts) -> None:
    exe = shutil.which("nvidia-smi")
    if not exe and platform.system() == "Windows":
        candidate = os.path.join(os.environ.get("SystemRoot", r"C:\Windows"), "System32", "nvidia-smi.exe")
        exe = candidate if os.path.exists(candidate) else None
    if not exe:
        return
    facts.nvidia_smi_found = True
    out = _run([exe, "--query-gpu=driver_version,name,memory.total", "--format=csv,noheader,nounits"])
    if not out or not out.strip():
        return
    first = [x.strip() for x in out.strip().splitlines()[0].split(",")]
    facts.nvidia_driver = first[0] or None
    facts.nvidia_gpu_name = first[1] if len(first) > 1 else None
    try:
        facts.nvidia_gpu_memory_gb = round(float(first[2]) / 1024, 1)
    except (IndexError, ValueError):
        pass


def probe_pci(facts: Facts) -> None:
    """Is there an NVIDIA card even without a driver? (vendor id 10de)"""
    system = platform.system()
    if system == "Linux":
        try:
            with open("/proc/bus/pci/devices", encoding="ascii") as fh:
                facts.nvidia_pci_present = any(line.split("\t")[1].startswith("10de") for line in fh if "\t" in line)
        except OSError:
            pass
    elif system == "Windows":
        out = _run(["powershell", "-NoProfile", "-Command",
                    "(Get-CimInstance Win32_VideoController).Name"], timeout=10)
        facts.nvidia_pci_present = bool(out and "nvidia" in out.lower())


def probe_cpu(facts: Facts) -> None:
    facts.cpu_threads = os.cpu_count() or 1
    facts.cpu_name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            info = fh.read()
        name = re.search(r"model name\s*:\s*(.+)", info)
        if name:
            facts.cpu_name = name.group(1).strip()
        flags = re.search(r"flags\s*:\s*(.+)", info)
        if flags:
            facts.cpu_bf16 = bool({"avx512_bf16", "amx_bf16"} & set(flags.group(1).split()))
    except OSError:
        pass
    if platform.system() == "Darwin":
        out = _run(["sysctl", "-n", "machdep.cpu.brand_string"])
        if out:
            facts.cpu_name = out.strip()
    from trainer.run.procs import system_memory_gb

    facts.system_memory_gb = system_memory_gb()  # psutil: os.sysconf does not exist on Windows


def probe_torch(facts: Facts) -> None:
    try:
        import torch
    except Exception:  # noqa: BLE001 - a broken install reads as "no torch"
        return
    facts.torch_version = torch.__version__
    facts.torch_cuda = getattr(torch.version, "cuda", None)
    try:
        facts.cuda_available = bool(torch.cuda.is_available())
        if facts.cuda_available:
            props = torch.cuda.get_device_properties(0)
            facts.gpu_name = props.name
            facts.gpu_memory_gb = round(props.total_memory / 2**30, 1)
            facts.gpu_capability = (props.major, props.minor)
            facts.gpu_count = int(torch.cuda.device_count())
            for i in range(facts.gpu_count):
                other = props if i == 0 else torch.cuda.get_device_properties(i)
                facts.gpu_names.append(other.name)
                # Several GPUs train together: the precision must suit the oldest of them.
                facts.gpu_capability = min(facts.gpu_capability, (other.major, other.minor))
    except Exception as exc:  # noqa: BLE001
        facts.cuda_available = False
        facts.cuda_error = str(exc).splitlines()[0][:200]
    mps = getattr(torch.backends, "mps", None)
    facts.mps_built = bool(mps and mps.is_built())
    facts.mps_available = bool(mps and mps.is_available())
    try:
        facts.mps_bf16 = facts.mps_available and bool(mps.is_macos_or_newer(14, 0))
        # torch's own CPU feature check also works where /proc/cpuinfo does not (Windows, macOS)
        cpu = torch.cpu
        facts.cpu_bf16 = facts.cpu_bf16 or bool(cpu._is_avx512_bf16_supported() or cpu._is_amx_tile_supported())
    except Exception:  # noqa: BLE001 - private helpers that may move: keep what /proc/cpuinfo said
        pass


def gather_facts() -> Facts:
    facts = Facts()
    probe_cpu(facts)
    probe_nvidia_smi(facts)
    if not facts.nvidia_smi_found:
        probe_pci(facts)
    probe_torch(facts)
    return facts


def check(preference: str = "auto") -> dict[str, Any]:
    return decide(gather_facts(), preference)


def check_text(result: dict[str, Any]) -> str:
    lines = [result["summary"], ""]
    rows = [("Device", f"{result['device']} ({result['device_name']})"), ("Precision", result["precision"]),
            ("PyTorch", f"{result['torch_version'] or 'not installed'} ({result['torch_build']})")]
    if result.get("gpu_name"):
        mem = f", {result['gpu_memory_gb']} GB" if result.get("gpu_memory_gb") else ""
        rows.append(("GPU", f"{result['gpu_name']}{mem}"))
    if (result.get("gpus") or 0) > 1:
        rows.append(("GPUs used", f"{result['gpus']} (one training process on each; --gpus N uses fewer)"))
    if result.get("nvidia_gpu_present"):
        rows.append(("NVIDIA driver", result.get("nvidia_driver") or "not installed"))
    if result.get("system_memory_gb"):
        rows.append(("Memory", f"{result['system_memory_gb']} GB"))
    lines += [f"  {k:<14} {v}" for k, v in rows]
    if result.get("fix"):
        lines += ["", "Why: " + result["reason"], "Fix: " + result["fix"]]
    return "\n".join(lines)


def facts_dict(facts: Facts) -> dict[str, Any]:
    return asdict(facts)
