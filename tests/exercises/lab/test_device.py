"""Device selection. This machine has no accelerator: the CPU branch runs for real; the NPU and CUDA
branches run with injected probe answers (fakes for hardware that does not exist here)."""

import os
import subprocess
import sys

import pytest

from exercises.lab.device import (
    AUTOLOAD_ENV,
    DeviceUnavailable,
    Probes,
    current_device,
    find_libhccl,
    guard_torch_import,
    select_device,
)


def fake(npu_installed=False, cann=False, npus=0, gpus=0):
    """Probe answers for a machine that is not this one (hardware fake)."""
    def npu_count():
        if not cann:
            raise ImportError("libhccl.so: cannot open shared object file")
        return npus
    return Probes(torch_npu_installed=lambda: npu_installed, cann_available=lambda: cann,
                  npu_count=npu_count, cuda_count=lambda: gpus)


def skip_on_accelerator_hosts():
    import importlib.util

    import torch

    if torch.cuda.is_available() or importlib.util.find_spec("torch_npu") is not None:
        pytest.skip("this host has an accelerator stack; the CPU-host expectations do not apply")


def test_this_machine_is_cpu_gloo():
    skip_on_accelerator_hosts()
    choice = current_device()
    assert (choice.kind, choice.backend, choice.device_count) == ("cpu", "gloo", 1)
    assert current_device() is choice  # decided once


def test_real_probes_without_override():
    skip_on_accelerator_hosts()
    env = {k: v for k, v in os.environ.items() if k != "TITANGRADE_DEVICE"}
    assert select_device(env=env).kind == "cpu"


def test_npu_branch_injected():
    choice = select_device(env={}, probes=fake(npu_installed=True, cann=True, npus=2, gpus=8))
    assert (choice.kind, choice.backend, choice.device_count) == ("npu", "hccl", 2)
    assert "2 NPU" in choice.reason


def test_cuda_branch_injected():
    choice = select_device(env={}, probes=fake(gpus=4))
    assert (choice.kind, choice.backend, choice.device_count) == ("cuda", "nccl", 4)


def test_torch_npu_without_cann_fails_clearly_and_guards_import():
    env = {}
    with pytest.raises(DeviceUnavailable, match="CANN's libhccl.so was not found; source CANN's set_env.sh"):
        select_device(env=env, probes=fake(npu_installed=True, cann=False))
    assert env[AUTOLOAD_ENV] == "0"


def test_cpu_override_wins_even_with_broken_torch_npu():
    env = {"TITANGRADE_DEVICE": "CPU"}
    choice = select_device(env=env, probes=fake(npu_installed=True, cann=False, gpus=2))
    assert choice.kind == "cpu" and "TITANGRADE_DEVICE=cpu" in choice.reason
    assert env[AUTOLOAD_ENV] == "0"


@pytest.mark.parametrize(
    ("override", "probes", "message"),
    [
        ("npu", fake(), "torch_npu is not installed"),
        ("npu", fake(npu_installed=True, cann=True, npus=0), "sees no NPU"),
        ("cuda", fake(), "sees no GPU"),
    ],
)
def test_override_that_cannot_be_met_raises(override, probes, message):
    with pytest.raises(DeviceUnavailable, match=message):
        select_device(env={"TITANGRADE_DEVICE": override}, probes=probes)


def test_bad_override_value():
    with pytest.raises(ValueError, match="not one of auto, cpu, cuda, npu"):
        select_device(env={"TITANGRADE_DEVICE": "tpu"}, probes=fake())


def test_guard_leaves_explicit_setting_and_healthy_machines_alone():
    env = {AUTOLOAD_ENV: "1"}
    assert guard_torch_import(env, fake(npu_installed=True)) is False and env[AUTOLOAD_ENV] == "1"
    env = {}
    assert guard_torch_import(env, fake(npu_installed=True, cann=True)) is False and env == {}
    assert guard_torch_import(env, fake()) is False and env == {}


