"""Adding an exercise by docs/exercise-format.md leaves the suite green (issue 26).

In a copy of the repository, a newcomer does exactly the 4 steps of the docs: `exercises new`, the edits the
docs list in the two files (titles, `[policy] forbid`; the scaffold's toy solution, hidden cases and two
mistakes are kept), `exercises validate`. Then, with the new exercise in the catalogue, `exercises build
--check` and every test that reads the whole course catalogue must pass, unchanged: before issue 26 three
did not (`[17/17]`, two mistakes demanded and one scaffolded, a policy that forbids nothing).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grading.exercise import REPO_ROOT
from grading.sandbox import probe

NEW = "ch09.reward_shaping"  # the docs' own example
SANDBOX = os.environ.get("TITANGRADE_TEST_SANDBOX", "unsafe-local")
COPIED = ("grading", "exercises", "reference", "service", "tests", "scripts", "pyproject.toml")
# Every test that reads the course catalogue as a whole (Catalogue() with its default roots): the ones a
# new exercise could turn red. Per-exercise gradings run for the new exercise only (see -k below).
CATALOGUE_WIDE = [
    "tests/exercises/test_catalogue.py",
    "tests/exercises/test_exercise_notebooks.py",
    "tests/grading/authoring/test_authoring_build.py::test_the_repository_is_built",
    "tests/grading/authoring/test_authoring_master.py",
    "tests/grading/authoring/test_authoring_policy_note.py::test_every_catalogue_notebook_carries_its_policy_cell_once",
    "tests/grading/test_grading_provenance.py::test_every_exercise_declares_a_policy_and_library_lessons_say_so",
    "tests/grading/test_grading_harness.py::test_only_exercises_with_launchers_have_a_harness",
    "tests/grading/test_grading_check_submission.py::test_every_course_solution_and_template_takes_the_quick_path",
    "tests/service/workers/test_placement.py::test_the_course_catalogue_has_a_demand_for_every_exercise",
]


def _run(root: Path, *args: str, timeout_s: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [sys.executable, *args], cwd=root, env=env, capture_output=True, text=True, timeout=timeout_s, check=False
    )


def _titangrade(root: Path, *args: str) -> subprocess.CompletedProcess:
    return _run(root, "-m", "service.cli", "exercises", *args)


@pytest.mark.slow
def test_an_exercise_added_by_the_docs_leaves_the_suite_green(tmp_path):
    root = tmp_path / "repo"
    for name in COPIED:
        src = REPO_ROOT / name
        if src.is_dir():
            shutil.copytree(src, root / name, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        else:
            shutil.copy2(src, root / name)

    # step 1
    done = _titangrade(root, "new", NEW)
    assert done.returncode == 0, done.stderr
    toml = root / "exercises/ch09/reward_shaping/exercise.toml"
    master = root / "reference" / NEW / "reward_shaping.py"
    assert f"created {toml.relative_to(root)}\ncreated {master.relative_to(root)}\n" in done.stdout
    # step 2: the title in both languages and what the policy forbids (the docs' example for the toy)
    text = toml.read_text(encoding="utf-8")
    for old, new in (
        ("TODO: the English title", "Sum of squares"),
        ("TODO：中文标题", "平方和"),
        ("forbid = []", 'forbid = ["numpy"]'),
    ):
        assert old in text, old
        text = text.replace(old, new)
    toml.write_text(text, encoding="utf-8")
    # step 3: the learner's text; the toy's solution, hidden cases and mistakes stay as scaffolded
    text = master.read_text(encoding="utf-8")
    assert text.count("练习：TODO") == 1 and text.count("Exercise: TODO") == 1
    master.write_text(text.replace("练习：TODO", "练习：平方和").replace("Exercise: TODO", "Exercise: sum of squares"))
    # step 4
    done = _titangrade(root, "validate", NEW, "--sandbox", SANDBOX)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rsplit("\nexercise ", 1)[1].split("\n")[2].split() == [NEW, "10/10", "0", "2/2", "ok"]

    # what CI runs before the tests, then the catalogue-wide tests, with the new exercise present
    done = _titangrade(root, "build", "--check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{NEW}  " in done.stdout and "STALE" not in done.stdout
    tests = CATALOGUE_WIDE if probe().usable else [t for t in CATALOGUE_WIDE if "test_exercise_notebooks" not in t]
    done = _run(
        root,
        "-m",
        "pytest",
        "-v",
        "-p",
        "no:cacheprovider",
        "-m",
        "not slow",
        "-k",
        f"{NEW} or not test_notebook_grades_as_declared",  # the other exercises' gradings are unchanged
        *tests,
        timeout_s=600,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    ran = [f"test_every_file_is_there[{NEW}] PASSED", f"test_mistake_fixtures_declare_expectations[{NEW}] PASSED",
           "test_every_exercise_declares_a_policy_and_library_lessons_say_so PASSED",
           "test_the_repository_is_built PASSED"]  # fmt: skip
    if probe().usable:
        ran += [f"test_notebook_grades_as_declared[{NEW}-{nb}] PASSED" for nb in ("solution", "template")]
        ran += [f"test_notebook_grades_as_declared[{NEW}-mistake_{m}] PASSED" for m in ("no_square", "drops_negatives")]
    assert all(line in done.stdout for line in ran), [line for line in ran if line not in done.stdout]
