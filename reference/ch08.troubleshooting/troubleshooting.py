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
# # 第 8 章 · 练习：排障表
#
# 切换到 TorchTitan-NPU 时最常见的报错来自环境安装（uv、CANN、NNAL/ATB、版本固定）、启动脚本的检查（节点与 NPU 数量）、
# verl 补丁（缺少 torchtitan_npu）以及 verl/torchtitan/torchtitan-npu 自身（flavor、grad_norm、并行度、Ulysses CP）。
#
# ---
#
# # Chapter 8 · Exercise: the troubleshooting table
#
# The usual errors when switching to TorchTitan-NPU come from the environment set-up (uv, CANN, NNAL/ATB, version
# pins), the launch script's guards (node and NPU counts), the verl patch (torchtitan_npu missing) and
# verl/torchtitan/torchtitan-npu themselves (flavor, grad_norm, parallel dims, Ulysses CP).

# %% [markdown]
# ## 任务
# 1. `CAUSE_OF`：每个错误键 → `CAUSES` 中的字母。
# 2. `FIX_OF`：每个错误键 → `FIXES` 中的编号。
# 3. `classify(message)`：把一行真实日志（可能带前缀、具体数字）归到 `ERRORS` 的键；表外的错误返回 `None`。
#    一行日志只有包含某一行的报错短语时才属于该行（其中的数字、版本号和包名可以不同）；只是与某行有相同的词
#    （例如成功信息 `uv 0.12.0 is installed`）的日志行不在表内，返回 `None`。
#
# ---
#
# ## Tasks
# 1. `CAUSE_OF`: each error key → a letter from `CAUSES`.
# 2. `FIX_OF`: each error key → a number from `FIXES`.
# 3. `classify(message)`: map one real log line (prefixes, concrete numbers) to its `ERRORS` key; errors outside
#    the table give `None`. A line belongs to a row only when it contains that row's error phrase (its numbers,
#    versions and package names may differ); a line that only shares words with a row, such as the success message
#    `uv 0.12.0 is installed`, is outside the table (`None`).

# %%
ERRORS = {
    'uv_version': 'uv 0.12.0 is required',
    'cann_missing': 'CANN set_env.sh was not found.',
    'atb_missing': 'NNAL/ATB is required (source nnal/atb/set_env.sh --cxx_abi=1)',
    'version_pin': 'torch_npu is at 2.9.0; expected 2.12.0rc1',
    'node_count': 'This backend requires exactly one node with two NPUs.',
    'npu_count': 'Expected exactly two visible NPUs, got 1.',
    'torchtitan_npu_missing': 'torchtitan_npu is required for model_engine=torchtitan on NPU. Run setup_backend.sh',
    'flavor': 'No matching torchtitan flavor found',
    'grad_norm': 'grad_norm is not finite',
    'parallel_dims': 'Invalid parallel dims',
    'ulysses_heads': '[Ulysses CP] n_heads=16 must be divisible by cp=3',
}
CAUSES = {
    'A': 'The NNAL/ATB package is missing, or its set_env.sh was not sourced with --cxx_abi=1.',
    'B': 'The process sees a number of NPUs other than two (ASCEND_RT_VISIBLE_DEVICES, cards held by other jobs).',
    'C': "The HF config's hidden size / layer count / vocab matches no registered torchtitan Qwen3 flavor.",
    'D': 'The uv on PATH is not the pinned version.',
    'E': 'dp_replicate x dp_shard x cp x tp x pp does not equal the number of ranks.',
    'F': 'The active Python lacks the patched torchtitan-npu runtime (setup_backend.sh not run, or another venv).',
    'G': 'A package in the venv differs from the version pinned in versions.env.',
    'H': 'The context-parallel degree does not divide the attention (q and kv) head counts.',
    'I': 'Gradients overflowed to inf/NaN in an actor update.',
    'J': 'The CANN toolkit is not installed, or its environment was not sourced.',
    'K': 'The job is configured with a node/device layout other than 1 node x 2 NPUs.',
}
FIXES = {
    1: 'Launch on a single node with NNODES=1 and NPUS_PER_NODE=2.',
    2: 'Install CANN 9.0 and source ascend-toolkit/set_env.sh before anything else.',
    3: 'Inspect the batch and loss scale, keep lr 1e-6 and grad clipping; restart the run from a clean state.',
    4: 'Rerun setup_backend.sh so versions.env pins are reinstalled and `uv pip check` passes.',
    5: "Run setup_backend.sh, then launch with the recipe's .venv python.",
    6: 'Pick a context_parallel_size that divides both n_heads (16) and n_kv_heads (8): 1, 2, 4 or 8.',
    7: 'Install uv 0.12.0 and rerun setup_backend.sh.',
    8: 'Choose degrees whose product equals the world size (2 NPUs: shard 2 and cp 1, or shard 1 and cp 2).',
    9: 'Point MODEL_PATH at the Qwen3-1.7B Wordle SFT checkpoint (flavor 1.7B).',
    10: 'Install NNAL and source its atb/set_env.sh with --cxx_abi=1.',
    11: 'Free two NPUs and expose exactly them, e.g. ASCEND_RT_VISIBLE_DEVICES=0,1.',
}

