"""Engine test fixtures: the test-only toy catalogue and the sandbox the engine tests run kernels in.

TITANGRADE_TEST_SANDBOX picks the sandbox (default unsafe-local: these tests are about the engine;
tests/grading/sandbox covers isolation, and one pipeline test also runs under "auto").
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from grading.exercise import Catalogue

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TOY_ROOT = FIXTURES / "catalogue"
FAILURE_DIR = FIXTURES / "notebooks" / "failure"
TOY_SOLUTION = TOY_ROOT / "reference" / "ch05.toy" / "solution.ipynb"


@pytest.fixture(scope="session")
def toy_catalogue() -> Catalogue:
    return Catalogue(TOY_ROOT / "exercises", TOY_ROOT / "reference")


@pytest.fixture(scope="session")
def engine_sandbox():
    from grading.sandbox import make_sandbox

    return make_sandbox(os.environ.get("TITANGRADE_TEST_SANDBOX", "unsafe-local"))


@pytest.fixture(scope="session")
def failure_dir() -> Path:
    return FAILURE_DIR


@pytest.fixture(scope="session")
def toy_solution() -> Path:
    return TOY_SOLUTION
