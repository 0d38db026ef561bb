"""grade_notebook end to end on real kernels: the toy solution and every failure-mode fixture.

Each fixture is graded once per module (kernels are the slow part) and several tests read the result.
"""
from __future__ import annotations

import shutil
import sys

import nbformat
import pytest
from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpec

from grading.errors import GraderFault
from grading.exercise import Catalogue
from grading.pipeline import grade_notebook
from grading.result import Status
from grading.sandbox import KernelSession, Sandbox

pytestmark = pytest.mark.slow
FULL = 22.0
_cache: dict[tuple, object] = {}


@pytest.fixture(scope="module")
def graded(toy_catalogue, engine_sandbox, failure_dir, toy_solution):
    def grade(name: str, lang: str = "en"):
        key = (name, lang)
        if key not in _cache:
            path = toy_solution if name == "solution" else failure_dir / f"{name}.ipynb"
            events: list[dict] = []
            result = grade_notebook(path.read_bytes(), catalogue=toy_catalogue, sandbox=engine_sandbox, lang=lang,
                                    progress=lambda e: events.append(e.to_json()))
            _cache[key] = (result, events)
        return _cache[key]
    return grade


def checks_by_name(result):
    return {c.name: c for c in result.checks}


def test_solution_scores_full_marks_and_reports_progress(graded, engine_sandbox):
    result, events = graded("solution")
    assert result.status is Status.GRADED, result.message
    assert result.score == result.max_score == FULL
    assert all(c.passed and c.feedback == "correct" for c in result.checks)
    assert [c.status for c in result.cells] == ["ok"] * 9
    assert result.sandbox == engine_sandbox.mode
    kinds = [e["event"] for e in events]
    assert kinds[0] == "started" and kinds[-1] == "done" and kinds[-2] == "checks"
    assert [e["index"] for e in events if e["event"] == "cell"] == list(range(9))
    assert events[-1]["status"] == "graded" and events[-1]["score"] == FULL


def test_seeding_makes_random_draws_reproducible(graded):
    assert checks_by_name(graded("solution")[0])["seeded_draws"].passed


def test_chinese_feedback_and_titles(graded):
    result, _ = graded("exception_cell", "zh")
    by = checks_by_name(result)
    assert by["config_mapping"].title == "TorchTitan 配置键"
    assert "未定义 `tt_config`" in by["config_mapping"].feedback and "提示" in by["config_mapping"].feedback
    assert "抛出 RuntimeError" in result.message


@pytest.mark.parametrize("name", ["syntax_error", "exception_cell"])
def test_failing_cell_loses_only_its_answer(graded, name):
    result, _ = graded(name)
    by = checks_by_name(result)
    assert result.status is Status.ERROR
    assert not by["config_mapping"].passed and "`tt_config` is not defined" in by["config_mapping"].feedback
    assert result.score == FULL - 4
    assert result.cells[1].status == "error" and "cell 1 raised" in result.message
    assert all(c.status == "ok" for i, c in enumerate(result.cells) if i != 1)


def test_infinite_loop_times_out_and_keeps_partial_credit(graded):
    result, _ = graded("infinite_loop")
    assert result.status is Status.ERROR and "time limit" in result.limits_hit
    assert result.cells[2].status == "timeout" and "4 s cell time limit" in result.cells[2].message
    assert result.score == FULL  # the loop cell held no answer; the rest ran after the interrupt


def test_kernel_ignoring_interrupt_is_restarted_without_that_cell(graded):
    result, events = graded("hung_kernel")
    assert result.status is Status.ERROR
    assert result.cells[2].status == "timeout" and "ignored the interrupt" in result.cells[2].message
    assert {"event": "restart", "skipped": 2} in events
    assert result.score == FULL


def test_kernel_death_is_recovered_in_a_fresh_kernel(graded):
    result, events = graded("kernel_death")
    assert result.status is Status.ERROR
    assert result.cells[4].status == "killed" and "kernel died in cell 4" in result.message
    assert {"event": "restart", "skipped": 4} in events
    assert result.score == FULL  # every answer came back from the re-run


