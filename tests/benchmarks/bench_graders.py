"""`titangrade grade` vs nbgrader autograde vs `otter run`, same notebook, same checks (issue 18).

    sudo .venv/bin/python tests/benchmarks/bench_graders.py [--rounds 7] [--exercise ch07.wordle_reward]

A script, not a test (not run by CI). It installs nbgrader and otter-grader into their own venv under
the gitignored .bench/ (reused when present), then builds, at run time and only under .bench/, the
equivalent assignment for each from the exercise's manifest and hidden answer file:

- nbgrader: the learner notebook plus one autograder-test cell per check (its points), the calls and
  expected values between `### BEGIN HIDDEN TESTS` markers; `nbgrader generate_assignment` strips them
  from the release, `nbgrader autograde` puts them back and runs the submission (its course directory).
- Otter: one OK-format test file per check (one hidden case, the check's points), zipped by
  `otter generate`; `otter run -a autograder.zip` grades the submission.

Both score a check all or nothing (titangrade gives partial credit per call; the solution and the
template score the same either way). The script refuses to time anything unless all three give the
solution full marks and the unmodified template zero. Then it times, interleaved (A B C D E, A B C D E,
...), whole processes on the solution: `titangrade grade --sandbox bwrap` (as production), nbgrader
autograde, otter run, and, as the no-grading baselines, `jupyter nbconvert --execute` and `jupyter
execute` (nbgrader's venv). It prints medians, ratios and the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from grading.exercise import Catalogue, Exercise  # noqa: E402

BENCH = REPO / ".bench"
VENV = BENCH / "venv"
PACKAGES = ["nbgrader", "otter-grader", "ipykernel", "nbconvert", "nbclient"]
ASSIGNMENT = "ps1"

# The checks as plain Python, the same comparison as grading/checks/compare.py for the kinds this
# exercise uses (numeric within atol + rtol*|expected|, structures key by key; exact is ==).
HELPER = """import json as _tg_json, numbers as _tg_numbers

def _tg_close(got, exp, atol, rtol):
    if isinstance(exp, dict):
        return isinstance(got, dict) and got.keys() == exp.keys() and all(
            _tg_close(got[k], exp[k], atol, rtol) for k in exp)
    if isinstance(exp, (list, tuple)):
        return isinstance(got, (list, tuple)) and len(got) == len(exp) and all(
            _tg_close(g, e, atol, rtol) for g, e in zip(got, exp))
    if isinstance(exp, _tg_numbers.Real) and not isinstance(exp, bool):
        return isinstance(got, _tg_numbers.Real) and abs(float(got) - exp) <= atol + rtol * abs(exp)
    return got == exp

def _tg_check(fn, calls, compare, atol, rtol):
    calls = _tg_json.loads(calls)
    passed = 0
    for args, exp in calls:
        try:
            got = fn(*args)
        except Exception:
            continue
        passed += bool(got == exp if compare == "exact" else _tg_close(got, exp, atol, rtol))
    return passed == len(calls)
