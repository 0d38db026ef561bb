"""Feedback names the wrong key of a learner's dict where the notebook states it, and counts it where it does not
(grading/checks/keys.py); a failing case's hint is the hint of the rule it names (issue 29 item 4)."""

from __future__ import annotations

import pytest

from grading import checks
from grading.checks import CheckContext

EXPECTED = {"lr": 1e-6, "entropy_coeff": 0.004, "hidden_knob": 3}
NOTEBOOK = "| `lr` | `actor.optim.lr` |\n| `entropy_coeff` | `actor.entropy_coeff` | 0.004 |"  # hidden_knob unstated


def run(kind, answer, spec, stated=NOTEBOOK, lang="en"):
    return checks.get(kind)(answer, spec, CheckContext(lang=lang, name="c", answer_name="f", stated=stated))


def test_a_wrong_value_at_a_stated_key_is_named_with_its_count():
    out = run("mapping", {"lr": 1e-6, "entropy_coeff": 0.04, "hidden_knob": 3}, {"expected": EXPECTED})
    assert out.feedback == "1 of 3 expected keys have a wrong value: 'entropy_coeff'"
    zh = run("mapping", {"lr": 1e-6, "entropy_coeff": 0.04, "hidden_knob": 3}, {"expected": EXPECTED}, lang="zh")
    assert "'entropy_coeff'" in zh.feedback and "取值错误" in zh.feedback


def test_a_key_the_notebook_does_not_state_is_only_counted_wrong_or_missing():
    wrong = run("mapping", {"lr": 1e-6, "entropy_coeff": 0.004, "hidden_knob": 4}, {"expected": EXPECTED})
    assert wrong.feedback == "1 of 3 expected keys have a wrong value" and "hidden_knob" not in wrong.feedback
    missing = run("mapping", {"lr": 1e-6}, {"expected": EXPECTED})
    assert "2 of 3 expected keys are missing: 'entropy_coeff' and 1 more" in missing.feedback
    assert "hidden_knob" not in missing.feedback


def test_a_word_inside_a_longer_name_does_not_state_the_key():
    out = run("mapping", {"lr": 2e-6}, {"expected": {"lr": 1e-6}}, stated="lr_schedule and warmup_lr")
    assert out.feedback == "1 of 1 expected keys have a wrong value"


def test_unexpected_keys_are_named_only_when_the_notebook_states_every_expected_key():
    """Naming a learner's extra key says the expected dict lacks it: with an unstated expected key, a batch of
    guessed keys would learn which ones it has (the ones not named)."""
    guesses = {"lr": 1e-6, "entropy_coeff": 0.004, "hidden_knob": 3, "guess_a": 0, "guess_b": 0}
    counted = run("mapping", guesses, {"expected": EXPECTED})
    assert counted.feedback == "2 key(s) are not expected"
    stated = NOTEBOOK + " and `hidden_knob`"
    named = run("mapping", guesses, {"expected": EXPECTED}, stated=stated)
    assert named.feedback == "2 key(s) are not expected: 'guess_a', 'guess_b'"
    assert named.fraction == counted.fraction == pytest.approx(1 / 3)  # naming changes no score


def test_a_guessed_key_is_not_confirmed_as_a_hidden_one():
    """Many guessed keys at once, one of them the unstated expected key with a wrong value: nothing names it."""
    guesses = {"lr": 1e-6, "entropy_coeff": 0.004, **{f"k{i}": 0 for i in range(20)}, "hidden_knob": 99}
    out = run("mapping", guesses, {"expected": EXPECTED})
    assert "hidden_knob" not in out.feedback and "'k" not in out.feedback


def test_numeric_dicts_say_which_stated_key_is_off():
    spec = {"expected": {"lr": 1e-6, "entropy_coeff": 0.004}, "rtol": 1e-6}
    out = run("numeric", {"lr": 1e-6, "entropy_coeff": 0.01}, spec)
    assert out.fraction == 0 and "1 of 2 numbers are outside" in out.feedback
    assert "wrong value at key(s) 'entropy_coeff'" in out.feedback and "0.004" not in out.feedback
    assert "missing key(s) 'entropy_coeff'" in run("numeric", {"lr": 1e-6}, spec).feedback


