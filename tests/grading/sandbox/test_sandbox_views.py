"""Per-exercise views (grading/sandbox/views.py): forbidden modules do not exist in the kernel, the rest of
the runtime still works, and the masks are computed without importing anything."""
from __future__ import annotations

import sys

import pytest
from sandbox_helpers import Runner, needs_bwrap

from grading.exercise import REPO_ROOT, Limits
from grading.sandbox import KernelRequest
from grading.sandbox.views import bwrap_args, masks, module_paths


def test_module_paths_find_packages_files_and_their_bytecode(tmp_path):
    pkg = tmp_path / "lib" / "pkg"
    (pkg / "__pycache__").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text("X = 1\n")
    (pkg / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\0")
    (pkg / "__pycache__" / "other.cpython-311.pyc").write_bytes(b"\0")
    roots = [str(tmp_path / "lib")]
    assert [(m.path, m.is_dir) for m in module_paths("pkg", roots)] == [(str(pkg), True)]
    found = {m.path for m in module_paths("pkg.mod", roots)}
    assert found == {str(pkg / "mod.py"), str(pkg / "__pycache__" / "mod.cpython-311.pyc")}
    assert module_paths("pkg.absent", roots) == []
    assert len(masks(("pkg", "pkg.mod"), roots)) == 3  # deduplicated across names


def test_bwrap_args_mask_only_inside_visible_binds(tmp_path):
    (tmp_path / "lib" / "pkg").mkdir(parents=True)
    (tmp_path / "lib" / "single.py").write_text("")
    roots = [str(tmp_path / "lib")]
    args = bwrap_args(("pkg", "single"), (str(tmp_path / "lib"),), roots)
    assert ["--ro-bind", "/dev/null", str(tmp_path / "lib" / "single.py")] == args[-3:]
    assert "--tmpfs" in args and str(tmp_path / "lib" / "pkg") in args
    assert bwrap_args(("pkg", "single"), ("/elsewhere",), roots) == []  # a mount point must exist inside


@needs_bwrap
def test_forbidden_modules_are_absent_and_unreadable_inside(bwrap_sandbox):
    request = KernelRequest(limits=Limits(), hidden_modules=("exercises.lab.wordle", "exercises.lab.recipe", "verl"))
    session = bwrap_sandbox.start(request)
    run = Runner(session)
    try:
        status, out = run("import exercises.lab.wordle.reward")
        assert status == "error" and "ModuleNotFoundError" in out, out
        status, out = run("import exercises.lab.recipe")  # /dev/null over the file: not a module file
        assert status == "error" and "ModuleNotFoundError" in out, out
        status, out = run(f"import os\nprint(os.listdir({str(REPO_ROOT / 'exercises/lab/wordle')!r}))\n"
                          f"print(len(open({str(REPO_ROOT / 'exercises/lab/recipe.py')!r}).read()))")
        assert out.split()[0] == "[]", out  # the package directory is an empty tmpfs
        assert "PermissionError" in out or out.split()[1] == "0", out  # the file cannot be read (nodev bind)
        status, out = run("import verl.trainer.ppo.core_algos")
        assert status == "error" and "ModuleNotFoundError" in out, out
        status, out = run("from exercises.lab.selfcheck import show\nimport exercises.lab.metrics_format\nprint('ok')")
        assert status == "ok" and out.strip() == "ok", out  # the rest of the runtime is intact
        status, out = run("import os\nos.listdir('/')\nopen(os.path.join(os.path.dirname(os.__file__), 'x'), 'w')")
        assert status == "error"  # and nothing became writable
    finally:
        run.close()
        session.close()


@pytest.mark.skipif(sys.platform != "linux", reason="bwrap is Linux-only")
def test_pool_key_separates_views():
    from grading.sandbox.pool import request_key

    assert request_key(KernelRequest(hidden_modules=("verl",))) != request_key(KernelRequest())


@needs_bwrap
def test_every_kernel_starts_without_the_debugger(bwrap_sandbox):
    """debugpy is hidden from every bwrap kernel (BwrapConfig.always_hidden): ipykernel then starts without
    pydevd, which saves about a quarter of a kernel start's CPU; the kernel works and says it has no debugger."""
    session = bwrap_sandbox.start(KernelRequest(limits=Limits()))
    run = Runner(session)
    try:
        reply = run.kc.kernel_info(reply=True, timeout=30)
        assert "debugger" not in reply["content"].get("supported_features", []), reply["content"]
        status, out = run("import sys\nprint(sorted(m for m in sys.modules if 'pydevd' in m or 'debugpy.' in m))")
        assert status == "ok" and out.strip() == "[]", out  # (the empty mount point itself imports as nothing)
        status, out = run("from debugpy.server import api")
        assert status == "error" and "ModuleNotFoundError" in out, out
    finally:
        run.close()
        session.close()
