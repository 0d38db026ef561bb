"""The message catalogue: every text a learner, an author or a client reads, keyed, in English and Chinese.

One format for every namespace: a `Catalogue` maps a key to a `Message` (its `en` and `zh` text, with the
same named `{placeholders}`). The engine's feedback (`ENGINE`) and the authoring policy cell (`POLICY`,
`POLICY_MODULES`) live here; the service adds its pages' words and its errors in the same format
(service/messages.py). Check titles and hints are not here: they come from manifests and references.
tests/grading/test_grading_messages.py checks that every key has both languages with the same placeholders.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from grading.steps.limit_output import CELL_FLOOD_MESSAGES, RUN_MESSAGES


@dataclass(frozen=True, slots=True)
class Message:
    """One text in both languages; once filled (`Catalogue.fill`), the text a reader gets in theirs."""

    en: str
    zh: str

    def text(self, lang: str = "en") -> str:
        """The Chinese text for any zh* language when there is one, else the English (the fallback)."""
        return self.zh if lang.startswith("zh") and self.zh else self.en

    def placeholders(self, lang: str) -> set[str]:
        text = self.zh if lang == "zh" else self.en
        return {name for _, name, _, _ in string.Formatter().parse(text) if name}


class Catalogue:
    """A namespace of messages by key."""

    def __init__(self, namespace: str, messages: Mapping[str, Message]) -> None:
        self.namespace = namespace
        self.messages = dict(messages)

    def __contains__(self, key: object) -> bool:
        return key in self.messages

    def __getitem__(self, key: str) -> Message:
        return self.messages[key]

    def text(self, key: str, lang: str = "en", /, **params: Any) -> str:
        """Message `key` in `lang` (English fallback), its placeholders filled from `params`."""
        return self.messages[key].text(lang).format(**params)

    def fill(self, key: str, /, **params: Any) -> Message:
        """Message `key` filled in both languages, for a reader whose language is known only later."""
        message = self.messages[key]
        return Message(en=message.en.format(**params), zh=message.zh.format(**params))

    def problems(self) -> list[str]:
        """What is wrong with this catalogue: a key without both texts, or whose two texts differ in placeholders."""
        found = []
        for key, message in self.messages.items():
            if not (message.en and message.zh):
                found.append(f"{self.namespace}.{key}: give both an en and a zh text")
            elif message.placeholders("en") != message.placeholders("zh"):
                found.append(
                    f"{self.namespace}.{key}: en has placeholders {sorted(message.placeholders('en'))}, "
                    f"zh has {sorted(message.placeholders('zh'))}; use the same names in both"
                )
        return found

    def as_dict(self) -> dict[str, dict[str, str]]:
        """Every message as `{key: {"en": .., "zh": ..}}` (plain data, e.g. for JSON)."""
        return {key: {"en": m.en, "zh": m.zh} for key, m in self.messages.items()}


ENGINE = Catalogue(
    "engine",
    {
        # run-level
        "cell_error": Message(en="cell {index} raised {error}", zh="第 {index} 个代码单元抛出 {error}"),
        "cell_timeout": Message(
            en="cell {index} exceeded the {limit_s:g} s cell time limit and was interrupted",
            zh="第 {index} 个代码单元超过 {limit_s:g} 秒的单元时限，已被中断",
        ),
        "run_timeout": Message(
            en="the notebook exceeded the {limit_s:g} s run time limit; cells from {index} on did not run",
            zh="笔记本超过 {limit_s:g} 秒的总时限；从第 {index} 个代码单元起未运行",
        ),
        "kernel_died": Message(
            en="the kernel died in cell {index}; the other cells were re-run without it",
            zh="内核在第 {index} 个代码单元中崩溃；其余单元已在新内核中重新运行",
        ),
        "memory_killed": Message(
            en="cell {index} went over the run's {limit_mb} MB memory limit and the kernel was killed; "
            "the other cells were re-run without it",
            zh="第 {index} 个代码单元超出本次运行 {limit_mb} MB 的内存上限，内核被终止；其余单元已在新内核中重新运行",
        ),
        "memory_limit_cell": Message(
            en="cell {index} went over the run's {limit_mb} MB memory limit; a process it started was killed",
            zh="第 {index} 个代码单元超出本次运行 {limit_mb} MB 的内存上限，其启动的一个进程被终止",
        ),
        "kernel_hung": Message(
            en="cell {index} ignored the interrupt after its time limit; the other cells were re-run without it",
            zh="第 {index} 个代码单元超时后无法中断；其余单元已在新内核中重新运行",
        ),
        "kernel_lost": Message(
            en="cell {index} killed or hung the kernel again after two restarts; later cells and the "
            "answers could not be read",
            zh="两次重启后第 {index} 个代码单元再次使内核崩溃或卡死；之后的单元和答案均无法读取",
        ),
        "kernel_died_checking": Message(
            en="the kernel died while checking answers ({where})", zh="检查答案时内核崩溃（{where}）"
        ),
        "checking_timeout": Message(
            en="checking answers exceeded its time limit ({where})", zh="检查答案超时（{where}）"
        ),
        "answers_unreadable": Message(
            en="the grader could not read the answers ({where}); do not redefine or delete names starting with _tg_",
            zh="评分器无法读取答案（{where}）；请勿重定义或删除以 _tg_ 开头的名称",
        ),
        "run_output": Message(
            en="the notebook's output passed the run's output limit; cells from {index} on did not run",
            zh="笔记本的输出超过整次运行的输出上限；从第 {index} 个代码单元起未运行",
        ),
        "output_flood": Message(  # a flood of bytes or of messages: the caps are the grader's, in limit_output.py
            en="cell {index} sent more output than the grader accepts (output limit: your notebook may send at "
            f"most {CELL_FLOOD_MESSAGES:,} output messages per cell and {RUN_MESSAGES:,} per run; print less often, "
            "e.g. not with flush=True in a loop); the other cells were re-run without it",
            zh="第 {index} 个代码单元发送的输出超过评分器的上限（输出限制：每个单元最多 "
            f"{CELL_FLOOD_MESSAGES} 条输出消息，整次运行最多 {RUN_MESSAGES} 条；请减少打印，例如不要在循环中使用 "
            "flush=True）；其余单元已在新内核中重新运行",
        ),
        "kernel_message_unreadable": Message(
            en="cell {index}: the kernel sent {what}, which the grader cannot read",
            zh="第 {index} 个代码单元：内核发送了评分器无法读取的消息（{what}）",
        ),
        "output_truncated": Message(
            en="output of cell {index} truncated at {limit_kb} KB",
            zh="第 {index} 个代码单元的输出在 {limit_kb} KB 处被截断",
        ),
        "output_truncated_marker": Message(
            en="\n... [output truncated by the grader at {limit_kb} KB]\n",
            zh="\n... [输出超过 {limit_kb} KB，已被评分器截断]\n",
        ),
        "answers_too_large": Message(
            en="the answers exceeded the {limit_mb} MB answer limit; the checks that read them scored 0",
            zh="答案超过 {limit_mb} MB 的答案上限；读取这些答案的检查记 0 分",
        ),
        "repeated": Message(en="{message} (x{count})", zh="{message}（{count} 次）"),
        "alike_cells": Message(en="{message} (and {count} more alike)", zh="{message}（另有 {count} 处相同）"),
        "more_problems": Message(en="and {count} more problems", zh="另有 {count} 个问题"),
        "redacted": Message(en="[hidden]", zh="[已隐藏]"),
        "not_gradable": Message(
            en="this submission could not be graded because of a grader problem ({reason}); "
            "it was not scored and may be retried",
            zh="评分器出现问题（{reason}），本次提交未评分，可重试",
        ),
        # check-level
        "passed": Message(en="correct", zh="正确"),
        "answer_missing": Message(
            en="`{name}` is not defined; run the cell that defines it and keep its name",
            zh="未定义 `{name}`；请运行定义它的单元并保持名称不变",
        ),
        "answer_raised": Message(en="reading `{name}` failed: {error}", zh="读取 `{name}` 失败：{error}"),
        "answer_unset": Message(en="`{name}` was never set: {why}", zh="`{name}` 从未被赋值：{why}"),
        "answer_launcher_raised": Message(
            en="`{name}` was never set: the launcher cell, re-run by the grader after your cells, raised {error}",
            zh="`{name}` 从未被赋值：评分程序在你的单元格之后重新运行的启动单元格抛出了 {error}",
        ),
        "answer_opaque": Message(en="`{name}` has an unsupported type {type}", zh="`{name}` 的类型 {type} 不受支持"),
        "answer_uncomparable": Message(
            en="`{name}` returned a value that could not be compared with the expected answer "
            "({error}); return plain numbers, strings, lists, dicts or tensors",
            zh="`{name}` 返回的值无法与期望答案比较（{error}）；请返回数字、字符串、列表、字典或张量",
        ),
        "answer_too_large": Message(
            en="`{name}` is too large to check: the answers of one run may hold at most "
            "{limit_mb} MB; return a smaller value",
            zh="`{name}` 太大，无法检查：一次运行的答案最多 {limit_mb} MB；请返回更小的值",
        ),
        "wrong_value": Message(en="the value is not the expected one", zh="取值不正确"),
        "wrong_type": Message(en="expected a {expected}, got {got}", zh="应为 {expected}，实际为 {got}"),
        "numeric_off": Message(
            en="{count} of {total} numbers are outside the tolerance (rtol={rtol:g}, atol={atol:g})",
            zh="{total} 个数值中有 {count} 个超出容差（rtol={rtol:g}，atol={atol:g}）",
        ),
        "structure_differs": Message(
            en="the structure differs (length, keys or nesting)", zh="结构不一致（长度、键或嵌套）"
        ),
        "not_finite": Message(en="the answer contains NaN or Inf", zh="答案包含 NaN 或 Inf"),
        "mapping_wrong": Message(
            en="{count} of {total} expected keys have a wrong value", zh="{total} 个应有的键中有 {count} 个取值错误"
        ),
        "mapping_missing": Message(
            en="{count} of {total} expected keys are missing", zh="{total} 个应有的键中缺少 {count} 个"
        ),
        "mapping_extra": Message(en="{count} key(s) are not expected", zh="有 {count} 个多余的键"),
        # keys named where the notebook states them (grading/checks/keys.py)
        "mapping_wrong_keys": Message(
            en="{count} of {total} expected keys have a wrong value: {keys}",
            zh="{total} 个应有的键中有 {count} 个取值错误：{keys}",
        ),
        "mapping_missing_keys": Message(
            en="{count} of {total} expected keys are missing: {keys}", zh="{total} 个应有的键中缺少 {count} 个：{keys}"
        ),
        "mapping_extra_keys": Message(en="{count} key(s) are not expected: {keys}", zh="有 {count} 个多余的键：{keys}"),
        "keys_wrong": Message(en="wrong value at key(s) {keys}", zh="键 {keys} 的取值错误"),
        "keys_missing": Message(en="missing key(s) {keys}", zh="缺少键 {keys}"),
        "keys_extra": Message(en="unexpected key(s) {keys}", zh="多余的键 {keys}"),
        "keys_and_more": Message(en="{keys} and {count} more", zh="{keys} 及另外 {count} 个"),
        "shape_wrong": Message(en="shape {got} is not the expected shape", zh="形状 {got} 不正确"),
        "sequence_wrong": Message(
            en="{count} of {total} positions are wrong (positions {positions})",
            zh="{total} 个位置中有 {count} 个错误（位置 {positions}）",
        ),
        "sequence_length": Message(
            en="length {got} differs from the expected length {expected}", zh="长度 {got} 与期望长度 {expected} 不同"
        ),
        "set_result": Message(
            en="{missing} expected element(s) missing, {extra} unexpected element(s)",
            zh="缺少 {missing} 个应有元素，多出 {extra} 个元素",
        ),
        "function_public_fail": Message(en="{label}: {call} returned {got}", zh="{label}：{call} 返回了 {got}"),
        "function_public_raised": Message(en="{label}: {call} raised {error}", zh="{label}：{call} 抛出 {error}"),
        "function_should_raise": Message(
            en="{label}: {call} should raise {expected}, got {got}",
            zh="{label}：{call} 应抛出 {expected}，实际为 {got}",
        ),
        "function_hidden_fail": Message(
            en="{failed} of {total} hidden cases failed", zh="{total} 个隐藏用例中有 {failed} 个未通过"
        ),
        "function_missing": Message(en="function `{name}` is not defined", zh="未定义函数 `{name}`"),
        "function_not_run": Message(
            en="the checks of `{name}` did not run (see the run message)", zh="`{name}` 的检查未能运行（见运行信息）"
        ),
        "trace_failed_parts": Message(en="failed parts: {parts}", zh="未通过的部分：{parts}"),
        "trace_part": Message(en="{part}: {detail}", zh="{part}：{detail}"),
        "trace_no_run": Message(en="no training run to check: {why}", zh="没有可检查的训练运行：{why}"),
        "trace_missing_metric": Message(
            en="{metric} missing at {count} of {total} steps", zh="{total} 步中有 {count} 步缺少 {metric}"
        ),
        "trace_steps": Message(
            en="{got} steps recorded, expected {expected}", zh="记录了 {got} 步，应为 {expected} 步"
        ),
        "trace_not_finite": Message(en="{metric} is NaN/Inf at steps {steps}", zh="{metric} 在第 {steps} 步为 NaN/Inf"),
        "trace_length": Message(
            en="{metric} has {got} values, expected {expected}", zh="{metric} 有 {got} 个值，应为 {expected} 个"
        ),
        "trace_differs": Message(
            en="{metric} differs from the reference at steps {steps}", zh="{metric} 在第 {steps} 步与参考值不一致"
        ),
        "trace_out_of_band": Message(
            en="{metric} leaves the accepted band at steps {steps}", zh="{metric} 在第 {steps} 步超出允许范围"
        ),
        "band_not_recorded": Message(
            en="No reference band is recorded for {profile} runs on {device} with {dtype}, so the band comparison is "
            "not graded on this run and its points are not counted (the other checks' share stands in).",
            zh="尚未记录 {profile} 在 {device}（{dtype}）上运行的参考范围，因此本次运行不评判范围比较，"
            "该部分分数不计入（按其余检查的得分率折算）。",
        ),
        "band_wrong_profile": Message(
            en="run.json names profile {profile}, but this exercise's band is recorded for {expected}",
            zh="run.json 写的配置是 {profile}，但本练习的参考范围只为 {expected} 记录",
        ),
        "band_wrong_device": Message(
            en="run.json says the run used {device}, but this grading was given {granted}",
            zh="run.json 说运行使用了 {device}，但本次评分分配的是 {granted}",
        ),
        "band_device_unstated": Message(
            en="run.json does not say the device and dtype the run used (the course runtime writes both)",
            zh="run.json 没有写明运行使用的设备与 dtype（课程运行时会写出这两项）",
        ),
        "band_wrong_dtype": Message(
            en="run.json says the run used {dtype} on {device}; the band for {device} is recorded in {recorded}",
            zh="run.json 说运行在 {device} 上使用 {dtype}；{device} 的参考范围按 {recorded} 记录",
        ),
        "trace_not_monotone": Message(
            en="{metric} is not {direction} (steps {steps})", zh="{metric} 不满足 {direction}（第 {steps} 步）"
        ),
        "trace_out_of_bounds": Message(
            en="{metric} is outside its bounds at steps {steps}", zh="{metric} 在第 {steps} 步超出界限"
        ),
        "trace_run_wrong": Message(en="run.json {key} is wrong", zh="run.json 中 {key} 不正确"),
        "trace_run_missing": Message(en="run.json has no {key}", zh="run.json 缺少 {key}"),
        "trace_file_present": Message(en="{path} should not exist", zh="不应存在 {path}"),
        "trace_file_absent": Message(en="nothing matches {pattern}", zh="没有与 {pattern} 匹配的文件"),
        "hint": Message(en="Hint: {hint}", zh="提示：{hint}"),
    },
)

# The learner-facing policy cell (grading/authoring/policy_note.py). The Chinese sentences of a rule run on
# with no space and the English ones with one, so the English follow-on sentences start with a space.
POLICY = Catalogue(
    "policy",
    {
        "heading": Message(en="**What you write and what you may use**", zh="**你要写的与可以使用的**"),
        "own": Message(
            en="- Functions you write yourself: {names}, defined in this notebook's cells (your own helpers are fine).",
            zh="- 你自己写的函数：{names}：必须在本 notebook 的单元格中定义（可以写自己的辅助函数）。",
        ),
        "values": Message(en="- Values you compute: {names}.", zh="- 你算出的值：{names}。"),
        "runs": Message(en="- Training runs you launch: {names}.", zh="- 你启动的训练运行：{names}。"),
        "forbid_import": Message(
            en="They cannot be imported in the grading kernel.", zh="这些模块在评分内核中无法导入。"
        ),
        "forbid_own": Message(
            en=" A graded function that calls their code (directly or through your helpers) scores 0 on its tasks.",
            zh="被评分的函数若（直接或经由你的辅助函数）调用它们的代码，该函数对应的任务得 0 分。",
        ),
        "forbid_values": Message(
            en=" A notebook that imports one loses its value answers.", zh="导入它们的 notebook 的值答案作废。"
        ),
        "off_limits": Message(en="- Off limits: {modules}. {rule}", zh="- 不可使用：{modules}。{rule}"),
        "off_limits_none": Message(
            en="- Off limits: nothing; this exercise forbids no module.", zh="- 不可使用：本练习没有禁用的模块。"
        ),
        "allowed": Message(en="- You may use: {modules}.", zh="- 可以使用：{modules}。"),
        "stdlib": Message(en="Python's standard library", zh="Python 标准库"),
        "lesson": Message(en="- {lesson}", zh="- {lesson}"),
        "list_sep": Message(en=", ", zh="、"),
        "module": Message(en="{plain} (`{name}`)", zh="{plain}（`{name}`）"),
    },
)

# Plain words for the modules the course's manifests name (keys are module names); any other module is
# shown by its name.
POLICY_MODULES = Catalogue(
    "policy_modules",
    {
        "exercises": Message(en="the course package", zh="课程包"),
        "exercises.lab": Message(en="the course runtime", zh="课程运行时"),
        "exercises.lab.wordle": Message(en="the lab's Wordle reward module", zh="课程运行时的 Wordle 奖励模块"),
        "exercises.lab.grpo": Message(en="the lab's GRPO maths module", zh="课程运行时的 GRPO 计算模块"),
        "exercises.lab.recipe": Message(en="the lab's recipe launcher", zh="课程运行时的 recipe 启动器"),
        "exercises.lab.config": Message(en="the lab's training config", zh="课程运行时的训练配置"),
        "exercises.lab.metrics": Message(en="the lab's metric computation", zh="课程运行时的指标计算"),
        "exercises.lab.metrics_format": Message(en="the lab's metrics record format", zh="课程运行时的指标记录格式"),
        "exercises.lab.weight_sync": Message(en="the lab's weight sync", zh="课程运行时的权重同步"),
        "exercises.lab.steps": Message(en="the lab's GRPO step phases", zh="课程运行时的 GRPO 单步流程"),
        "exercises.lab.checkpoint": Message(en="the lab's checkpoint conversion", zh="课程运行时的检查点转换"),
        "exercises.lab.hf_model": Message(en="the lab's plain-torch Qwen3", zh="课程运行时的纯 torch Qwen3"),
        "exercises.lab.model": Message(en="the lab's tiny torchtitan Qwen3", zh="课程运行时的小型 torchtitan Qwen3"),
        "exercises.lab.parallel": Message(en="the lab's mesh and FSDP2 setup", zh="课程运行时的网格与 FSDP2 设置"),
        "exercises.lab.selfcheck": Message(en="the notebook self-check helper", zh="notebook 自检助手"),
        "torch": Message(en="PyTorch", zh="PyTorch"),
    },
)

CATALOGUES = (ENGINE, POLICY, POLICY_MODULES)  # the engine's namespaces (the service adds its own)