# %%
### BEGIN SOLUTION
CAUSE_OF = {
    'uv_version': 'D',
    'cann_missing': 'J',
    'atb_missing': 'A',
    'version_pin': 'G',
    'node_count': 'K',
    'npu_count': 'B',
    'torchtitan_npu_missing': 'F',
    'flavor': 'C',
    'grad_norm': 'I',
    'parallel_dims': 'E',
    'ulysses_heads': 'H',
}

FIX_OF = {
    'uv_version': 7,
    'cann_missing': 2,
    'atb_missing': 10,
    'version_pin': 4,
    'node_count': 1,
    'npu_count': 11,
    'torchtitan_npu_missing': 5,
    'flavor': 9,
    'grad_norm': 3,
    'parallel_dims': 8,
    'ulysses_heads': 6,
}
### STUB
# CAUSE_OF = {key: None for key in ERRORS}  # error key -> a letter from CAUSES
# FIX_OF = {key: None for key in ERRORS}    # error key -> a number from FIXES
### END SOLUTION

# %%
import re
### BEGIN SOLUTION

PATTERNS = [  # most specific phrase of each message; order does not matter because none overlaps
    ("uv_version", r"\buv \d+\.\d+\.\d+ is required"),
    ("cann_missing", r"CANN set_env\.sh was not found"),
    ("atb_missing", r"NNAL/ATB is required"),
    ("version_pin", r"\bis at \S+; expected \S+"),
    ("node_count", r"requires exactly one node with two NPUs"),
    ("npu_count", r"Expected exactly two visible NPUs, got \d+"),
    ("torchtitan_npu_missing", r"torchtitan_npu is required"),
    ("flavor", r"No matching torchtitan flavor found"),
    ("grad_norm", r"grad_norm is not finite"),
    ("parallel_dims", r"Invalid parallel dims"),
    ("ulysses_heads", r"\[Ulysses CP\] n_(kv_)?heads=\d+ must be divisible"),
]
### STUB
### END SOLUTION


def classify(message):
    ### BEGIN SOLUTION
    """The key of the table row a log line belongs to, or None for errors outside the table."""
    for key, pattern in PATTERNS:
        if re.search(pattern, message):
            return key
    return None
    ### STUB
    # """Return the ERRORS key this log line belongs to, or None if it is not in the table."""
    # raise NotImplementedError("implement classify")
    ### END SOLUTION

# %% [markdown]
# ## 自查（仅公开用例）
#
# ---
#
# ## Self-check (public cases only)

# %%
_unanswered = [k for k in ERRORS if CAUSE_OF.get(k) not in CAUSES or FIX_OF.get(k) not in FIXES]
print("answered:", len(ERRORS) - len(_unanswered), "of", len(ERRORS), "| still open:", _unanswered or "none")
for _label, _msg, _want in [("grad_norm", "grad_norm is not finite", "grad_norm"),
                            ("parallel dims", "Invalid parallel dims", "parallel_dims"),
                            ("not in the table", "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB", None)]:
    try:
        _got = classify(_msg)
        print("✓" if _got == _want else "✗", _label, "" if _got == _want else f"- got {_got!r}")
    except NotImplementedError:
        print("…", _label, "- not implemented yet")

