"""Settings refuse unsafe production set-ups and say how to fix them; dev mode stays usable."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from service.config import Settings, UnsafeSettings


def test_prod_mode_refuses_missing_secret_and_unsafe_sandbox():
    with pytest.raises(ValidationError) as err:
        Settings(mode="prod", secret_key="", sandbox="unsafe-local")
    text = str(err.value)
    assert "TITANGRADE_SECRET_KEY" in text and "unsafe-local" in text


def test_prod_mode_accepts_a_real_configuration():
    settings = Settings(mode="prod", secret_key="s" * 40, sandbox="bwrap")
    assert settings.with_dev_secret() == (settings, False)


def test_dev_mode_generates_an_ephemeral_secret():
    settings, generated = Settings(mode="dev").with_dev_secret()
    assert generated and len(settings.secret_key) >= 32


def test_environment_is_read_with_the_prefix(monkeypatch):
    monkeypatch.setenv("TITANGRADE_LEASE_S", "12.5")
    monkeypatch.setenv("TITANGRADE_WORKER_SLOTS", "4")
    settings = Settings()
    assert (settings.lease_s, settings.worker_slots) == (12.5, 4)


@pytest.mark.parametrize("values,needle", [
    ({"heartbeat_s": 30, "lease_s": 10}, "TITANGRADE_HEARTBEAT_S"),
    ({"worker_slots": 2, "short_reserved_slots": 2}, "TITANGRADE_SHORT_RESERVED_SLOTS"),
    ({"api_workers": 2, "database_url": "sqlite:///x.db"}, "TITANGRADE_API_WORKERS .* needs PostgreSQL"),
])
def test_inconsistent_queue_settings_are_refused(values, needle):
    with pytest.raises(ValidationError, match=needle):
        Settings(**values)


def test_several_api_processes_are_allowed_on_postgresql():
    assert Settings(api_workers=4, database_url="postgresql://u@h/db").api_workers == 4


def test_auto_sandbox_resolves_once(monkeypatch):
    import grading.sandbox as sandbox_pkg
    from grading.sandbox.probe import Probe

    monkeypatch.setattr(sandbox_pkg, "probe", lambda: Probe(False, "bwrap missing; install it"))
    with pytest.raises(UnsafeSettings, match="bwrap missing.*TITANGRADE_SANDBOX=unsafe-local"):
        Settings(mode="dev", sandbox="auto").resolve_sandbox()
    explicit, warning = Settings(mode="dev", sandbox="unsafe-local").resolve_sandbox()
    assert explicit.sandbox == "unsafe-local" and "UNISOLATED" in warning
    with pytest.raises(UnsafeSettings, match="bwrap missing"):
        Settings(mode="prod", secret_key="s" * 40, sandbox="auto").resolve_sandbox()
    monkeypatch.setattr(sandbox_pkg, "probe", lambda: Probe(True, "ok"))
    monkeypatch.setattr("grading.sandbox.cgroups.probe", lambda: Probe(True, "cgroup v1"))
    assert Settings(mode="prod", secret_key="s" * 40).resolve_sandbox()[0].sandbox == "bwrap"


def test_whole_run_caps_are_required_in_prod_and_warned_about_once_in_dev(monkeypatch):
    """The host's cgroup state is the one thing faked here (this machine has usable cgroups)."""
    from grading.sandbox.probe import Probe
    from grading.sandbox.seccomp import SeccompProbe

    monkeypatch.setattr("grading.sandbox.seccomp.probe", lambda: SeccompProbe(True, "153 BPF instructions"))

    monkeypatch.setattr("grading.sandbox.cgroups.probe", lambda: Probe(False, "no memory hierarchy; mount it"))
    with pytest.raises(UnsafeSettings, match="control groups.*no memory hierarchy; mount it"):
        Settings(mode="prod", secret_key="s" * 40, sandbox="bwrap").resolve_sandbox()
    with pytest.raises(UnsafeSettings, match="no memory hierarchy"):
        Settings(mode="dev", sandbox="bwrap", sandbox_cgroups="require").resolve_sandbox()
    settings, warning = Settings(mode="dev", sandbox="bwrap").resolve_sandbox()
    assert warning.startswith("WARNING") and "no memory hierarchy; mount it" in warning
    assert settings.sandbox_options() == {"cgroups": "off", "cpus_per_run": 0.0, "cpu_weight": 10,
                                          "seccomp": "require", "kernel_start": "exec"}  # quiet pools
    monkeypatch.setattr("grading.sandbox.cgroups.probe", lambda: Probe(True, "cgroup v1"))
    settings, warning = Settings(mode="prod", secret_key="s" * 40, sandbox="bwrap",
                                 sandbox_cpus_per_run=1.5, sandbox_cpu_weight=50).resolve_sandbox()
    assert warning == "" and settings.sandbox_options() == {"cgroups": "require", "cpus_per_run": 1.5,
                                                            "cpu_weight": 50, "seccomp": "require",
                                                            "kernel_start": "exec"}
    assert Settings(sandbox="unsafe-local").sandbox_options() == {}
    forking, _ = Settings(mode="dev", sandbox="bwrap", sandbox_kernel_start="fork").resolve_sandbox()
    assert forking.sandbox_options()["kernel_start"] == "fork"  # off (exec) unless asked for
    with pytest.raises(ValidationError):
        Settings(sandbox_kernel_start="spawn")
    with pytest.raises(ValidationError, match="TITANGRADE_SANDBOX_CGROUPS=off"):
        Settings(mode="prod", secret_key="s" * 40, sandbox_cgroups="off")
    with pytest.raises(ValidationError):
        Settings(sandbox_cpus_per_run=-1)


