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
    labels = ["answers", "check reward_function", "provenance", "check reward_function, hidden cases"]
    assert list(dict.fromkeys(c.label for c in p.extract)) == labels  # the toy's function is `own`
    assert [c.call_indices for c in p.extract if c.check] == [(0, 1), (2, 3, 4, 5)]  # one cell per part, public first
    rest = p.rest_of(p.extract[-1], 1)  # an interrupted call ends its cell; the calls after it run in a new one
    assert rest is not None and rest.call_indices == (3, 4, 5) and rest.label == p.extract[-1].label
    assert rest.calls == p.extract[-1].calls[1:] and rest.budget_s == p.extract[-1].budget_s
    assert p.rest_of(p.extract[-1], 4) is None
    assert p.parts_of("reward_function") == [("check reward_function", (0, 1)),
                                             ("check reward_function, hidden cases", (2, 3, 4, 5))]


def test_every_public_call_runs_before_any_hidden_input_reaches_the_kernel():
    """Learner state lives across calls: no cell before the first hidden one may carry a hidden input."""
    from grading.exercise import Catalogue

    exercise = Catalogue().get("ch07.wordle_reward")
    reference = exercise.reference()
    p = plan(exercise, reference=reference)
    labels = [c.label for c in p.extract]
    first_hidden = next(i for i, label in enumerate(labels) if label.endswith("hidden cases"))
    assert all(label.endswith("hidden cases") for label in labels[first_hidden:])
    assert "check feedback_string" in labels[:first_hidden]  # its check comes after hidden_cases in the manifest
    calls = [c for spec in reference["checks"].values() for c in spec.get("calls", [])]
    public = {json.dumps(c["args"]) for c in calls if c.get("public")}
    hidden = [json.dumps(c["args"]) for c in calls if not c.get("public") and json.dumps(c["args"]) not in public]
    before = "\n".join(c.source for c in p.extract[:first_hidden]).replace("\\", "")
    assert hidden and not [h for h in hidden if h in before]
    assert p.nonce in p.scrub and p.handle in p.scrub


def test_scrub_list_skips_hidden_strings_that_are_public_anyway(toy_catalogue):
    exercise = toy_catalogue.get("ch05.toy")
    reference = json.loads(json.dumps(exercise.reference()))
    calls = reference["checks"]["reward_function"]["calls"]
    calls.append({"args": ["secret-input-xyz", "two greens, one yellow", "attn_type"], "expect": 0.0})
    p = plan(exercise, reference=reference)
    assert "secret-input-xyz" in p.scrub
    assert "two greens, one yellow" not in p.scrub  # it is a public case's label
    assert "attn_type" not in p.scrub  # mapping feedback names the expected keys by design


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
