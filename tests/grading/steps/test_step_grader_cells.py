"""Grader cells carry inputs, a nonce and a random handle, never an expected value; payloads need the nonce."""
import ast
import json

from grading.steps import grader_cells
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
    assert [c.label for c in p.extract] == ["answers", "checks", "provenance", "hidden cases"]  # the toy's function is `own`
    parts = [part for c in p.extract for part in c.parts]
    assert [(part.label, part.indices) for part in parts] == [
        ("check reward_function", (0, 1)), ("check reward_function, hidden cases", (2, 3, 4, 5))]  # public first
    hidden = p.extract[-1]
    assert hidden.step_limits == (3.5,) * 4  # timeout_s 2 + the grader's slack, one clock per call
    rest = p.rest_of(hidden, 1)  # an interrupted call ends its cell; the calls after it run in a new one
    assert rest is not None and rest.parts[0].indices == (3, 4, 5) and rest.labels == hidden.labels
    assert rest.parts[0].calls == hidden.parts[0].calls[1:] and rest.step_limits == (3.5,) * 3
    assert p.rest_of(hidden, 4) is None
    assert p.parts_of("reward_function") == [("check reward_function", (0, 1)),
                                             ("check reward_function, hidden cases", (2, 3, 4, 5))]


def test_one_cell_carries_every_check_s_public_calls_and_one_every_hidden_call():
    """A round trip per check cost more than most calls: ch07.wordle_reward's function checks share two
    cells, each check keeping its own label, time limit and call indices, and a re-run after an
    interrupted call picks up inside the right check."""
    from grading.exercise import Catalogue

    exercise = Catalogue().get("ch07.wordle_reward")
    reference = exercise.reference()
    p = plan(exercise, reference=reference)
    calls_cells = [c for c in p.extract if c.parts]
    assert [c.label for c in calls_cells] == ["checks", "hidden cases"]
    functions = [c.name for c in exercise.manifest.checks if c.kind == "function"]
    public, hidden = calls_cells
    order = {name: i for i, name in enumerate(functions)}
    for cell in calls_cells:  # manifest order within each cell; every function check in one or both
        assert [order[part.check] for part in cell.parts] == sorted(order[part.check] for part in cell.parts)
    assert {part.check for c in calls_cells for part in c.parts} == set(functions) and len(public.parts) > 1
    assert len(public.step_limits) == sum(part.steps for part in public.parts)
    for cell in calls_cells:
        assert len(cell.labels) == len(cell.parts) and all(label.startswith("check ") for label in cell.labels)
        sent = json.loads(next(ast.literal_eval(node.args[0]) for node in ast.walk(ast.parse(cell.source))
                               if isinstance(node, ast.Call) and ast.unparse(node.func) == "_tg_json.loads"))
        assert list(sent) == [part.check for part in cell.parts]
        for part in cell.parts:
            spec = reference["checks"][part.check]
            assert part.timeout_s == float(spec.get("timeout_s", 10.0))  # the grader's clock: timeout_s + 1.5 s
            # the kernel's own alarm waits past the grader's clock (issue 24): that clock knows whether the
            # host held the call back, and decides; the alarm only stops a call the clock let run on
            assert sent[part.check]["timeout_s"] == part.alarm_s > part.timeout_s + grader_cells.CALL_SLACK_S
            assert [c["args"] for c in sent[part.check]["calls"]] == [spec["calls"][i]["args"] for i in part.indices]
    cell, k = next((c, i) for c in calls_cells for i, part in enumerate(c.parts) if i and len(part.indices) >= 2)
    before = sum(part.steps for part in cell.parts[:k])
    rest = p.rest_of(cell, before + 1)  # interrupted in a later check's second call
    assert rest.parts[0].check == cell.parts[k].check and rest.parts[0].indices == cell.parts[k].indices[1:]
    assert rest.parts[1:] == cell.parts[k + 1 :]


def test_every_public_call_runs_before_any_hidden_input_reaches_the_kernel():
    """Learner state lives across calls: no cell before the first hidden one may carry a hidden input."""
    from grading.exercise import Catalogue

    exercise = Catalogue().get("ch07.wordle_reward")
    reference = exercise.reference()
    p = plan(exercise, reference=reference)
    labels = [c.labels for c in p.extract]
    first_hidden = next(i for i, cell in enumerate(labels) if any(label.endswith("hidden cases") for label in cell))
    assert all(label.endswith("hidden cases") for cell in labels[first_hidden:] for label in cell)
    before_labels = [label for cell in labels[:first_hidden] for label in cell]
    assert "check feedback_string" in before_labels  # its check comes after hidden_cases in the manifest
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


def test_the_released_template_is_public_text_so_its_words_survive_the_scrub():
    """ch07.wordle_reward's template self-check prints `num_guesses`, a key of hidden cases' expected results:
    the learner's own output kept "[hidden]" in its place until the template counted as public."""
    from grading.exercise import Catalogue
    from grading.result import CellReport, GradeResult, Status

    exercise = Catalogue().get("ch07.wordle_reward")
    p = plan(exercise, reference=exercise.reference())
    line = "5: <guess>crane</guess> num_guesses"
    assert line in p.public_text
    result = GradeResult(exercise_id=exercise.id, status=Status.GRADED, score=0, max_score=1,
                         cells=[CellReport(index=0, status="ok", outputs=[{"kind": "stdout", "text": line}])])
    result.scrub(p.scrub, "[hidden]", public=p.public_text)
    assert result.cells[0].outputs == [{"kind": "stdout", "text": line}]
    assert p.public_text.count("\n") > 10  # the sources as written, not escaped inside JSON


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
