"""`titangrade grade` / `titangrade exercises list` through the real top-level parser."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from grading.exercise import Catalogue
from grading.sandbox import probe
from service.cli import main


@pytest.fixture
def roots(toy_catalogue):
    return ["--exercises-root", str(toy_catalogue.exercises_root), "--reference-root",
            str(toy_catalogue.reference_root)]


def test_exercises_list_json(roots, capsys):
    assert main(["exercises", "list", "--json", *roots]) == 0
    rows = json.loads(capsys.readouterr().out)
    toy = next(r for r in rows if r["id"] == "ch05.toy")
    assert toy["chapter"] == 5 and toy["max_score"] == 22.0 and toy["notebook"] == "ch05/toy/toy.ipynb"
    assert toy["resources"]["world_size"] == 1 and toy["title"].startswith("Toy exercise")


def test_exercises_list_text(roots, capsys):
    assert main(["exercises", "list", *roots]) == 0
    assert "ch05.toy" in capsys.readouterr().out


@pytest.mark.slow
def test_grade_json_exit_code_error_for_failing_cell(roots, failure_dir, capsys):
    code = main(["grade", str(failure_dir / "exception_cell.ipynb"), "--json", "--sandbox", "unsafe-local", *roots])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["status"] == "error" and out["score"] == 18.0 and out["max_score"] == 22.0
    assert out["exercise_id"] == "ch05.toy" and len(out["checks"]) == 9


@pytest.mark.slow
def test_grade_text_zh_exit_code_graded(roots, toy_solution, capsys):
    code = main(["grade", str(toy_solution), "--lang", "zh", "--sandbox", "unsafe-local", *roots])
    out = capsys.readouterr().out
    assert code == 0 and "ch05.toy: graded  22 / 22" in out and "[PASS] exact_int (乘积)" in out


@pytest.mark.parametrize("fixture,code", [("invalid_json.ipynb", "invalid_json"),
                                          ("wrong_exercise.ipynb", "exercise_mismatch")])
def test_grade_invalid_input_exits_2(roots, failure_dir, capsys, fixture, code):
    assert main(["grade", str(failure_dir / fixture), "--exercise", "ch05.toy", "--json", *roots]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["code"] == code


def test_grade_missing_file_and_bad_sandbox(roots, failure_dir, tmp_path, capsys):
    assert main(["grade", str(tmp_path / "nope.ipynb"), *roots]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert main(["grade", str(failure_dir / "syntax_error.ipynb"), "--sandbox", "docker", *roots]) == 2
    assert "unknown sandbox mode" in capsys.readouterr().err


# --- the one-shot path (issue 18): what `titangrade grade` imports, and when its kernel starts ---------------
REPO = Path(__file__).resolve().parents[2]
HEAVY = ("fastapi", "starlette", "sqlalchemy", "torch", "grading.authoring", "service.app", "service.db")


def _python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_grade_parser_imports_nothing_of_the_service():
    code = ("import sys\nfrom service.cli import build_grade_parser\n"
            "args = build_grade_parser().parse_args(['grade', 'x.ipynb', '--sandbox', 'unsafe-local'])\n"
            f"print(args.func.__name__, sorted(m for m in {HEAVY!r} + ('nbformat', 'jupyter_client')"
            " if m in sys.modules))")
    assert _python(code) == "cmd_grade []"


def test_other_commands_still_get_the_full_parser(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "grade" in out and "exercises" in out and "serve" in out


@pytest.mark.slow
def test_kernel_is_launched_before_the_pipeline_is_imported_and_grading_imports_nothing_heavy(roots, toy_solution):
    """The head start must come before nbformat and the pipeline load (they load while the kernel boots)."""
    code = (
        "import sys\nimport grading.sandbox.headstart as hs\nseen = []\norig = hs.HeadStart.__init__\n"
        "def init(self, *a, **k):\n"
        "    seen.append(sorted(m for m in ('nbformat', 'grading.pipeline') if m in sys.modules))\n"
        "    orig(self, *a, **k)\n"
        "hs.HeadStart.__init__ = init\nfrom service.cli import main\n"
        f"code = main(['grade', {str(toy_solution)!r}, '--sandbox', 'unsafe-local', *{roots!r}])\n"
        f"print(code, seen, sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    assert _python(code) == "0 [[]] []"


@pytest.mark.slow
@pytest.mark.skipif(not probe().usable, reason="bwrap sandbox unusable here")
@pytest.mark.parametrize("which,score,code", [("solution", "10 / 10", 0), ("template", "0 / 10", 0)])
def test_real_exercise_graded_in_bwrap_by_the_installed_command(which, score, code):
    exercise = Catalogue().get("ch07.wordle_reward")
    notebook = exercise.solution_path if which == "solution" else exercise.notebook_path
    done = subprocess.run(
        [str(Path(sys.executable).parent / "titangrade"), "grade", str(notebook), "--sandbox", "bwrap"],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == code, done.stderr
    assert f"ch07.wordle_reward: graded  {score}" in done.stdout and "sandbox: bwrap" in done.stdout


def test_installed_command_exits_with_its_code_and_flushed_output(tmp_path):
    """The script ends with os._exit (service/cli.py): the code and the message must still arrive."""
    script = str(Path(sys.executable).parent / "titangrade")
    done = subprocess.run([script, "grade", str(tmp_path / "nope.ipynb"), "--json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and json.loads(done.stdout)["error"]["code"] == "unreadable_file"


@pytest.mark.slow
def test_small_notebook_is_validated_with_jsonschema_in_one_shot_and_still_refused_when_invalid(roots, tmp_path):
    bad = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "catalogue" / "reference" / "ch05.toy"
                      / "solution.ipynb").read_text())
    bad["cells"][0]["cell_type"] = "bogus"
    path = tmp_path / "bad.ipynb"
    path.write_text(json.dumps(bad))
    code = ("import os, sys\nfrom service.cli import main\n"
            f"rc = main(['grade', {str(path)!r}, '--json', '--sandbox', 'unsafe-local', *{roots!r}])\n"
            "print(rc, os.environ.get('NBFORMAT_VALIDATOR'))")
    assert _python(code).endswith("2 jsonschema")


@pytest.mark.slow
@pytest.mark.skipif(not probe().usable, reason="bwrap sandbox unusable here")
def test_grade_waits_for_a_sandbox_user_that_another_service_holds(roots, toy_solution, capsys, monkeypatch):
    """Every sandbox user is held by another titangrade process: `grade` says so on stderr and waits (bounded
    by --wait-user-s) instead of failing, then grades once one is freed. Real flocks, real bwrap kernel."""
    import fcntl
    import os
    import threading
    import time

    users = ("tgsbx30", "tgsbx31")  # this run's sandbox gets only these (the host's other users are left alone)
    monkeypatch.setattr("grading.sandbox.bwrap_command.installed_sandbox_users", lambda: users)
    os.makedirs("/run/titangrade/users", mode=0o700, exist_ok=True)
    fds = [os.open(f"/run/titangrade/users/{u}.lock", os.O_RDWR | os.O_CREAT, 0o600) for u in users]
    for fd in fds:
        fcntl.flock(fd, fcntl.LOCK_EX)
    codes: list[int] = []
    grading = threading.Thread(target=lambda: codes.append(main(
        ["grade", str(toy_solution), "--sandbox", "bwrap", "--wait-user-s", "120", *roots])))
    try:
        grading.start()
        err = ""
        deadline = time.monotonic() + 60
        while "waiting up to" not in err and time.monotonic() < deadline and grading.is_alive():
            time.sleep(0.05)
            err += capsys.readouterr().err
    finally:
        for fd in fds:
            os.close(fd)  # the other service's runs end
    grading.join(120)
    out = capsys.readouterr().out
    assert "no free sandbox user: all 2 are in use (0 by this process, 2 by other titangrade processes" in err
    assert codes == [0] and "ch05.toy: graded  22 / 22" in out and "sandbox: bwrap" in out
