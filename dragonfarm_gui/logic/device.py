"""The device check's output (`check --json`) in words for the dialog. No Qt."""
from __future__ import annotations

from typing import Any

# Each completes "Training will run on the CPU (slow): ..."; capitalise() starts a sentence.
FALLBACK_TITLES = {
    "no_torch": "PyTorch is not installed in the training environment",
    "no_driver": "there is an NVIDIA GPU, but its driver is missing",
    "driver_too_old": "the NVIDIA driver is too old for this PyTorch",
    "cpu_only_torch": "the installed PyTorch is the CPU-only build",
    "cuda_unusable": "the GPU was found, but PyTorch could not use it",
}


def capitalise(text: str) -> str:
    return text[:1].upper() + text[1:]


def headline(check: dict[str, Any]) -> tuple[str, str]:
    """(level, sentence): level is 'good', 'warn' or 'bad'."""
    device = check.get("device")
    reason = check.get("cpu_fallback_reason")
    if device == "cuda":
        if gpus_used(check) > 1:
            return "good", f"Training will use your {gpus_used(check)} NVIDIA GPUs together, sharing each step."
        return "good", f"Training will use your NVIDIA GPU ({check.get('gpu_name') or check.get('device_name') or 'GPU'})."
    if device == "mps":
        return "good", "Training will use your Mac's GPU (Apple Silicon)."
    if reason == "no_torch":
        return "bad", "Training cannot start: " + FALLBACK_TITLES["no_torch"] + "."
    if reason:
        return "warn", f"Training will run on the CPU (slow): {FALLBACK_TITLES.get(reason, reason)}."
    return "warn", "Training will run on the CPU. That works for the smallest models, slowly."


def gpus_used(check: dict[str, Any]) -> int:
    """How many GPUs a run trains on (0 on the CPU or an Apple GPU)."""
    value = check.get("gpus")
    return value if isinstance(value, int) and not isinstance(value, bool) and check.get("device") == "cuda" else 0


def several_gpus(check: dict[str, Any]) -> str:
    """"2 × NVIDIA A100", or each name when they differ."""
    names = [str(n) for n in check.get("gpu_names") or [] if n]
    if len(set(names)) > 1:
        return ", ".join(names)
    return f"{gpus_used(check)} × {names[0] if names else check.get('gpu_name') or 'NVIDIA GPU'}"


def _gb(value: Any) -> str:
    return f"{value:.1f} GB" if isinstance(value, (int, float)) else "unknown"


def rows(check: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, value) rows in the order the dialog shows them."""
    device = {"cuda": "NVIDIA GPU (CUDA)", "mps": "Apple GPU (MPS)", "cpu": "CPU"}.get(check.get("device"), "unknown")
    gpu = check.get("gpu_name")
    if not gpu and check.get("nvidia_gpu_present"):
        gpu = "NVIDIA GPU (not usable yet)"
    out = [
        ("Training device", device),
        ("Device name", check.get("device_name") or "unknown"),
        ("Precision", check.get("precision") or "unknown"),
        ("GPU", (several_gpus(check) if gpus_used(check) > 1 else gpu)
         or ("Apple GPU" if check.get("mps_available") else "none found")),
        ("GPU memory", _gb(check.get("gpu_memory_gb")) if check.get("gpu_memory_gb") is not None else "—"),
        ("System memory", _gb(check.get("system_memory_gb"))),
        ("NVIDIA driver", check.get("nvidia_driver") or ("not installed" if check.get("nvidia_gpu_present") else "—")),
        ("PyTorch", check.get("torch_version") or "not installed"),
        ("PyTorch build", check.get("torch_build") or "none"),
        ("PyTorch CUDA version", check.get("torch_cuda") or "—"),
    ]
    return out


def as_text(check: dict[str, Any]) -> str:
    """Everything, for the Copy button (to paste into a help request)."""
    lines = [headline(check)[1], ""]
    lines += [f"{label}: {value}" for label, value in rows(check)]
    if check.get("cpu_fallback_reason"):
        lines += ["", f"Why the CPU: {check.get('reason') or FALLBACK_TITLES.get(check['cpu_fallback_reason'], '')}"]
        if check.get("fix"):
            lines.append(f"The fix: {check['fix']}")
    if check.get("summary"):
        lines += ["", check["summary"]]
    return "\n".join(lines)
