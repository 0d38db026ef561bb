"""Grader cells carry inputs, a nonce and a random handle, never an expected value; payloads need the nonce."""
import json

from grading.steps.grader_cells import ANSWERS_MIME, plan, read_payload


def _expected_values(reference):
    for spec in reference["checks"].values():
        if "expected" in spec:
            yield spec["expected"]
        for call in spec.get("calls", []):
            if "expect" in call:
                yield call["expect"]


def test_no_expected_value_enters_a_grader_cell(toy_catalogue):
    exercise = toy_catalogue.get("ch05.toy")
    reference = exercise.reference()
    p = plan(exercise, reference=reference)
    sources = "\n".join([p.seed.source] + [c.source for c in p.extract])
    distinctive = ["varlen", "sync_weights", "vllm_rollout", "815965", "2e-07", "torchtitan"]
    for needle in distinctive:
        assert needle not in sources, needle
    assert json.dumps(reference["checks"]["reward_function"]["calls"][0]["args"]) in sources.replace(" ", "").replace(",", ", ")
    assert p.nonce in p.extract[0].source and p.nonce not in p.seed.source
    assert p.handle in p.seed.source and "1234" in p.seed.source
    assert list(dict.fromkeys(c.label for c in p.extract)) == ["answers", "check reward_function"]


def test_each_plan_has_fresh_nonce_and_handle(toy_catalogue):
    exercise = toy_catalogue.get("ch05.toy")
    a, b = (plan(exercise, reference=exercise.reference()) for _ in range(2))
    assert a.nonce != b.nonce and a.handle != b.handle


def test_read_payload_requires_matching_nonce():
    good = {"output_type": "display_data", "data": {ANSWERS_MIME: {"nonce": "n1", "answers": {"x": 1}}}, "metadata": {}}
    forged = {"output_type": "display_data", "data": {ANSWERS_MIME: {"nonce": "n0", "answers": {"x": 2}}}, "metadata": {}}
    text = {"output_type": "stream", "name": "stdout", "text": json.dumps({"nonce": "n1"})}
    assert read_payload([forged, text, good], nonce="n1")["answers"] == {"x": 1}
    assert read_payload([forged, text], nonce="n1") is None
