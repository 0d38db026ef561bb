"""grading/provenance.py: the static import scan and the verdicts on the kernel's provenance report; the
manifest policy's validation. End to end (real kernels, real shortcuts): tests/exercises/test_shortcuts.py."""
from __future__ import annotations

import pytest

from grading.exercise import Catalogue, Manifest, Policy
from grading.provenance import judge, scan_imports

WORDLE = Catalogue().get("ch07.wordle_reward").manifest
GRPO = Catalogue().get("ch07.grpo_math").manifest


def _fn(**over):
    report = {"kind": "function", "module": "__main__", "qualname": "f", "file": "/tmp/ipykernel_7/123.py",
              "in_main": True, "refs": [["re", "/usr/lib/python3.11/re/__init__.py"]]}
    return {**report, **over}


def _payload(**reports):
    base = {n: _fn() for n in WORDLE.own}
    return {"provenance": {**base, **reports}}


def test_scan_finds_every_import_form_and_the_cell():
    forbid = ("verl", "exercises.lab.wordle")
    assert scan_imports(["x = 1", "import verl.trainer.ppo.core_algos as c"], forbid) == ("verl", 1, False)
    assert scan_imports(["from exercises.lab.wordle.reward import compute_score"], forbid)[0] == "exercises.lab.wordle"
    assert scan_imports(["from exercises.lab import wordle"], forbid)[0] == "exercises.lab.wordle"
    assert scan_imports(["import importlib\nm = importlib.import_module('verl')"], forbid)[0] == "verl"
    assert scan_imports(["%%writefile w.py\nfrom verl.utils.ulysses import all_to_all_tensor"], forbid) == (
        "verl", 0, True)
    assert scan_imports(["from exercises.lab.selfcheck import show", "import verlx", "# import verl"], forbid) is None
    assert scan_imports(["def broken(:"], forbid) is None


def test_clean_report_gives_no_verdict():
    assert judge(WORDLE, _payload(), ["def compute_score(): ..."]) == {}


@pytest.mark.parametrize(("report", "needle"), [
    (_fn(module="exercises.lab.wordle.reward", in_main=False), "exercises.lab.wordle.reward"),
    (_fn(file="/venv/lib/python3.11/site-packages/x/y.py"), "not your code"),
    (_fn(refs=[["exercises.lab.wordle.reward:_partial_answer", "/r/exercises/lab/wordle/reward.py"]]),
     "_partial_answer"),
    (_fn(refs=[["tt_utils:compute_score", "/r/exercises/lab/wordle/reward.py"]]), "compute_score"),  # by file
    (_fn(refs=[["exercises.lab.wordle", "/r/exercises/lab/wordle/__init__.py"]]), "uses the module"),
    ({"kind": "not_function", "module": "functools", "qualname": "partial"}, "must be a function"),
    ({"kind": "uninspectable", "error": "RecursionError"}, "Could not verify"),
])
def test_each_way_of_not_being_the_learners_code_scores_zero(report, needle):
    verdicts = judge(WORDLE, _payload(compute_score=report), [])
    assert set(verdicts) == {"compute_score"}
    assert needle in verdicts["compute_score"]


def test_missing_report_is_unverified_but_a_dead_kernel_is_not_judged():
    assert set(judge(WORDLE, {}, [])) == set(WORDLE.own)
    assert judge(WORDLE, None, []) == {}
    assert judge(WORDLE, _payload(compute_score={"kind": "missing"}), []) == {}


def test_forbidden_import_voids_value_answers_only_unless_in_a_writefile_cell():
    payload = {"provenance": {n: _fn() for n in GRPO.own}}
    verdicts = judge(GRPO, payload, ["import verl"])
    assert set(verdicts) == {"course_stats"}
    assert "verl" in verdicts["course_stats"] and "code cell 0" in verdicts["course_stats"]
    assert set(judge(GRPO, payload, ["%%writefile w.py\nimport verl"])) == {a.name for a in GRPO.answers}


def test_messages_are_bilingual():
    zh = judge(WORDLE, _payload(feedback=_fn(module="exercises.lab.wordle.feedback", in_main=False)), [], lang="zh")
    en = judge(WORDLE, _payload(feedback=_fn(module="exercises.lab.wordle.feedback", in_main=False)), [])
    assert "0 分" in zh["feedback"] and "scores 0" in en["feedback"]


def test_policy_validation():
    with pytest.raises(ValueError, match="inside forbidden"):
        Policy(forbid=("exercises.lab",), allow=("exercises.lab.selfcheck",))
    with pytest.raises(ValueError, match="dotted module name"):
        Policy(forbid=("exercises/lab",))
    data = WORDLE.model_dump()
    data["policy"] = {"own": ["compute_score", "nope"]}
    with pytest.raises(ValueError, match="not a function answer"):
        Manifest.model_validate(data)
    data["policy"] = {}
    assert Manifest.model_validate(data).own == ("compute_score", "partial_answer", "feedback")


def test_every_exercise_declares_a_policy_and_library_lessons_say_so():
    for ex in Catalogue():
        assert ex.manifest.policy.forbid or ex.manifest.policy.lesson, ex.id
    lessons = {ex.id for ex in Catalogue() if ex.manifest.policy.lesson}
    assert {"ch07.three_step_training", "ch08.lr_schedule"} <= lessons
