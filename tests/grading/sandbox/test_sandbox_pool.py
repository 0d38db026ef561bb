"""Pre-warmed kernels: popped warm for a matching request, cold otherwise, one submission each, limits
of the exercise that gets them."""
from __future__ import annotations

import time

import pytest

from grading.exercise import Limits
from grading.sandbox import KernelRequest
from grading.sandbox.pool import PrewarmedSandbox

from sandbox_helpers import Runner, needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.slow]


@pytest.fixture
def pool(bwrap_sandbox):
    p = PrewarmedSandbox(bwrap_sandbox, sizes={"light": 1})
    yield p
    p.close()


def test_warm_kernel_is_used_once_and_pool_refills(pool):
    request = KernelRequest(kernel_family="light", limits=Limits(memory_mb=1536))
    pool.prepare(request)
    assert pool.wait_ready(request, 1, timeout_s=60)
    first = pool.start(request)
    assert pool.hits == 1 and pool.misses == 0
    run = Runner(first)
    status, out = run("import sys, resource\nprint('numpy' in sys.modules, resource.getrlimit(resource.RLIMIT_AS)[0] >> 20)\n"
                      "print(sorted(k for k in globals() if k.startswith('_tg')))\nmarker = 'used'")
    run.close()
    assert status == "ok" and "True 1536" in out and "[]" in out  # imports done, no grader globals left
    assert pool.wait_ready(request, 1, timeout_s=60)  # refilled in the background
    second = pool.start(request)
    assert second is not first and second.user.pw_uid != first.user.pw_uid
    run = Runner(second)
    assert "NameError" in run("marker")[1]  # nothing carries over from the previous submission
    run.close()
    first.close()
    second.close()


def test_other_limits_never_get_a_warm_kernel_of_different_limits(pool):
    warm = KernelRequest(kernel_family="light", limits=Limits(memory_mb=1536))
    pool.prepare(warm)
    assert pool.wait_ready(warm, 1, timeout_s=60)
    other = pool.start(KernelRequest(kernel_family="light", limits=Limits(memory_mb=1024)))
    assert pool.misses == 1 and pool.hits == 0
    run = Runner(other)
    assert "1024" in run("import resource; print(resource.getrlimit(resource.RLIMIT_AS)[0] >> 20)")[1]
    run.close()
    other.close()


def test_families_without_a_pool_start_cold(pool):
    s = pool.start(KernelRequest(kernel_family="torch"))
    time.sleep(0.5)
    assert pool.ready(KernelRequest(kernel_family="torch")) == 0 and pool.misses == 1
    s.close()


def test_engine_grades_through_a_warm_kernel(pool):
    """grade_notebook needs no change to use the pool: same result, warm kernel, limits of the exercise."""
    from grading.exercise import Catalogue
    from grading.pipeline import grade_notebook
    from grading.sandbox import KernelRequest as Request
    from sandbox_helpers import FIXTURES

    catalogue = Catalogue(FIXTURES / "catalogue" / "exercises", FIXTURES / "catalogue" / "reference")
    manifest = catalogue.get("ch05.sbx_attack").manifest
    request = Request(limits=manifest.limits, kernel_family=manifest.kernel_family)
    pool.prepare(request)
    assert pool.wait_ready(request, 1, timeout_s=60)
    result = grade_notebook((FIXTURES / "allocate_50gb.ipynb").read_text(), catalogue=catalogue, sandbox=pool)
    assert pool.hits == 1
    assert result.sandbox == "bwrap" and "memory limit" in result.limits_hit
    assert [c.score for c in result.checks] == [1.0, 0.0]
