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
