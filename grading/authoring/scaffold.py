"""`titangrade exercises new chNN.name`: the two source files of a new exercise, already valid.

The scaffold builds and validates as it is (a sum-of-squares function with one public and two hidden
cases, the rules its notebook states with the cases that test each, and two typical mistakes, the fewest
an exercise may declare: tests/exercises/test_catalogue.py),
so an author starts from a green `validate` and edits from there.
"""

from __future__ import annotations

from pathlib import Path

from grading.authoring.master import AuthoringError
from grading.exercise import EXERCISE_ID

MANIFEST = """\
# Hand-written source: the manifest of {id} (docs/exercise-format.md). The master with the solution,
# the stubs and the hidden cases is reference/{id}/{name}.py; `titangrade exercises build` writes the rest.
id = "{id}"
chapter = {chapter}
notebook = "{name}.ipynb"
kernel_family = "light"
lane = "short"
seed = 1234

[title]
en = "TODO: the English title"
zh = "TODO：中文标题"

[limits]
cell_timeout_s = 30
run_timeout_s = 120
memory_mb = 2048

[resources]
world_size = 1
devices = 0
device_kinds = ["npu", "cuda", "cpu"]

[policy]
# What the learner writes and what they may use (docs/exercise-format.md#policy); `build` turns it into the
# policy cell the learner reads. Put in `forbid` every module whose code would answer this exercise (e.g.
# "verl", "exercises.lab.wordle"): the sandbox hides it and a graded function that reaches it scores 0.
# Required before you commit: at least one module in `forbid`, or a `lesson` when using a library is the point
# (tests/grading/test_grading_provenance.py); for this toy, "numpy" (its `square` and `sum` would answer it).
own = ["solve"]
forbid = []
allow = []

[[answers]]
name = "solve"
kind = "function"

[[checks]]
name = "public_cases"
answer = "solve"
kind = "function"
points = 4
title = {{ en = "The public example", zh = "公开示例" }}

[[checks]]
name = "hidden_cases"
answer = "solve"
kind = "function"
points = 6
title = {{ en = "Hidden cases", zh = "隐藏用例" }}
"""

MASTER = '''\
# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
#   language_info:
#     name: python
# ---

# %% [markdown]
# # 第 {chapter} 章 · 练习：TODO
#
# 实现 `solve(numbers)`：返回各数平方之和。负数同样要平方；空列表的和为 0。
#
# ---
#
# # Chapter {chapter} · Exercise: TODO
#
# Implement `solve(numbers)`: return the sum of the squares of the numbers. Negative numbers are squared too;
# an empty list sums to 0.

# %%
def solve(numbers):
    ### BEGIN SOLUTION
    return sum(x * x for x in numbers)
    ### STUB
    # """Return the sum of the squares of `numbers`."""
    # raise NotImplementedError("implement solve(numbers)")
    ### END SOLUTION

# %% [markdown]
# ## 自查（仅公开用例）
#
# ---
#
# ## Self-check (public cases only)

# %% tags=["self-check"]
from exercises.lab.selfcheck import show

show("solve([1, 2, 3])", lambda: solve([1, 2, 3]), 14)

# %% tags=["grader"]
# Grader only: never in the template or the solution.
CHECKS = {{
    "public_cases": {{
        "compare": "numeric",
        "feedback": {{"en": "Square each number before adding.", "zh": "先把每个数平方再相加。"}},
        "calls": [{{"args": [[1, 2, 3]], "public": True, "label": "solve([1, 2, 3])", "expect": 14,
                   "rules": ["square_sum"]}}],
    }},
    "hidden_cases": {{
        "compare": "numeric",
        "feedback": {{"en": "Square each number, negative ones too, before adding.",
                     "zh": "每个数（包括负数）都先平方再相加。"}},
        "calls": [{{"args": [[-2, 5]], "public": False, "expect": 29, "rules": ["negatives"]}},
                  {{"args": [[]], "public": False, "expect": 0, "rules": ["empty"]}}],
    }},
}}

RULES = {{  # the rules the notebook states (`stated`: its words), each tested by the calls naming it
    "public_cases": [
        {{"id": "square_sum", "stated": "return the sum of the squares of the numbers",
         "hint": {{"en": "Square each number before adding.", "zh": "先把每个数平方再相加。"}}}},
    ],
    "hidden_cases": [
        {{"id": "negatives", "stated": "Negative numbers are squared too",
         "hint": {{"en": "Square each number, negative ones too, before adding.",
                  "zh": "每个数（包括负数）都先平方再相加。"}}}},
        {{"id": "empty", "stated": "an empty list sums to 0",
         "hint": {{"en": "An empty list has no numbers: its sum of squares is 0.",
                  "zh": "空列表没有数，平方和为 0。"}}}},
    ],
}}

MISTAKES = [  # at least two typical mistakes, each a patch of the solution with the score it must get
    {{"name": "no_square", "score": 3.0, "fails": {{"hidden_cases": "Square each number"}},
     "patch": [{{"find": "x * x for x", "replace": "x for x"}}]}},
    {{"name": "drops_negatives", "score": 7.0, "fails": {{"hidden_cases": "negative ones too"}},
     "patch": [{{"find": "for x in numbers", "replace": "for x in numbers if x > 0"}}]}},
]
'''


def scaffold(exercise_id: str, *, exercises_root: Path, reference_root: Path) -> list[Path]:
    """Write exercises/chNN/<name>/exercise.toml and reference/<id>/<name>.py; refuse to overwrite."""
    if not EXERCISE_ID.match(exercise_id):
        raise AuthoringError(
            "<command line>",
            1,
            f"{exercise_id!r} is not an exercise id",
            "use chNN.snake_name, e.g. ch09.reward_shaping",
        )
    chapter_dir, name = exercise_id.split(".", 1)
    manifest = exercises_root / chapter_dir / name / "exercise.toml"
    master = reference_root / exercise_id / f"{name}.py"
    for path in (manifest, master):
        if path.exists():
            raise AuthoringError(
                path, 1, f"{exercise_id} already exists", "pick another name, or edit the existing files"
            )
    fields = {"id": exercise_id, "name": name, "chapter": int(chapter_dir[2:])}
    for path, text in ((manifest, MANIFEST), (master, MASTER)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.format(**fields), encoding="utf-8")
    return [manifest, master]