def test_huge_output_is_truncated_not_fatal(graded):
    result, _ = graded("huge_output")
    assert "output limit" in result.limits_hit and "truncated at 64 KB" in result.message
    assert result.score == FULL and result.cells[3].status == "ok"


def test_forged_payload_and_patched_json_do_not_fool_the_extractor(graded):
    result, _ = graded("forged_answers")
    by = checks_by_name(result)
    assert not by["exact_int"].passed  # the forged 42 was ignored; the real global is 41
    assert result.score == FULL - 1 and result.status is Status.GRADED


def test_function_call_timeout_fails_only_that_case(graded):
    result, _ = graded("function_timeout")
    by = checks_by_name(result)["reward_function"]
    assert by.score == pytest.approx(4 * 4 / 6, abs=1e-3)
    assert "2 of 4 hidden cases failed" in by.feedback
    assert result.status is Status.GRADED


def test_function_killing_the_kernel_loses_only_its_check(graded):
    result, _ = graded("function_crash")
    by = checks_by_name(result)
    assert result.status is Status.ERROR and "while checking answers" in result.message
    assert by["reward_function"].score == 0 and "kernel died while checking" in by["reward_function"].feedback
    assert result.score == FULL - 4


def test_gradescope_export_of_a_real_result(graded):
    out = graded("exception_cell")[0].to_gradescope()
    assert out["score"] == FULL - 4 and len(out["tests"]) == 9
    assert {t["status"] for t in out["tests"]} == {"passed", "failed"}


# --- grader faults become not_gradable, never a zero ---

class _DeadOnArrivalSandbox(Sandbox):
    """A real kernel process that exits before answering: what a broken kernel image looks like."""

    mode = "test-dead-kernel"

    def start(self, request):
        km = KernelManager(kernel_name="python3")
        km._kernel_spec = KernelSpec(argv=[sys.executable, "-c", "import sys; sys.exit(3)"],
                                     display_name="dead", language="python")
        km.start_kernel()

        class _Session(KernelSession):
            mode = "test-dead-kernel"

            def __init__(self):
                self.km, self.workdir = km, None

            def close(self):
                if km.has_kernel:
                    km.shutdown_kernel(now=True)
                return []
        return _Session()


class _NoKernelSandbox(Sandbox):
    mode = "test-no-kernel"

    def start(self, request):
        raise GraderFault("kernel failed to start: no free sandbox uid")


@pytest.mark.parametrize("sandbox,reason", [(_DeadOnArrivalSandbox(), "kernel failed to start or respond"),
                                            (_NoKernelSandbox(), "no free sandbox uid")])
def test_kernel_that_cannot_start_is_not_gradable(toy_catalogue, toy_solution, sandbox, reason):
    events = []
    result = grade_notebook(toy_solution.read_bytes(), catalogue=toy_catalogue, sandbox=sandbox,
                            progress=lambda e: events.append(e.to_json()))
    assert result.status is Status.NOT_GRADABLE and result.score == 0 and result.checks == []
    assert reason in result.message and "may be retried" in result.message
    assert events[-1] == {"event": "done", "status": "not_gradable", "score": 0.0, "max_score": FULL}


def _copy_catalogue(tmp_path, toy_catalogue):
    shutil.copytree(toy_catalogue.exercises_root, tmp_path / "exercises")
    shutil.copytree(toy_catalogue.reference_root, tmp_path / "reference")
    return tmp_path / "reference" / "ch05.toy" / "toy_answer.txt"


def test_missing_reference_file_is_not_gradable(tmp_path, toy_catalogue, toy_solution, engine_sandbox):
    _copy_catalogue(tmp_path, toy_catalogue).unlink()
    catalogue = Catalogue(tmp_path / "exercises", tmp_path / "reference")
    result = grade_notebook(toy_solution.read_bytes(), catalogue=catalogue, sandbox=engine_sandbox)
    assert result.status is Status.NOT_GRADABLE and "reference answers for ch05.toy unreadable" in result.message