# %% tags=["grader"]
# Grader only: never in the template or the solution. Hidden cases with their expected values
# (CHECKS: the answer file), and typical mistakes as patches of the solution with the score
# and the check each must fail.
CHECKS = {'causes': {'extra_keys': 'penalize',
            'feedback': {'en': 'Some causes are wrong: re-read each error string and match it to its cause; '
                               'the two NPU-count messages and the two parallelism messages are easy to mix '
                               'up.',
                         'zh': '有的原因选错了：重新阅读每条错误，为它匹配原因；两条 NPU 数量消息和两条并行度消息很容易混淆。'},
            'expected': {'uv_version': 'D',
                         'cann_missing': 'J',
                         'atb_missing': 'A',
                         'version_pin': 'G',
                         'node_count': 'K',
                         'npu_count': 'B',
                         'torchtitan_npu_missing': 'F',
                         'flavor': 'C',
                         'grad_norm': 'I',
                         'parallel_dims': 'E',
                         'ulysses_heads': 'H'}},
 'fixes': {'extra_keys': 'penalize',
           'feedback': {'en': 'Each fix should remove the cause you chose; some errors got a fix for a '
                              'different problem.',
                        'zh': '修复方法应当消除你选择的原因；有的错误选了针对其他问题的修复。'},
           'expected': {'uv_version': 7,
                        'cann_missing': 2,
                        'atb_missing': 10,
                        'version_pin': 4,
                        'node_count': 1,
                        'npu_count': 11,
                        'torchtitan_npu_missing': 5,
                        'flavor': 9,
                        'grad_norm': 3,
                        'parallel_dims': 8,
                        'ulysses_heads': 6}},
 'classify': {'compare': 'exact',
              'feedback': {'en': "Match the most specific phrase of each message (e.g. 'NNAL/ATB is "
                                 "required', not just 'is required'); log lines carry prefixes and numbers, "
                                 'and errors outside the table give None.',
                           'zh': "匹配每条消息最具体的短语（例如 'NNAL/ATB is required'，而不只是 'is "
                                 "required'）；日志行会带前缀和数字，表外错误返回 None。"},
              'calls': [{'args': ['grad_norm is not finite'],
                         'public': True,
                         'label': 'table row: grad_norm',
                         'expect': 'grad_norm',
                         'rules': ['row_phrase']},
                        {'args': ['Invalid parallel dims'],
                         'public': True,
                         'label': 'table row: parallel dims',
                         'expect': 'parallel_dims',
                         'rules': ['row_phrase']},
                        {'args': ['RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB'],
                         'public': True,
                         'label': 'not in the table',
                         'expect': None,
                         'rules': ['outside_none']},
                        {'args': ['ERROR: uv 0.12.0 is required (found uv 0.4.30). Install it with: pip '
                                  'install uv==0.12.0'],
                         'public': False,
                         'expect': 'uv_version',
                         'rules': ['row_phrase', 'prefixes_numbers']},
                        {'args': ['ERROR: NNAL/ATB is required: /usr/local/Ascend/nnal/atb/set_env.sh not '
                                  'found'],
                         'public': False,
                         'expect': 'atb_missing',
                         'rules': ['row_phrase', 'prefixes_numbers']},
                        {'args': ['ERROR: transformers is at 5.10.4; expected 4.57.6'],
                         'public': False,
                         'expect': 'version_pin',
                         'rules': ['row_phrase', 'prefixes_numbers']},
                        {'args': ['Expected exactly two visible NPUs, got 8.'],
                         'public': False,
                         'expect': 'npu_count',
                         'rules': ['row_phrase', 'prefixes_numbers']},
                        {'args': ['ERROR: This backend requires exactly one node with two NPUs.'],
                         'public': False,
                         'expect': 'node_count',
                         'rules': ['row_phrase', 'prefixes_numbers']},
                        {'args': ['ImportError: torchtitan_npu is required for model_engine=torchtitan on '
                                  'NPU. Run setup_backend.sh first.'],
                         'public': False,
                         'expect': 'torchtitan_npu_missing',
                         'rules': ['row_phrase', 'prefixes_numbers']},
                        {'args': ['ValueError: No matching torchtitan flavor found for model_type=qwen3 '
                                  '(dim=1024, n_layers=28, vocab=151936)'],
                         'public': False,
                         'expect': 'flavor',
                         'rules': ['row_phrase', 'prefixes_numbers']},
                        {'args': ['(TaskRunner pid=4242) RuntimeError: grad_norm is not finite: nan'],
                         'public': False,
                         'expect': 'grad_norm',
                         'rules': ['row_phrase', 'prefixes_numbers']},
                        {'args': ['AssertionError: Invalid parallel dims: dp_replicate(1) * dp_shard(2) * '
                                  'cp(2) * tp(1) * pp(1) != WORLD_SIZE(2)'],
                         'public': False,
                         'expect': 'parallel_dims',
                         'rules': ['row_phrase', 'prefixes_numbers']},
                        {'args': ['ValueError: [Ulysses CP] n_kv_heads=8 must be divisible by cp=16'],
                         'public': False,
                         'expect': 'ulysses_heads',
                         'rules': ['row_phrase', 'prefixes_numbers']},
                        {'args': ['ERROR: CANN set_env.sh was not found. Install CANN 9.0 or set '
                                  'ASCEND_HOME_PATH.'],
                         'public': False,
                         'expect': 'cann_missing',
                         'rules': ['row_phrase', 'prefixes_numbers']},
                        {'args': ['torch.distributed.DistNetworkError: Connection reset by peer'],
                         'public': False,
                         'expect': None,
                         'rules': ['outside_none']},
                        {'args': ['INFO: CANN set_env.sh was found at '
                                  '/usr/local/Ascend/ascend-toolkit/set_env.sh'],
                         'public': False,
                         'expect': None,
                         'rules': ['shared_words']},
                        {'args': ['INFO: found a matching torchtitan flavor for qwen3: 1.7B'],
                         'public': False,
                         'expect': None,
                         'rules': ['shared_words']},
                        {'args': ['INFO: grad_norm is finite again (0.84) after one skipped step'],
                         'public': False,
                         'expect': None,
                         'rules': ['shared_words']},
                        {'args': ['INFO: NNAL/ATB found; sourced nnal/atb/set_env.sh --cxx_abi=1'],
                         'public': False,
                         'expect': None,
                         'rules': ['shared_words']},
                        {'args': ['ERROR: vllm_ascend is at 0.18.0; expected 0.15.0. Rerun setup_backend.sh '
                                  'for model_engine=torchtitan on NPU'],
                         'public': False,
                         'expect': 'version_pin',
                         'rules': ['row_phrase', 'shared_words']},
                        {'args': ['INFO: parallel dims are valid: dp_shard=2, cp=1 on 2 NPUs'],
                         'public': False,
                         'expect': None,
                         'rules': ['shared_words']},
                        {'args': ['INFO: uv 0.12.0 found; torch_npu is at 2.12.0rc1 as expected'],
                         'public': False,
                         'expect': None,
                         'rules': ['shared_words']}]}}

