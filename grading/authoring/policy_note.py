"""The learner-facing policy cell: what the learner writes and what they may use, from `[policy]`.

`exercises build` puts this bilingual markdown cell right after the title cell of every template,
solution and mistake fixture, so the notebook says exactly what the grader checks
(docs/exercise-format.md#policy). It is generated, never hand-written: a manifest edit changes it.
"""

from __future__ import annotations

from grading.exercise import Manifest

# Plain words for the modules the course's manifests name; any other module is shown by its name.
PLAIN: dict[str, tuple[str, str]] = {
    "exercises": ("the course package", "课程包"),
    "exercises.lab": ("the course runtime", "课程运行时"),
    "exercises.lab.wordle": ("the lab's Wordle reward module", "课程运行时的 Wordle 奖励模块"),
    "exercises.lab.grpo": ("the lab's GRPO maths module", "课程运行时的 GRPO 计算模块"),
    "exercises.lab.recipe": ("the lab's recipe launcher", "课程运行时的 recipe 启动器"),
    "exercises.lab.config": ("the lab's training config", "课程运行时的训练配置"),
    "exercises.lab.metrics": ("the lab's metric computation", "课程运行时的指标计算"),
    "exercises.lab.metrics_format": ("the lab's metrics record format", "课程运行时的指标记录格式"),
    "exercises.lab.weight_sync": ("the lab's weight sync", "课程运行时的权重同步"),
    "exercises.lab.steps": ("the lab's GRPO step phases", "课程运行时的 GRPO 单步流程"),
    "exercises.lab.checkpoint": ("the lab's checkpoint conversion", "课程运行时的检查点转换"),
    "exercises.lab.hf_model": ("the lab's plain-torch Qwen3", "课程运行时的纯 torch Qwen3"),
    "exercises.lab.model": ("the lab's tiny torchtitan Qwen3", "课程运行时的小型 torchtitan Qwen3"),
    "exercises.lab.parallel": ("the lab's mesh and FSDP2 setup", "课程运行时的网格与 FSDP2 设置"),
    "exercises.lab.selfcheck": ("the notebook self-check helper", "notebook 自检助手"),
    "torch": ("PyTorch", "PyTorch"),
}


def _module(name: str, zh: bool) -> str:
    plain = PLAIN.get(name)
    if not plain:
        return f"`{name}`"
    return f"{plain[1]}（`{name}`）" if zh else f"{plain[0]} (`{name}`)"


def _names(names: list[str] | tuple[str, ...], sep: str) -> str:
    return sep.join(f"`{n}`" for n in names)


def policy_markdown(manifest: Manifest) -> str:
    """The cell's source: Chinese, a rule, then English (the notebooks' bilingual layout)."""
    policy = manifest.policy
    own = manifest.own
    values = [a.name for a in manifest.answers if a.kind == "value"]
    runs = [a.name for a in manifest.answers if a.kind == "training_run"]

    zh = ["**你要写的与可以使用的**", ""]
    if own:
        zh.append(f"- 你自己写的函数：{_names(own, '、')}：必须在本 notebook 的单元格中定义（可以写自己的辅助函数）。")
    if values:
        zh.append(f"- 你算出的值：{_names(values, '、')}。")
    if runs:
        zh.append(f"- 你启动的训练运行：{_names(runs, '、')}。")
    if policy.forbid:
        rule = "这些模块在评分内核中无法导入。"
        if own:
            rule += "被评分的函数若（直接或经由你的辅助函数）调用它们的代码，该函数对应的任务得 0 分。"
        if values:
            rule += "导入它们的 notebook 的值答案作废。"
        zh.append(f"- 不可使用：{'、'.join(_module(m, True) for m in policy.forbid)}。{rule}")
    else:
        zh.append("- 不可使用：本练习没有禁用的模块。")
    allowed = [_module(m, True) for m in policy.allow] + ["Python 标准库"]
    zh.append(f"- 可以使用：{'、'.join(allowed)}。")
    if policy.lesson:
        zh.append(f"- {policy.lesson.get('zh')}")

    en = ["**What you write and what you may use**", ""]
    if own:
        en.append(
            f"- Functions you write yourself: {_names(own, ', ')}, defined in this notebook's cells "
            "(your own helpers are fine)."
        )
    if values:
        en.append(f"- Values you compute: {_names(values, ', ')}.")
    if runs:
        en.append(f"- Training runs you launch: {_names(runs, ', ')}.")
    if policy.forbid:
        rule = "They cannot be imported in the grading kernel."
        if own:
            rule += " A graded function that calls their code (directly or through your helpers) scores 0 on its tasks."
        if values:
            rule += " A notebook that imports one loses its value answers."
        en.append(f"- Off limits: {', '.join(_module(m, False) for m in policy.forbid)}. {rule}")
    else:
        en.append("- Off limits: nothing; this exercise forbids no module.")
    allowed = [_module(m, False) for m in policy.allow] + ["Python's standard library"]
    en.append(f"- You may use: {', '.join(allowed)}.")
    if policy.lesson:
        en.append(f"- {policy.lesson.get('en')}")
    return "\n".join([*zh, "", "---", "", *en])