def test_find_libhccl_uses_ascend_home(tmp_path):
    (tmp_path / "lib64").mkdir()
    assert find_libhccl({"ASCEND_TOOLKIT_HOME": str(tmp_path)}) != str(tmp_path / "lib64" / "libhccl.so")
    (tmp_path / "lib64" / "libhccl.so").write_bytes(b"")
    assert find_libhccl({"ASCEND_TOOLKIT_HOME": str(tmp_path)}) == str(tmp_path / "lib64" / "libhccl.so")
    assert find_libhccl({"LD_LIBRARY_PATH": f"/nonexistent:{tmp_path / 'lib64'}"}) == str(
        tmp_path / "lib64" / "libhccl.so")


def test_importing_lab_does_not_import_torch():
    code = "import sys, exercises.lab, exercises.lab.device; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


BROKEN_TORCH_NPU = {
    # A stand-in for torch_npu on a machine without CANN: same entry point, same ImportError.
    "torch_npu/__init__.py": (
        "raise ImportError('libhccl.so: cannot open shared object file: No such file or directory')\n"
    ),
    "torch_npu-0.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: torch_npu\nVersion: 0.0\n",
    "torch_npu-0.0.dist-info/entry_points.txt": "[torch.backends]\ntorch_npu = torch_npu:_autoload\n",
}


def _run_with_broken_torch_npu(tmp_path, code):
    for rel, text in BROKEN_TORCH_NPU.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    env = {k: v for k, v in os.environ.items() if k not in (AUTOLOAD_ENV, "TITANGRADE_DEVICE")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), os.getcwd()])
    env["LD_LIBRARY_PATH"] = ""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_broken_torch_npu_crashes_plain_import_torch(tmp_path):
    """Control: without the guard, torch's backend autoload fails exactly as on a CANN-less machine."""
    out = _run_with_broken_torch_npu(tmp_path, "import torch")
    assert out.returncode != 0 and "torch_npu" in out.stderr


def test_lab_guard_lets_torch_import_and_names_the_fix(tmp_path):
    code = (
        "import exercises.lab, os, torch\n"
        "from exercises.lab.device import DeviceUnavailable, select_device\n"
        "print(os.environ['TORCH_DEVICE_BACKEND_AUTOLOAD'])\n"
        "try:\n    select_device()\nexcept DeviceUnavailable as e:\n    print(e)\n"
    )
    out = _run_with_broken_torch_npu(tmp_path, code)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "0"
    assert lines[1].startswith("torch_npu is installed but CANN's libhccl.so was not found")


def test_resolve_decides_auto_once_and_refuses_too_few_devices(monkeypatch):
    """`train.run` resolves "auto" before spawning ranks: a granted kind that cannot be used fails in the
    caller with the fix (the grader then treats it as the host's fault, grading/pipeline.py)."""
    from exercises.lab import device
    from exercises.lab.device import DeviceChoice, resolve

    assert resolve("cpu", ranks=2) == "cpu" and resolve("cuda", ranks=8) == "cuda"  # explicit: as asked
    monkeypatch.setattr(device, "current_device", lambda: DeviceChoice("cuda", "nccl", 1, "torch.cuda sees 1 GPU(s)"))
    with pytest.raises(DeviceUnavailable, match="2 ranks need 2 cuda devices but 1 are visible"):
        resolve("auto", ranks=2)
    assert resolve("auto", ranks=1) == "cuda"
    monkeypatch.setattr(device, "current_device", lambda: DeviceChoice("cpu", "gloo", 1, "no NPU or GPU"))
    assert resolve("auto", ranks=2) == "cpu"  # CPU ranks are processes: any number


def test_a_granted_kind_this_host_lacks_is_refused_not_swapped_for_the_cpu():
    """The grader's TITANGRADE_DEVICE=cuda on a host without a usable GPU (this one): DeviceUnavailable."""
    with pytest.raises(DeviceUnavailable, match="torch.cuda sees no GPU"):
        select_device(env={"TITANGRADE_DEVICE": "cuda"}, probes=fake(gpus=0))