MISTAKES = [{'name': 'dims_vs_heads',
  'score': 9.2727,
  'fails': {'causes': 'parallelism messages'},
  'patch': [{'find': "    'parallel_dims': 'E',\n    'ulysses_heads': 'H',",
             'replace': "    'parallel_dims': 'H',\n    'ulysses_heads': 'E',"}]},
 {'name': 'loose_patterns',
  'score': 9.7273,
  'fails': {'classify': 'its own error phrase'},
  'patch': [{'find': 'PATTERNS = [  # most specific phrase of each message; order does not matter because '
                     'none overlaps\n'
                     '    ("uv_version", r"\\buv \\d+\\.\\d+\\.\\d+ is required"),',
             'replace': 'PATTERNS = [  # checked in order\n    ("uv_version", r"is required"),'}]},
 {'name': 'node_vs_npu_count',
  'score': 8.7272,
  'fails': {'causes': 'NPU-count messages', 'fixes': 'different problem'},
  'patch': [{'find': "    'node_count': 'K',\n"
                     "    'npu_count': 'B',\n"
                     "    'torchtitan_npu_missing': 'F',\n"
                     "    'flavor': 'C',\n"
                     "    'grad_norm': 'I',\n"
                     "    'parallel_dims': 'E',\n"
                     "    'ulysses_heads': 'H',\n"
                     '}\n'
                     '\n'
                     'FIX_OF = {\n'
                     "    'uv_version': 7,\n"
                     "    'cann_missing': 2,\n"
                     "    'atb_missing': 10,\n"
                     "    'version_pin': 4,\n"
                     "    'node_count': 1,\n"
                     "    'npu_count': 11,",
             'replace': "    'node_count': 'B',\n"
                        "    'npu_count': 'K',\n"
                        "    'torchtitan_npu_missing': 'F',\n"
                        "    'flavor': 'C',\n"
                        "    'grad_norm': 'I',\n"
                        "    'parallel_dims': 'E',\n"
                        "    'ulysses_heads': 'H',\n"
                        '}\n'
                        '\n'
                        'FIX_OF = {\n'
                        "    'uv_version': 7,\n"
                        "    'cann_missing': 2,\n"
                        "    'atb_missing': 10,\n"
                        "    'version_pin': 4,\n"
                        "    'node_count': 11,\n"
                        "    'npu_count': 1,"}]},
 {'name': 'word_overlap',
  'score': 8.9091,
  'fails': {'classify': 'hidden cases failed'},
  'patch': [{'find': '    for key, pattern in PATTERNS:\n'
                     '        if re.search(pattern, message):\n'
                     '            return key\n'
                     '    return None',
             'replace': '    words = set(re.findall(r"[a-z0-9_./]+", message.lower()))\n'
                        '    best, best_key = 0.0, None\n'
                        '    for key, text in ERRORS.items():  # the row sharing the most words\n'
                        '        row = set(re.findall(r"[a-z0-9_./]+", text.lower()))\n'
                        '        if len(row & words) / len(row) > best:\n'
                        '            best, best_key = len(row & words) / len(row), key\n'
                        '    return best_key if best >= 0.5 else None'}]}]