def test_malformed_reference_spec_is_not_gradable(tmp_path, toy_catalogue, toy_solution, engine_sandbox):
    import json

    answer = _copy_catalogue(tmp_path, toy_catalogue)
    data = json.loads(answer.read_text())
    del data["checks"]["mesh_shape"]["expected"]
    answer.write_text(json.dumps(data))
    catalogue = Catalogue(tmp_path / "exercises", tmp_path / "reference")
    result = grade_notebook(toy_solution.read_bytes(), catalogue=catalogue, sandbox=engine_sandbox)
    assert result.status is Status.NOT_GRADABLE and "mesh_shape" in result.message


def test_stale_outputs_in_the_upload_are_ignored(toy_catalogue, toy_solution, engine_sandbox):
    nb = nbformat.read(toy_solution, as_version=4)
    nb.cells[1].source = "answer_int = 41"
    nb.cells[1].outputs = [nbformat.v4.new_output(
        "display_data", data={"application/vnd.titangrade.answers+json": {"nonce": "x", "answers": {"answer_int": 42}}})]
    result = grade_notebook(nbformat.writes(nb), catalogue=toy_catalogue, sandbox=engine_sandbox)
    assert checks_by_name(result)["exact_int"].score == 0 and result.score == FULL - 1


@pytest.mark.parametrize("name,status,cell_status", [("solution", Status.GRADED, "ok"),
                                                     ("kernel_death", Status.ERROR, "killed")])
def test_default_sandbox_gives_the_same_grades(toy_catalogue, toy_solution, failure_dir, name, status, cell_status):
    """The production default ("auto": bwrap) runs the same engine; skipped where bwrap cannot run."""
    from grading.sandbox import make_sandbox

    try:
        sandbox = make_sandbox("auto")
    except GraderFault as exc:
        pytest.skip(f"default sandbox unavailable here: {exc}")
    path = toy_solution if name == "solution" else failure_dir / f"{name}.ipynb"
    result = grade_notebook(path.read_bytes(), catalogue=toy_catalogue, sandbox=sandbox)
    assert result.status is status and result.score == FULL and result.sandbox == sandbox.mode
    assert {c.status for c in result.cells} == {"ok", cell_status}


def test_deleting_the_extractor_is_an_error_not_full_marks(toy_catalogue, toy_solution, engine_sandbox):
    nb = nbformat.read(toy_solution, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(
        "for _k in [k for k in globals() if k.startswith('_tg_')]:\n    del globals()[_k]"))
    result = grade_notebook(nbformat.writes(nb), catalogue=toy_catalogue, sandbox=engine_sandbox)
    assert result.status is Status.ERROR and result.score == 0
    assert "could not read the answers" in result.message
    assert all(c.status == "ok" for c in result.cells)


@pytest.mark.parametrize(
    "payloads",
    [
        {"answers": {"answers": {"x": {"__raised__": 7}}}},
        {"answers": {"answers": [1, 2]}},
        {"calls": {"calls": {"f": 3}}},
        {"calls": {"calls": {"f": [{"__raised__": "x"}, 5, None]}}},
        {"calls": {"calls": [1]}},
        {"x": 1},
    ],
)
def test_timeout_detection_takes_any_payload_shape_a_kernel_can_send(payloads):
    """Payloads are kernel-made: a forged `__raised__` of another type was an AttributeError in the grader,
    which made the submission not gradable (a learner could veto their own grade)."""
    from grading.pipeline import _a_call_timed_out

    assert _a_call_timed_out(payloads) is False


def test_timeout_detection_finds_a_timed_out_answer_and_call():
    from grading.pipeline import _a_call_timed_out

    late = {"__raised__": {"type": "__timeout__"}}
    assert _a_call_timed_out({"answers": {"answers": {"x": late}}})
    assert _a_call_timed_out({"calls": {"calls": {"f": [1, late]}}})
