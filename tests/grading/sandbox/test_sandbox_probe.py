"""probe() and make_sandbox(): bwrap or an explicit refusal, never a silent fall-back to no isolation."""
from __future__ import annotations

import os

import pytest

import grading.sandbox as sandbox_pkg
from grading.errors import GraderFault
from grading.sandbox import Probe, make_sandbox, probe


def test_missing_bwrap_is_reported_with_the_fix():
    found = probe(bwrap="no-such-bwrap-binary")
    assert not found.usable and "not installed" in found.reason and "install-system-deps.sh" in found.reason


@pytest.mark.skipif(os.geteuid() != 0, reason="the user check runs only for a root grader")
def test_missing_sandbox_user_is_reported():
    found = probe(user="tg_no_such_user")
    assert not found.usable and "tg_no_such_user does not exist" in found.reason


def test_auto_refuses_where_bwrap_cannot_run(monkeypatch):
    monkeypatch.setattr(sandbox_pkg, "probe", lambda: Probe(False, "bubblewrap is not installed"))
    with pytest.raises(GraderFault, match="unsafe-local") as err:
        make_sandbox("auto")
    assert not err.value.retryable and "bubblewrap is not installed" in str(err.value)
    assert make_sandbox("unsafe-local").mode == "unsafe-local"  # only when asked for by name


@pytest.mark.skipif(not probe().usable, reason=f"bwrap sandbox unusable here: {probe().reason}")
def test_prewarm_option_wraps_the_chosen_backend():
    sandbox = make_sandbox("bwrap", prewarm={"light": 0})
    try:
        assert type(sandbox).__name__ == "PrewarmedSandbox" and sandbox.mode == "bwrap"
    finally:
        sandbox.close()
