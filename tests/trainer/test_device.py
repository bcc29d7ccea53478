"""Every branch of the device check, with faked facts."""
import pytest

from trainer.engine.device import Facts, check_text, decide, min_driver_for


def facts(**kw):
    base = dict(system="Windows", machine="AMD64", torch_version="2.8.0+cu128", torch_cuda="12.8",
                cpu_name="Ryzen 7", cpu_threads=16, system_memory_gb=32.0)
    base.update(kw)
    return Facts(**base)


def test_cuda_ampere_bf16():
    r = decide(facts(cuda_available=True, gpu_name="NVIDIA GeForce RTX 3060", gpu_memory_gb=12.0,
                     gpu_capability=(8, 6), nvidia_smi_found=True, nvidia_driver="572.16"))
    assert (r["device"], r["precision"], r["cpu_fallback_reason"]) == ("cuda", "bf16", None)
    assert "RTX 3060" in r["summary"] and r["torch_build"] == "cuda 12.8"


def test_cuda_turing_fp16():
    r = decide(facts(cuda_available=True, gpu_name="Tesla T4", gpu_capability=(7, 5)))
    assert (r["device"], r["precision"]) == ("cuda", "fp16")


def test_apple_silicon_mps():
    r = decide(facts(system="Darwin", machine="arm64", torch_version="2.8.0", torch_cuda=None,
                     mps_built=True, mps_available=True, cpu_name="Apple M2"))
    assert (r["device"], r["precision"], r["torch_build"]) == ("mps", "fp32", "mps")
    assert r["fix"] is None


def test_apple_gpu_bf16_where_pytorch_supports_it():
    r = decide(Facts(system="Darwin", machine="arm64", torch_version="2.13.0", mps_built=True, mps_available=True,
                     mps_bf16=True, cpu_name="Apple M3"))
    assert (r["device"], r["precision"]) == ("mps", "bf16")


def test_plain_cpu_no_nvidia_has_no_fix():
    r = decide(facts(system="Linux", torch_version="2.8.0+cpu", torch_cuda=None, cpu_bf16=True))
    assert (r["device"], r["precision"], r["cpu_fallback_reason"], r["fix"]) == ("cpu", "bf16", None, None)


def test_nvidia_without_driver():
    r = decide(facts(torch_cuda=None, torch_version="2.8.0+cpu", nvidia_pci_present=True))
    assert r["device"] == "cpu" and r["cpu_fallback_reason"] == "no_driver"
    assert "driver is not installed" in r["reason"] and "nvidia.com" in r["fix"]


def test_cpu_only_torch_on_nvidia_machine():
    r = decide(facts(torch_version="2.8.0+cpu", torch_cuda=None, nvidia_smi_found=True, nvidia_driver="560.94",
                     nvidia_gpu_name="NVIDIA GeForce RTX 4070"))
    assert r["cpu_fallback_reason"] == "cpu_only_torch"
    assert "CPU-only build" in r["reason"] and "RTX 4070" in r["reason"]
    assert "Repair" in r["fix"] and "cu128" in r["fix"]


def test_driver_too_old():
    r = decide(facts(torch_cuda="12.8", nvidia_smi_found=True, nvidia_driver="472.12", nvidia_gpu_name="GTX 1080"))
    assert r["cpu_fallback_reason"] == "driver_too_old"
    assert "472.12" in r["reason"] and "528.33" in r["fix"]


def test_driver_new_enough_but_cuda_fails():
    r = decide(facts(torch_cuda="12.8", nvidia_smi_found=True, nvidia_driver="580.10", cuda_error="CUDA error: busy"))
    assert r["cpu_fallback_reason"] == "cuda_unusable" and "CUDA error: busy" in r["reason"]


def test_no_torch():
    r = decide(facts(torch_version=None, torch_cuda=None))
    assert r["cpu_fallback_reason"] == "no_torch" and r["torch_build"] == "none"


def test_cpu_preference_is_respected_without_complaint():
    r = decide(facts(cuda_available=True, gpu_capability=(8, 9), nvidia_driver="580.1"), preference="cpu")
    assert r["device"] == "cpu" and r["fix"] is None


@pytest.mark.parametrize("cuda,system,need", [("12.8", "Windows", "528.33"), ("12.8", "Linux", "525.60.13"),
                                              ("11.8", "Windows", "452.39"), ("12.7", "Linux", "525.60.13"),
                                              ("13.0", "Linux", "580.65.06")])
def test_min_driver_table(cuda, system, need):
    assert min_driver_for(cuda, system) == need


def test_gather_facts_runs_here():
    from trainer.engine.device import check

    r = check()
    assert r["device"] in ("cpu", "cuda", "mps") and r["summary"]


def test_check_says_how_many_gpus_a_run_uses():
    one = decide(facts(cuda_available=True, gpu_name="RTX 4090", gpu_capability=(8, 9), gpu_count=1))
    assert (one["gpus"], one["gpus_found"]) == (1, 1) and "GPUs found" not in one["summary"]
    assert "together" not in one["summary"] and "GPUs used" not in check_text(one)
    four = decide(facts(cuda_available=True, gpu_name="A100", gpu_capability=(8, 0), gpu_count=4,
                        gpu_names=["A100"] * 4))
    assert (four["gpus"], four["gpus_found"]) == (4, 4)
    assert "all 4 NVIDIA GPUs (4 × A100) together in bf16" in four["summary"]
    assert "GPUs used" in check_text(four)
    mixed = decide(facts(cuda_available=True, gpu_name="RTX 4090", gpu_capability=(7, 5), gpu_count=2,
                         gpu_names=["RTX 4090", "RTX 2080"]))
    assert "(RTX 4090, RTX 2080)" in mixed["summary"] and mixed["precision"] == "fp16"
    assert decide(facts(gpu_count=0))["gpus"] == 0
    apple = decide(facts(system="Darwin", machine="arm64", torch_cuda=None, mps_built=True, mps_available=True))
    assert apple["gpus"] == 0 and "GPUs" not in apple["summary"] and "GPUs used" not in check_text(apple)