RULES = {'causes': [{'id': 'cause_per_error',
             'stated': 'each error key → a letter from `CAUSES`',
             'hint': {'en': 'Give every error key the letter of the cause that produces that message; the '
                            'two NPU-count messages and the two parallelism messages are easy to mix up.',
                      'zh': '为每个错误键选出产生这条消息的原因字母；两条 NPU 数量消息和两条并行度消息很容易混淆。'}}],
 'fixes': [{'id': 'fix_per_error',
            'stated': 'each error key → a number from `FIXES`',
            'hint': {'en': 'Give every error key the number of the fix that removes its cause.',
                     'zh': '为每个错误键选出能消除其原因的修复编号。'}}],
 'classify': [{'id': 'row_phrase',
               'stated': "contains that row's error phrase",
               'hint': {'en': "Match each row by its own error phrase (e.g. 'NNAL/ATB is required', not just "
                              "'is required').",
                        'zh': "按每一行自己的报错短语匹配（例如 'NNAL/ATB is required'，而不只是 'is required'）。"}},
              {'id': 'prefixes_numbers',
               'stated': '(its numbers, versions and package names may differ)',
               'hint': {'en': 'Real log lines carry prefixes (ERROR:, exception names, Ray process tags) and '
                              'their own numbers, versions and package names: match the phrase, not the '
                              'whole table text.',
                        'zh': '真实日志行带有前缀（ERROR:、异常名、Ray 进程标记）以及自己的数字、版本号和包名：匹配短语，而不是整条表内文本。'}},
              {'id': 'outside_none',
               'stated': 'errors outside the table give `None`',
               'hint': {'en': 'An error that is not in the table gives None.', 'zh': '不在表中的错误返回 None。'}},
              {'id': 'shared_words',
               'stated': 'a line that only shares words with a row',
               'hint': {'en': 'Sharing words with a row is not enough: a success or status line that lacks '
                              "the row's error phrase is outside the table (None), and a line is classified "
                              'by the phrase it contains, not by its most common words.',
                        'zh': '与某行有相同的词还不够：不含该行报错短语的成功或状态信息不在表内（None）；一行日志按它包含的短语归类，而不是按共同词最多的那一行。'}}]}

EQUIVALENT = [{'mutant': 'stmt_drop:6b056bb6:1',
  'reason': 'a function that falls off its end returns None, the same value as the dropped `return None`'}]
