"""grade_notebook makes the grader plan before anything runs, and scrubs the result with it whatever happens
next: a grader fault whose message quotes a hidden string is not_gradable and shows none of it. No kernel
runs here (run_notebook is replaced), so these are fast."""

from __future__ import annotations

import dataclasses

import pytest

import grading.pipeline as pipeline
from grading.errors import GraderFault
from grading.result import Status
from grading.steps import grader_cells

SECRET = "hidden-expected-value-42"


@pytest.fixture
def secret_plan(monkeypatch):
    """The real plan, with one more hidden string to scrub."""
    real = grader_cells.plan

    def plan(exercise, *, reference):
        made = real(exercise, reference=reference)
        return dataclasses.replace(made, scrub=(*made.scrub, SECRET))

    monkeypatch.setattr(grader_cells, "plan", plan)


def test_a_grader_fault_after_the_plan_is_scrubbed_with_it(monkeypatch, secret_plan, toy_catalogue, toy_solution):
    def run_notebook(nb, *, plan, **_):
        assert SECRET in plan.scrub  # the plan _grade runs with is the one the result is scrubbed with
        raise GraderFault(f"the kernel died printing {SECRET}")

    monkeypatch.setattr(pipeline, "run_notebook", run_notebook)
    result = pipeline.grade_notebook(toy_solution.read_bytes(), catalogue=toy_catalogue)
    assert result.status is Status.NOT_GRADABLE and "the kernel died printing" in result.message
    assert SECRET not in result.message and SECRET[:8] not in result.message


def test_a_fault_before_the_plan_is_not_gradable(monkeypatch, toy_catalogue, toy_solution):
    def no_plan(exercise, *, reference):
        raise GraderFault("reference unreadable")

    monkeypatch.setattr(grader_cells, "plan", no_plan)
    result = pipeline.grade_notebook(toy_solution.read_bytes(), catalogue=toy_catalogue)
    assert result.status is Status.NOT_GRADABLE and "reference unreadable" in result.message
