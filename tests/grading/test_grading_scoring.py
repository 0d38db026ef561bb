"""score_checks / decide_status on hand-built executions (no kernel): sentinels, failures, status rules."""
from __future__ import annotations

import json

import pytest

from grading.result import CellReport, Status
from grading.scoring import decide_status, score_checks, total
from grading.steps.execute import Execution

_TAGS = ("__tensor__", "__set__", "__raised__", "__missing__", "__float__")


def wire(value):
    """A Python value as the kernel-side encoder sends it: every plain dict as __dict__ pairs."""
    if isinstance(value, list):
        return [wire(v) for v in value]
    if isinstance(value, dict):
        if (len(value) == 1 and next(iter(value)) in _TAGS) or set(value) == {"__repr__", "__type__"}:
            return value
        return {"__dict__": [[k, wire(v)] for k, v in value.items()]}
    return value


def _solution_answers(**overrides):
    answers = {
        "answer_int": 42,
        "tt_config": {"data_parallel_shard_size": 2, "context_parallel_size": 1, "attn_type": "varlen",
                      "max_seq_len": 5120},
        "warmup_lrs": [2e-7, 4e-7, 6e-7, 8e-7, 1e-6],
        "mesh": {"__tensor__": {"dtype": "float64", "shape": [1, 2], "data": [[0.0, 0.0]]}},
        "phases": ["rollout", "reward", "advantage", "update", "sync_weights"],
        "unchanged": {"__set__": ["agent_loop", "grpo", "reward", "vllm_rollout"]},
        "partial_reward": {"__repr__": "<function>", "__type__": "function"},
        "run_dir": {"metrics": [{"step": i + 1, "loss": v, "lr": 0.1} for i, v in enumerate([16.0, 10.24, 6.5536])],
                    "run": {"model_engine": "torchtitan", "world_size": 1, "total_steps": 3},
                    "files": ["metrics.jsonl", "run.json"]},
        "seeded": [815965, 462141, 122526, 486191],
    }
    answers.update(overrides)
    answers = {k: wire(v) for k, v in answers.items()}
    public, hidden = [0.5, 0.0], [1.0, 0.8, 0.5, {"__raised__": {"type": "ValueError", "message": "", "bases": []}}]
    return Execution(cells=[CellReport(index=0, status="ok")],
                     payloads={"answers": {"nonce": "n", "answers": answers, "calls": {}},
                               "check reward_function": {"nonce": "n", "answers": {},
                                                         "calls": {"reward_function": public}},
                               "check reward_function, hidden cases": {"nonce": "n", "answers": {},
                                                                       "calls": {"reward_function": hidden}}})


def by_name(results):
    return {c.name: c for c in results}


def test_all_right_is_full_marks(toy_catalogue):
    results = score_checks(toy_catalogue.get("ch05.toy"), _solution_answers())
    assert total(results) == 22.0 and all(c.passed for c in results)


def test_sentinel_answers_get_specific_feedback(toy_catalogue):
    execution = _solution_answers(
        answer_int={"__missing__": True},
        tt_config={"__raised__": {"type": "NameError", "message": "name 'x' is not defined"}},
        warmup_lrs={"__repr__": "<generator object>", "__type__": "builtins.generator"},
        run_dir={"metrics": 5, "run": {}, "files": []})
    results = by_name(score_checks(toy_catalogue.get("ch05.toy"), execution, lang="en"))
    assert "`answer_int` is not defined" in results["exact_int"].feedback
    assert "reading `tt_config` failed: NameError" in results["config_mapping"].feedback
    assert "unsupported type builtins.generator" in results["warmup_numeric"].feedback
    assert "could not be compared" in results["training_trace"].feedback
    assert total(list(results.values())) == 22.0 - 1 - 4 - 2 - 5


def test_lost_extraction_cells_explain_themselves(toy_catalogue):
    execution = _solution_answers()
    del execution.payloads["check reward_function"]
    execution.extract_failures["check reward_function"] = "the kernel died while checking answers (check x)"
    results = by_name(score_checks(toy_catalogue.get("ch05.toy"), execution))
    assert results["reward_function"].score == 0 and "kernel died" in results["reward_function"].feedback
    assert results["exact_int"].passed
    status, message = decide_status(execution, list(results.values()))
    assert status is Status.ERROR and "kernel died" in message


@pytest.mark.parametrize("cell_status,expected", [("ok", Status.GRADED), ("error", Status.ERROR),
                                                  ("timeout", Status.ERROR), ("skipped", Status.ERROR)])
