"""Engine messages in English and Chinese. Check titles and hints come from manifests/references."""

from __future__ import annotations

from typing import Any

from grading.steps.limit_output import CELL_FLOOD_MESSAGES, RUN_MESSAGES

MESSAGES: dict[str, dict[str, str]] = {
    # run-level
    "cell_error": {"en": "cell {index} raised {error}", "zh": "第 {index} 个代码单元抛出 {error}"},
    "cell_timeout": {
        "en": "cell {index} exceeded the {limit_s:g} s cell time limit and was interrupted",
        "zh": "第 {index} 个代码单元超过 {limit_s:g} 秒的单元时限，已被中断",
    },
    "run_timeout": {
        "en": "the notebook exceeded the {limit_s:g} s run time limit; cells from {index} on did not run",
        "zh": "笔记本超过 {limit_s:g} 秒的总时限；从第 {index} 个代码单元起未运行",
    },
    "kernel_died": {
        "en": "the kernel died in cell {index}; the other cells were re-run without it",
        "zh": "内核在第 {index} 个代码单元中崩溃；其余单元已在新内核中重新运行",
    },
    "memory_killed": {
        "en": "cell {index} went over the run's {limit_mb} MB memory limit and the kernel was killed; "
        "the other cells were re-run without it",
        "zh": "第 {index} 个代码单元超出本次运行 {limit_mb} MB 的内存上限，内核被终止；其余单元已在新内核中重新运行",
    },
    "memory_limit_cell": {
        "en": "cell {index} went over the run's {limit_mb} MB memory limit; a process it started was killed",
        "zh": "第 {index} 个代码单元超出本次运行 {limit_mb} MB 的内存上限，其启动的一个进程被终止",
    },
    "kernel_hung": {
        "en": "cell {index} ignored the interrupt after its time limit; the other cells were re-run without it",
        "zh": "第 {index} 个代码单元超时后无法中断；其余单元已在新内核中重新运行",
    },
    "kernel_lost": {
        "en": "cell {index} killed or hung the kernel again after two restarts; later cells and the "
        "answers could not be read",
        "zh": "两次重启后第 {index} 个代码单元再次使内核崩溃或卡死；之后的单元和答案均无法读取",
    },
    "kernel_died_checking": {
        "en": "the kernel died while checking answers ({where})",
        "zh": "检查答案时内核崩溃（{where}）",
    },
    "checking_timeout": {"en": "checking answers exceeded its time limit ({where})", "zh": "检查答案超时（{where}）"},
    "answers_unreadable": {
        "en": "the grader could not read the answers ({where}); do not redefine or delete names starting with _tg_",
        "zh": "评分器无法读取答案（{where}）；请勿重定义或删除以 _tg_ 开头的名称",
    },
    "run_output": {
        "en": "the notebook's output passed the run's output limit; cells from {index} on did not run",
        "zh": "笔记本的输出超过整次运行的输出上限；从第 {index} 个代码单元起未运行",
    },
    "output_flood": {  # a flood of bytes or of messages: the caps are the grader's, in limit_output.py
        "en": "cell {index} sent more output than the grader accepts (output limit: your notebook may send at "
        f"most {CELL_FLOOD_MESSAGES:,} output messages per cell and {RUN_MESSAGES:,} per run; print less often, "
        "e.g. not with flush=True in a loop); the other cells were re-run without it",
        "zh": "第 {index} 个代码单元发送的输出超过评分器的上限（输出限制：每个单元最多 "
        f"{CELL_FLOOD_MESSAGES} 条输出消息，整次运行最多 {RUN_MESSAGES} 条；请减少打印，例如不要在循环中使用 "
        "flush=True）；其余单元已在新内核中重新运行",
    },
    "kernel_message_unreadable": {
        "en": "cell {index}: the kernel sent {what}, which the grader cannot read",
        "zh": "第 {index} 个代码单元：内核发送了评分器无法读取的消息（{what}）",
    },
    "output_truncated": {
        "en": "output of cell {index} truncated at {limit_kb} KB",
        "zh": "第 {index} 个代码单元的输出在 {limit_kb} KB 处被截断",
    },
    "output_truncated_marker": {
        "en": "\n... [output truncated by the grader at {limit_kb} KB]\n",
        "zh": "\n... [输出超过 {limit_kb} KB，已被评分器截断]\n",
    },
    "answers_too_large": {
        "en": "the answers exceeded the {limit_mb} MB answer limit; the checks that read them scored 0",
        "zh": "答案超过 {limit_mb} MB 的答案上限；读取这些答案的检查记 0 分",
    },
    "repeated": {"en": "{message} (x{count})", "zh": "{message}（{count} 次）"},
    "alike_cells": {"en": "{message} (and {count} more alike)", "zh": "{message}（另有 {count} 处相同）"},
    "more_problems": {"en": "and {count} more problems", "zh": "另有 {count} 个问题"},
    "redacted": {"en": "[hidden]", "zh": "[已隐藏]"},
    "not_gradable": {
        "en": "this submission could not be graded because of a grader problem ({reason}); "
        "it was not scored and may be retried",
        "zh": "评分器出现问题（{reason}），本次提交未评分，可重试",
    },
    # check-level
    "passed": {"en": "correct", "zh": "正确"},
    "answer_missing": {
        "en": "`{name}` is not defined; run the cell that defines it and keep its name",
        "zh": "未定义 `{name}`；请运行定义它的单元并保持名称不变",
    },
    "answer_raised": {"en": "reading `{name}` failed: {error}", "zh": "读取 `{name}` 失败：{error}"},
    "answer_unset": {"en": "`{name}` was never set: {why}", "zh": "`{name}` 从未被赋值：{why}"},
    "answer_opaque": {"en": "`{name}` has an unsupported type {type}", "zh": "`{name}` 的类型 {type} 不受支持"},
    "answer_uncomparable": {
        "en": "`{name}` returned a value that could not be compared with the expected answer "
        "({error}); return plain numbers, strings, lists, dicts or tensors",
        "zh": "`{name}` 返回的值无法与期望答案比较（{error}）；请返回数字、字符串、列表、字典或张量",
    },
    "answer_too_large": {
        "en": "`{name}` is too large to check: the answers of one run may hold at most "
        "{limit_mb} MB; return a smaller value",
        "zh": "`{name}` 太大，无法检查：一次运行的答案最多 {limit_mb} MB；请返回更小的值",
    },
    "wrong_value": {"en": "the value is not the expected one", "zh": "取值不正确"},
    "wrong_type": {"en": "expected a {expected}, got {got}", "zh": "应为 {expected}，实际为 {got}"},
    "numeric_off": {
        "en": "{count} of {total} numbers are outside the tolerance (rtol={rtol:g}, atol={atol:g})",
        "zh": "{total} 个数值中有 {count} 个超出容差（rtol={rtol:g}，atol={atol:g}）",
    },
    "structure_differs": {
        "en": "the structure differs (length, keys or nesting)",
        "zh": "结构不一致（长度、键或嵌套）",
    },
    "not_finite": {"en": "the answer contains NaN or Inf", "zh": "答案包含 NaN 或 Inf"},
    "mapping_wrong": {
        "en": "{count} of {total} expected keys have a wrong value",
        "zh": "{total} 个应有的键中有 {count} 个取值错误",
    },
    "mapping_missing": {
        "en": "{count} of {total} expected keys are missing",
        "zh": "{total} 个应有的键中缺少 {count} 个",
    },
    "mapping_extra": {"en": "{count} key(s) are not expected", "zh": "有 {count} 个多余的键"},
    "shape_wrong": {"en": "shape {got} is not the expected shape", "zh": "形状 {got} 不正确"},
    "sequence_wrong": {
        "en": "{count} of {total} positions are wrong (positions {positions})",
        "zh": "{total} 个位置中有 {count} 个错误（位置 {positions}）",
    },
    "sequence_length": {
        "en": "length {got} differs from the expected length {expected}",
        "zh": "长度 {got} 与期望长度 {expected} 不同",
    },
    "set_result": {
        "en": "{missing} expected element(s) missing, {extra} unexpected element(s)",
        "zh": "缺少 {missing} 个应有元素，多出 {extra} 个元素",
    },
    "function_public_fail": {"en": "{label}: {call} returned {got}", "zh": "{label}：{call} 返回了 {got}"},
    "function_public_raised": {"en": "{label}: {call} raised {error}", "zh": "{label}：{call} 抛出 {error}"},
    "function_should_raise": {
        "en": "{label}: {call} should raise {expected}, got {got}",
        "zh": "{label}：{call} 应抛出 {expected}，实际为 {got}",
    },
    "function_hidden_fail": {
        "en": "{failed} of {total} hidden cases failed",
        "zh": "{total} 个隐藏用例中有 {failed} 个未通过",
    },
    "function_missing": {"en": "function `{name}` is not defined", "zh": "未定义函数 `{name}`"},
    "function_not_run": {
        "en": "the checks of `{name}` did not run (see the run message)",
        "zh": "`{name}` 的检查未能运行（见运行信息）",
    },
    "trace_failed_parts": {"en": "failed parts: {parts}", "zh": "未通过的部分：{parts}"},
    "trace_part": {"en": "{part}: {detail}", "zh": "{part}：{detail}"},
    "trace_no_run": {"en": "no training run to check: {why}", "zh": "没有可检查的训练运行：{why}"},
    "trace_missing_metric": {
        "en": "{metric} missing at {count} of {total} steps",
        "zh": "{total} 步中有 {count} 步缺少 {metric}",
    },
    "trace_steps": {"en": "{got} steps recorded, expected {expected}", "zh": "记录了 {got} 步，应为 {expected} 步"},
    "trace_not_finite": {"en": "{metric} is NaN/Inf at steps {steps}", "zh": "{metric} 在第 {steps} 步为 NaN/Inf"},
    "trace_length": {
        "en": "{metric} has {got} values, expected {expected}",
        "zh": "{metric} 有 {got} 个值，应为 {expected} 个",
    },
    "trace_differs": {
        "en": "{metric} differs from the reference at steps {steps}",
        "zh": "{metric} 在第 {steps} 步与参考值不一致",
    },
    "trace_out_of_band": {
        "en": "{metric} leaves the accepted band at steps {steps}",
        "zh": "{metric} 在第 {steps} 步超出允许范围",
    },
    "trace_not_monotone": {
        "en": "{metric} is not {direction} (steps {steps})",
        "zh": "{metric} 不满足 {direction}（第 {steps} 步）",
    },
    "trace_out_of_bounds": {
        "en": "{metric} is outside its bounds at steps {steps}",
        "zh": "{metric} 在第 {steps} 步超出界限",
    },
    "trace_run_wrong": {"en": "run.json {key} is wrong", "zh": "run.json 中 {key} 不正确"},
    "trace_run_missing": {"en": "run.json has no {key}", "zh": "run.json 缺少 {key}"},
    "trace_file_present": {"en": "{path} should not exist", "zh": "不应存在 {path}"},
    "trace_file_absent": {"en": "nothing matches {pattern}", "zh": "没有与 {pattern} 匹配的文件"},
    "hint": {"en": "Hint: {hint}", "zh": "提示：{hint}"},
}


def t(message_id: str, lang: str = "en", /, **params: Any) -> str:
    """The message `message_id` in `lang` (English fallback), formatted with `params`."""
    entry = MESSAGES[message_id]
    text = entry["zh"] if lang.startswith("zh") and entry.get("zh") else entry["en"]
    return text.format(**params)


def pick(texts: Any, lang: str = "en") -> str:
    """A `{"en":..,"zh":..}` text from a manifest or reference (plain strings pass through)."""
    if texts is None:
        return ""
    if isinstance(texts, str):
        return texts
    if hasattr(texts, "get") and not isinstance(texts, dict):  # grading.exercise.Text
        return texts.get(lang)
    return (texts.get("zh") if lang.startswith("zh") and texts.get("zh") else texts.get("en", "")) or ""
