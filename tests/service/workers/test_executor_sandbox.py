"""Pool processes build the sandbox the start-up checks decided (control groups included), in real
spawned pool processes with the real bwrap sandbox."""
from __future__ import annotations

import pytest

from grading.sandbox import cgroups, probe
from service.config import Settings
from service.workers.executor import LocalExecutor

pytestmark = pytest.mark.skipif(not (probe().usable and cgroups.probe().usable),
                                reason="needs the bwrap sandbox and usable control groups")


def sandbox_in_this_process() -> tuple[str, bool, float]:
    """Runs inside a pool process."""
    from service.workers.executor import _CHILD

    sandbox = _CHILD["sandbox"]
    return sandbox.mode, sandbox.groups.enabled, sandbox.config.cpus_per_run


@pytest.mark.parametrize("cgroups_setting, enabled", [("auto", True), ("off", False)])
def test_pool_processes_get_the_resolved_cgroup_setting(tmp_path, cgroups_setting, enabled):
    settings, _ = Settings(mode="dev", database_url=f"sqlite:///{tmp_path}/t.db", sandbox="bwrap",
                           sandbox_cgroups=cgroups_setting, sandbox_cpus_per_run=1.5).resolve_sandbox()
    executor = LocalExecutor(settings=settings, processes=1)
    try:
        got = executor._pool.submit(sandbox_in_this_process).result(timeout=120)
    finally:
        executor.shutdown()
    assert got == ("bwrap", enabled, 1.5)


def warm_kernel_ready(exercise_id: str, exercises_root: str, reference_root: str) -> tuple[bool, int]:
    """Runs inside a pool process: is a warm kernel waiting for this exercise's request?"""
    from pathlib import Path

    from grading.exercise import Catalogue
    from grading.pipeline import kernel_request
    from service.workers.executor import _CHILD

    exercise = Catalogue(Path(exercises_root), Path(reference_root)).get(exercise_id)
    sandbox = _CHILD["sandbox"]
    return sandbox.wait_ready(kernel_request(exercise), timeout_s=120), sandbox.max_keys


def test_a_new_pool_process_warms_a_kernel_for_the_latest_exercise(db_url, sessions, add_submission, svc):
    """SANDBOX_PREWARM=auto with bwrap: the pool starts at once and warms the recent exercise's kernel."""
    from service.db import transaction

    with transaction(sessions) as s:
        add_submission(s, exercise_id="ch05.svc_sum")
    settings, _ = svc.settings(db_url, sandbox="bwrap", sandbox_prewarm="auto").resolve_sandbox()
    assert settings.sandbox_prewarm == "light=1" and settings.sandbox_prewarm_keys >= 1, "this host cannot warm"
    executor = LocalExecutor(settings=settings, processes=1)
    try:
        ready, keys = executor._pool.submit(
            warm_kernel_ready, "ch05.svc_sum", str(settings.exercises_root), str(settings.reference_root)
        ).result(timeout=180)
    finally:
        executor.shutdown()
    assert ready and keys == settings.sandbox_prewarm_keys