def test_status_follows_the_cells(cell_status, expected):
    execution = Execution(cells=[CellReport(index=0, status=cell_status, message="m" if cell_status != "ok" else "")])
    assert decide_status(execution, [])[0] is expected


def test_truncation_alone_keeps_graded_but_is_mentioned():
    execution = Execution(cells=[CellReport(index=0, status="ok")], messages=["output of cell 0 truncated at 64 KB"])
    assert decide_status(execution, []) == (Status.GRADED, "output of cell 0 truncated at 64 KB")


def test_partial_scores_round_and_pass_only_when_complete(toy_catalogue):
    execution = _solution_answers(phases=["rollout", "reward", "x", "update", "sync_weights"])
    results = by_name(score_checks(toy_catalogue.get("ch05.toy"), execution))
    assert results["phase_order"].score == pytest.approx(1.6) and not results["phase_order"].passed
    assert json.dumps([c.to_dict() for c in results.values()])  # serialisable as-is


def test_forged_markers_fail_only_their_check_with_a_reason(toy_catalogue):
    execution = _solution_answers()
    execution.payloads["answers"]["answers"]["tt_config"] = {"__dict__": 5}
    execution.payloads["answers"]["answers"]["mesh"] = {"__tensor__": {"dtype": "U100000000", "shape": [9],
                                                                       "data": [""] * 9}}
    execution.payloads["check reward_function, hidden cases"]["calls"]["reward_function"][0] = {"__float__": "x"}
    results = by_name(score_checks(toy_catalogue.get("ch05.toy"), execution))
    for name in ("config_mapping", "mesh_shape", "reward_function"):
        assert results[name].score == 0 and "returned a value that could not be compared" in results[name].feedback
    assert results["exact_int"].passed and results["phase_order"].passed
    assert decide_status(execution, list(results.values()))[0] is Status.GRADED


def test_answers_over_the_run_cap_are_the_learners_fault_and_reported(toy_catalogue):
    big = ["x" * 1000] * 20_000  # ~20 MB decoded, over the 16 MB run cap
    execution = _solution_answers(phases=big)
    results = by_name(score_checks(toy_catalogue.get("ch05.toy"), execution, lang="zh"))
    assert results["phase_order"].score == 0 and "16 MB" in results["phase_order"].feedback
    assert results["exact_int"].passed and "answer limit" in execution.limits_hit
    status, message = decide_status(execution, list(results.values()), lang="zh")
    assert status is Status.ERROR and "16 MB" in message


def test_call_results_that_do_not_match_the_calls_made_are_uncomparable(toy_catalogue):
    execution = _solution_answers()
    execution.payloads["check reward_function"]["calls"]["reward_function"] = [0.5]  # two calls were made
    results = by_name(score_checks(toy_catalogue.get("ch05.toy"), execution))
    assert results["reward_function"].score == 0 and "could not be compared" in results["reward_function"].feedback


def test_repeated_problems_are_counted_and_alike_cells_share_a_line():
    cells = [CellReport(index=i, status="error", message=f"cell {i} raised ValueError: same") for i in range(50)]
    cells.append(CellReport(index=50, status="error", message="cell 50 raised KeyError: 'k'"))
    execution = Execution(cells=cells, messages=["output of cell 3 truncated at 64 KB"] + ["same note"] * 3)
    status, message = decide_status(execution, [])
    assert status is Status.ERROR
    assert message == ("cell 0 raised ValueError: same (and 49 more alike); cell 50 raised KeyError: 'k'; "
                       "output of cell 3 truncated at 64 KB; same note (x3)")
    many = Execution(cells=[CellReport(index=0, status="error", message=f"error {i}: kind {i}") for i in range(30)])
    assert decide_status(many, [])[1].endswith("and 18 more problems")


def test_a_check_that_finds_its_reference_broken_is_a_grader_fault_not_the_learners_zero(toy_catalogue, monkeypatch):
    """A GraderFault raised inside a check passes through scoring (not_gradable, retried by the service);
    any other exception there is the learner's uncomparable value."""
    from grading import checks as check_kinds
    from grading.errors import GraderFault

    def broken_reference(answer, spec, ctx):
        raise GraderFault("band for loss: lower has 3 steps but upper has 2", retryable=False)

    monkeypatch.setitem(check_kinds.REGISTRY, "metric_trace", broken_reference)
    with pytest.raises(GraderFault, match="lower has 3 steps"):
        score_checks(toy_catalogue.get("ch05.toy"), _solution_answers())