def test_a_public_call_returning_a_dict_names_the_learners_wrong_key():
    spec = {
        "compare": "exact",
        "calls": [
            {
                "args": [[1, 4, 4, 2]],
                "public": True,
                "label": "B=1",
                "expect": {"rank0": [1], "rank1": [2], "roundtrip": True},
            },
        ],
    }
    ctx = CheckContext(
        name="c",
        answer_name="run",
        calls=[{"rank0": [1], "rank1": [3], "roundtrip": True}],
        stated='{"rank0": [1], "rank1": [2], "roundtrip": true}',
    )  # the public case: stated
    out = checks.get("function")(None, spec, ctx)
    assert "B=1: run([1, 4, 4, 2]) returned {'rank0': [1], 'rank1': [3], 'roundtrip': True}" in out.feedback
    assert "wrong value at key(s) 'rank1'" in out.feedback and "[2]" not in out.feedback


RULED = {
    "compare": "exact",
    "feedback": {"en": "The check's own hint.", "zh": "检查自己的提示。"},
    "rule_hints": {
        "pad": {"en": "Pad to the multiple.", "zh": "补齐到倍数。"},
        "raise": {"en": "Raise on an unknown model.", "zh": "未知模型要抛出异常。"},
    },
    "calls": [
        {"args": [1], "expect": 1, "public": True, "label": "one"},
        {"args": [2], "expect": 2, "rules": ["raise"]},
        {"args": [3], "expect": 3, "rules": ["pad"]},
        {"args": [4], "expect": 4, "rules": ["pad", "raise"]},
    ],
}


def _hints(results, spec=RULED, lang="en"):
    return checks.get("function")(None, spec, CheckContext(lang=lang, name="c", answer_name="f", calls=results))


def test_a_failing_hidden_case_gets_the_hints_of_its_rules_in_rules_order():
    out = _hints([1, 2, 0, 4])
    assert out.hints == ("Pad to the multiple.",) and "1 of 3 hidden cases failed" in out.feedback
    assert _hints([1, 0, 3, 0]).hints == ("Pad to the multiple.", "Raise on an unknown model.")  # RULES order, once
    assert _hints([1, 0, 3, 4], lang="zh").hints == ("未知模型要抛出异常。",)


def test_a_failing_call_without_rules_falls_back_to_the_checks_hint():
    assert _hints([0, 2, 0, 4]).hints == ("Pad to the multiple.", "The check's own hint.")
    plain = {k: v for k, v in RULED.items() if k != "rule_hints"}
    assert _hints([1, 0, 3, 4], spec=plain).hints is None  # no rules: scoring shows the check's own hint


def test_a_list_of_dicts_names_the_wrong_key_by_its_position():
    """ch06.context_parallel's run_ulysses returns one dict per shape: say which item's key is off."""
    expect = [{"rank0": [1], "rank1": [2], "roundtrip": True}, {"rank0": [5], "rank1": [6], "roundtrip": True}]
    spec = {
        "compare": "exact",
        "calls": [{"args": [[[1, 4, 4, 2], [1, 2, 2, 2]]], "public": True, "label": "two", "expect": expect}],
    }
    got = [{"rank0": [1], "rank1": [2], "roundtrip": True}, {"rank0": [6], "rank1": [5], "roundtrip": False}]
    ctx = CheckContext(name="c", answer_name="run", calls=[got], stated='"rank0" "rank1" "roundtrip"')
    out = checks.get("function")(None, spec, ctx)
    assert "wrong value at key(s) [1]['rank0'], [1]['rank1'], [1]['roundtrip']" in out.feedback, out.feedback
    assert "[0][" not in out.feedback