"""


def sh(argv: list[str], *, cwd: Path | None = None, env: dict | None = None, check: bool = True) -> str:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise SystemExit(
            f"FAILED ({done.returncode}): {' '.join(map(str, argv))}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return done.stdout


def ensure_venv() -> None:
    """nbgrader and otter-grader in a venv of their own (their pins must not touch the project's)."""
    if not (VENV / "bin" / "nbgrader").exists() or not (VENV / "bin" / "otter").exists():
        sh(["python3", "-m", "venv", str(VENV)])
        sh([str(VENV / "bin" / "pip"), "install", "-q", *PACKAGES])
    versions = sh(
        [str(VENV / "bin" / "python"), "-c", "import nbgrader, otter; print(nbgrader.__version__, otter.__version__)"]
    )
    print(f"nbgrader {versions.split()[0]}, otter-grader {versions.split()[1]} in {VENV.relative_to(REPO)}")


def kernel_env() -> dict[str, str]:
    """The bench venv first on PATH (its python3 kernel), the repo importable (exercises.lab.selfcheck)."""
    env = dict(os.environ)
    env["PATH"] = f"{VENV / 'bin'}:{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(REPO)
    env.pop("JUPYTER_PATH", None)
    return env


def plain_checks(exercise: Exercise) -> list[dict]:
    """Each check: name, points, the answer function, and its calls as (args, expected) JSON."""
    reference = exercise.reference()["checks"]
    out = []
    for check in exercise.manifest.checks:
        spec = reference[check.name]
        if check.kind != "function" or any("raises" in c or "kwargs" in c for c in spec["calls"]):
            raise SystemExit(f"{exercise.id}: check {check.name} is not a plain function check; extend the script")
        calls = [[c["args"], c["expect"]] for c in spec["calls"]]
        out.append(
            {
                "name": check.name,
                "points": float(check.points),
                "answer": check.answer,
                "compare": spec.get("compare", "numeric"),
                "atol": float(spec.get("atol", 0.0)),
                "rtol": float(spec.get("rtol", 1e-9)),
                "calls": json.dumps(calls),
            }
        )
    return out


def check_call(c: dict) -> str:
    return f"_tg_check({c['answer']}, {c['calls']!r}, {c['compare']!r}, {c['atol']!r}, {c['rtol']!r})"


def learner_cells(path: Path) -> list[dict]:
    nb = json.loads(path.read_text())
    return [
        dict(cell, metadata={}, **({"outputs": [], "execution_count": None} if cell["cell_type"] == "code" else {}))
        for cell in nb["cells"]
    ]


def notebook(cells: list[dict], like: Path) -> dict:
    nb = json.loads(like.read_text())
    nb["cells"] = cells
    nb["metadata"] = {k: v for k, v in nb["metadata"].items() if k in ("kernelspec", "language_info")}
    nb["metadata"]["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    return nb


# --- nbgrader ----------------------------------------------------------------------------------------------
def build_nbgrader(root: Path, exercise: Exercise, checks: list[dict], students: dict[str, Path]) -> Path:
    course = root / "nbgrader"
    name = exercise.notebook_path.name
    (course / "source" / ASSIGNMENT).mkdir(parents=True)
    (course / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.CourseDirectory.root = {str(course)!r}\nc.CourseDirectory.course_id = 'bench'\n"
        "c.ExecutePreprocessor.timeout = 120\n"
    )
    tests = []
    for c in checks:
        source = (
            f"# {c['name']} ({c['points']:g} points)\n"
            f"### BEGIN HIDDEN TESTS\n{HELPER}\nassert {check_call(c)}\n### END HIDDEN TESTS\n"
        )
        meta = {
            "nbgrader": {
                "grade": True,
                "grade_id": c["name"],
                "locked": True,
                "points": c["points"],
                "schema_version": 3,
                "solution": False,
                "task": False,
            }
        }
        tests.append({"cell_type": "code", "metadata": meta, "source": source, "outputs": [], "execution_count": None})
    source_nb = notebook(learner_cells(exercise.notebook_path) + tests, exercise.notebook_path)
    (course / "source" / ASSIGNMENT / name).write_text(json.dumps(source_nb, indent=1))
    sh([str(VENV / "bin" / "nbgrader"), "generate_assignment", ASSIGNMENT, "--force"], cwd=course, env=kernel_env())
    release = json.loads((course / "release" / ASSIGNMENT / name).read_text())
    released_tests = [c for c in release["cells"] if c["metadata"].get("nbgrader", {}).get("grade")]
    assert len(released_tests) == len(checks) and all("HIDDEN" not in "".join(c["source"]) for c in released_tests), (
        "nbgrader's release still holds hidden tests"
    )
    for student, path in students.items():  # what a learner submits: their cells + the released test cells
        sub = course / "submitted" / student / ASSIGNMENT
        sub.mkdir(parents=True)
        (sub / name).write_text(json.dumps(notebook(learner_cells(path) + released_tests, exercise.notebook_path)))
    return course


def nbgrader_cmd(course: Path, student: str) -> list[str]:
    return [str(VENV / "bin" / "nbgrader"), "autograde", ASSIGNMENT, "--student", student, "--force"]


def nbgrader_score(course: Path, student: str) -> float:
    code = (
        f"from nbgrader.api import Gradebook\nwith Gradebook('sqlite:///{course}/gradebook.db') as gb:\n"
        f"    print(gb.find_submission({ASSIGNMENT!r}, {student!r}).score)"
    )
    return float(sh([str(VENV / "bin" / "python"), "-c", code]).split()[-1])


# --- Otter -------------------------------------------------------------------------------------------------
def build_otter(root: Path, exercise: Exercise, checks: list[dict], students: dict[str, Path]) -> Path:
    work = root / "otter"
    (work / "tests").mkdir(parents=True)
    for c in checks:
        case = {"code": f">>> exec({HELPER!r})\n>>> {check_call(c)}\nTrue\n", "hidden": True, "locked": False}
        test = {
            "name": c["name"],
            "points": c["points"],
            "suites": [{"cases": [case], "scored": True, "setup": "", "teardown": "", "type": "doctest"}],
        }
        (work / "tests" / f"{c['name']}.py").write_text(f"OK_FORMAT = True\n\ntest = {test!r}\n")
    sh(
        [
            str(VENV / "bin" / "otter"),
            "generate",
            "-t",
            "tests",
            "-o",
            "autograder.zip",
            "--no-config",
            "--no-requirements",
            "--no-environment",
        ],
        cwd=work,
        env=kernel_env(),
    )
    shutil.rmtree(work / "tests")  # only the zip is used from here on
    for student, path in students.items():
        (work / f"{student}.ipynb").write_text(json.dumps(notebook(learner_cells(path), exercise.notebook_path)))
        (work / f"out_{student}").mkdir()
    return work


def otter_cmd(work: Path, student: str) -> list[str]:
    return [
        str(VENV / "bin" / "otter"),
        "run",
        "-a",
        str(work / "autograder.zip"),
        "-o",
        str(work / f"out_{student}"),
        "--no-logo",
        str(work / f"{student}.ipynb"),
    ]


def otter_score(work: Path, student: str) -> float:
    results = json.loads((work / f"out_{student}" / "results.json").read_text())
    return float(sum(t.get("score", 0.0) for t in results["tests"]))  # the "Public Tests" summary has none


# --- titangrade and the plain executions -------------------------------------------------------------------
def titangrade_cmd(path: Path, exercise: Exercise) -> list[str]:
    return [
        str(REPO / ".venv" / "bin" / "titangrade"),
        "grade",
        str(path),
        "--exercise",
        exercise.id,
        "--sandbox",
        "bwrap",
        "--json",
    ]


def titangrade_score(path: Path, exercise: Exercise) -> float:
    done = subprocess.run(titangrade_cmd(path, exercise), capture_output=True, text=True)
    result = json.loads(done.stdout)
    if result.get("sandbox") != "bwrap":
        raise SystemExit(f"titangrade did not run in bwrap: {result.get('sandbox')!r}")
    return float(result["score"])


def load() -> str:
    return sh(["uptime"]).strip().split("load average:")[-1].strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--exercise", default="ch07.wordle_reward")
    parser.add_argument("--baseline", type=Path, help="also time `titangrade grade` from this checkout (e.g. main)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root: `titangrade grade --sandbox bwrap` drops each kernel to a sandbox user")
    ensure_venv()
    exercise = Catalogue().get(args.exercise)
    checks = plain_checks(exercise)
    root = BENCH / "graders"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    students = {"solution": exercise.solution_path, "template": exercise.notebook_path}
    course = build_nbgrader(root, exercise, checks, students)
    otter = build_otter(root, exercise, checks, students)
    env = kernel_env()
    full = exercise.manifest.max_score

    scores = {}
    for student, path in students.items():
        sh(nbgrader_cmd(course, student), cwd=course, env=env)
        sh(otter_cmd(otter, student), cwd=otter, env=env)
        scores[student] = (
            titangrade_score(path, exercise),
            nbgrader_score(course, student),
            otter_score(otter, student),
        )
        print(
            f"{student:<9} titangrade {scores[student][0]:g}  nbgrader {scores[student][1]:g}"
            f"  otter {scores[student][2]:g}  (of {full:g})"
        )
    if any(abs(s - full) > 1e-9 for s in scores["solution"]) or any(abs(s) > 1e-9 for s in scores["template"]):
        raise SystemExit("FAILED: every grader must give the solution full marks and the template zero; not timing")

    executed = root / "executed.ipynb"
    runs = {
        "titangrade grade (bwrap)": (titangrade_cmd(exercise.solution_path, exercise), REPO),
        "nbgrader autograde": (nbgrader_cmd(course, "solution"), course),
        "otter run": (otter_cmd(otter, "solution"), otter),
        "jupyter nbconvert --execute": (
            [
                str(VENV / "bin" / "jupyter"),
                "nbconvert",
                "--execute",
                "--to",
                "notebook",
                "--output",
                str(executed),
                str(exercise.solution_path),
            ],
            root,
        ),
        "jupyter execute": ([str(VENV / "bin" / "jupyter"), "execute", str(exercise.solution_path)], root),
    }
    if args.baseline:
        argv = [
            str(REPO / ".venv" / "bin" / "python"),
            "-m",
            "service.cli",
            *titangrade_cmd(exercise.solution_path, exercise)[1:],
        ]
        runs = {f"titangrade grade, {args.baseline.name}": (argv, args.baseline.resolve()), **runs}
    times: dict[str, list[float]] = {k: [] for k in runs}
    load_before = load()
    for _ in range(args.rounds):
        for label, (argv, cwd) in runs.items():
            t0 = time.perf_counter()
            done = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[label].append(time.perf_counter() - t0)
            if done.returncode != 0:
                raise SystemExit(f"FAILED while timing: {label} exited {done.returncode}")
    load_after = load()

    med = {k: statistics.median(v) for k, v in times.items()}
    ours = med["titangrade grade (bwrap)"]
    print(
        f"\n{args.exercise} solution, {args.rounds} interleaved rounds, whole processes; "
        f"load average before {load_before}, after {load_after}"
    )
    print(f"{'command':<30} {'median s':>9} {'min s':>7} {'max s':>7} {'vs titangrade':>14}")
    for label, value in med.items():
        print(f"{label:<30} {value:9.2f} {min(times[label]):7.2f} {max(times[label]):7.2f} {value / ours:13.2f}x")
    goal = med["nbgrader autograde"] / ours >= 3 and med["otter run"] > ours
    print(f"goal (>= 3x faster than nbgrader, ahead of otter): {'met' if goal else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
