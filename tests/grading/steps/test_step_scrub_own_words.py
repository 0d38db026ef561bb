"""The scrub list spares what the learner wrote or was shown, and keeps what is hidden (issue 29 item 4):
codec markers are no needles, a public case's expected result is public text, a hidden string the learner's own
cells hold as a whole word is not masked as hidden, and nothing else hidden is spared."""

from __future__ import annotations

import json

from grading.result import CheckResult, GradeResult, Status
from grading.steps.grader_cells import plan


def _plan(toy_catalogue, *calls):
    exercise = toy_catalogue.get("ch05.toy")
    reference = json.loads(json.dumps(exercise.reference()))
    reference["checks"]["reward_function"]["calls"] += list(calls)
    return plan(exercise, reference=reference)


def _scrubbed(p, text: str, sources: list[str]) -> str:
    result = GradeResult(
        exercise_id="ch05.toy",
        status=Status.GRADED,
        score=0,
        max_score=1,
        checks=[CheckResult(name="c", score=0, max_score=1, passed=False, feedback=text)],
    )
    result.scrub(p.scrub_for(sources), "[hidden]", public=p.public_text)
    return result.checks[0].feedback


def test_the_codecs_own_markers_are_not_hidden_strings(toy_catalogue):
    tensor = {"__tensor__": {"dtype": "float32", "shape": [1], "data": [0.5]}}
    p = _plan(toy_catalogue, {"args": [tensor], "expect": {"Zqkeyname": tensor}})
    assert "Zqkeyname" in p.scrub
    assert not {"__tensor__", "dtype", "float32", "shape", "data"} & set(p.scrub)


def test_a_public_cases_expected_result_is_public_text(toy_catalogue):
    p = _plan(
        toy_catalogue,
        {"args": [1, 1], "expect": {"roundtrip_flag": 1}, "public": True, "label": "pub"},
        {"args": ["Zqhiddenarg"], "expect": {"roundtrip_flag": 2, "Zqhiddenkey": 0}},
    )
    assert "roundtrip_flag" not in p.scrub and "Zqhiddenkey" in p.scrub and "Zqhiddenarg" in p.scrub


def test_a_hidden_word_the_learners_own_cells_write_is_shown_as_theirs(toy_catalogue):
    p = _plan(toy_catalogue, {"args": ["Zqsecretarg"], "expect": {"Zqrank_key": 1}})
    feedback = "returned {'Zqrank_key': 1, 'Zqsecretarg': 2}"
    own = ["def f(x):\n    return {'Zqrank_key': 1, 'Zq' + 'secretarg': 2}"]  # one written, one only computed
    assert _scrubbed(p, feedback, own) == "returned {'Zqrank_key': 1, '[hidden]': 2}"
    assert _scrubbed(p, feedback, []) == "returned {'[hidden]': 1, '[hidden]': 2}"  # not written: masked


def test_a_hidden_word_inside_a_longer_name_of_the_learner_is_still_masked(toy_catalogue):
    """The learner's cells must hold the hidden string whole: fragments of it inside other names (say, every
    6-character window strung together) spare nothing."""
    p = _plan(toy_catalogue, {"args": ["Zqsecretarg"], "expect": 0.0})
    own = ["x = 'aZqsecretargb'", "y = 'Zqsecr' 'etarg'", "z = 'Zqsecretar_Zqsecretarg_'"]
    assert "Zqsecretarg" in p.scrub_for(own)
    assert _scrubbed(p, "got Zqsecretarg", own) == "got [hidden]"


def test_the_nonce_and_the_extractors_name_are_never_spared(toy_catalogue):
    p = _plan(toy_catalogue)
    spared = p.scrub_for([f"{p.nonce} {p.handle}"])
    assert p.nonce in spared and p.handle in spared