@pytest.fixture
def no_seccomp_bindings(monkeypatch, tmp_path):
    """libseccomp's Python bindings really absent: the venv has none, and Debian's folder is an empty one."""
    import sys

    from grading.sandbox import seccomp

    monkeypatch.delitem(sys.modules, "seccomp", raising=False)  # the extension registers itself once loaded
    monkeypatch.setattr(seccomp, "DIST_PACKAGES", (str(tmp_path),))
    seccomp.program.cache_clear()
    yield
    seccomp.program.cache_clear()


def test_the_system_call_filter_is_required_in_prod_and_warned_about_in_dev(monkeypatch, no_seccomp_bindings):
    from grading.sandbox.probe import Probe

    monkeypatch.setattr("grading.sandbox.cgroups.probe", lambda: Probe(True, "cgroup v1"))
    with pytest.raises(UnsafeSettings, match=r"system-call filter.*python3-seccomp"):
        Settings(mode="prod", secret_key="s" * 40, sandbox="bwrap").resolve_sandbox()
    with pytest.raises(UnsafeSettings, match="python3-seccomp"):
        Settings(mode="dev", sandbox="bwrap", sandbox_seccomp="require").resolve_sandbox()
    settings, warning = Settings(mode="dev", sandbox="bwrap").resolve_sandbox()
    assert warning.startswith("WARNING: sandboxed kernels run WITHOUT a system-call filter")
    assert "python3-seccomp" in warning and settings.sandbox_options()["seccomp"] == "off"
    with pytest.raises(ValidationError, match="TITANGRADE_SANDBOX_SECCOMP=off"):
        Settings(mode="prod", secret_key="s" * 40, sandbox_seccomp="off")


def test_prewarm_spec_is_parsed_and_checked():
    assert Settings.parse_prewarm("light=2, torch=1") == {"light": 2, "torch": 1}
    with pytest.raises(ValidationError, match="light=1"):
        Settings(sandbox_prewarm="gpu=3")


def test_prewarm_auto_is_decided_once_from_the_sandbox_memory_and_sandbox_users(monkeypatch):
    from grading.sandbox.probe import Probe

    monkeypatch.setattr("grading.sandbox.probe", lambda: Probe(True, "ok"))
    monkeypatch.setattr("grading.sandbox.cgroups.probe", lambda: Probe(True, "cgroup v2"))
    monkeypatch.setattr("service.config.available_mb", lambda: 24_000)
    users = tuple(f"tgsbx{i}" for i in range(8))
    monkeypatch.setattr("grading.sandbox.users.installed_sandbox_users", lambda: users)
    assert Settings().sandbox_prewarm == "auto"
    settings, note = Settings(worker_slots=2).resolve_sandbox()
    assert (settings.sandbox_prewarm, settings.sandbox_prewarm_keys, note) == ("light=1", 2, "")
    assert settings.prewarm_sizes() == {"light": 1}  # pinned: every pool process gets the same answer
    unsafe, _ = Settings(sandbox="unsafe-local").resolve_sandbox()  # its kernels would outlive their pool process
    assert unsafe.sandbox_prewarm == "" and unsafe.prewarm_sizes() == {}
    crowded, note = Settings(worker_slots=4).resolve_sandbox()  # 8 users: none left for warm kernels
    assert crowded.prewarm_sizes() == {} and "TITANGRADE_SANDBOX_USERS" in note
    monkeypatch.setattr("service.config.available_mb", lambda: 1_500)
    small, note = Settings(worker_slots=2).resolve_sandbox()
    assert small.prewarm_sizes() == {} and "1500 MB here" in note
    forced, _ = Settings(worker_slots=2, sandbox_prewarm="light=1,torch=1").resolve_sandbox()
    assert forced.prewarm_sizes() == {"light": 1, "torch": 1} and forced.prewarm_keys() == 4
