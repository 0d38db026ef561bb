"""ch08.troubleshooting: the troubleshooting table - error string -> cause and fix (COURSE.md §9 strings)."""
from __future__ import annotations

from nbkit_ch07_08 import Check, Exercise, Mistake, code, md

# error key -> (message as the learner sees it, cause id, fix id); the ids are scrambled on purpose
TABLE = {
    "uv_version": ("uv 0.12.0 is required", "D", 7),
    "cann_missing": ("CANN set_env.sh was not found.", "J", 2),
    "atb_missing": ("NNAL/ATB is required (source nnal/atb/set_env.sh --cxx_abi=1)", "A", 10),
    "version_pin": ("torch_npu is at 2.9.0; expected 2.12.0rc1", "G", 4),
    "node_count": ("This backend requires exactly one node with two NPUs.", "K", 1),
    "npu_count": ("Expected exactly two visible NPUs, got 1.", "B", 11),
    "torchtitan_npu_missing": ("torchtitan_npu is required for model_engine=torchtitan on NPU. Run setup_backend.sh",
                               "F", 5),
    "flavor": ("No matching torchtitan flavor found", "C", 9),
    "grad_norm": ("grad_norm is not finite", "I", 3),
    "parallel_dims": ("Invalid parallel dims", "E", 8),
    "ulysses_heads": ("[Ulysses CP] n_heads=16 must be divisible by cp=3", "H", 6),
}
CAUSES = {
    "A": "The NNAL/ATB package is missing, or its set_env.sh was not sourced with --cxx_abi=1.",
    "B": "The process sees a number of NPUs other than two (ASCEND_RT_VISIBLE_DEVICES, cards held by other jobs).",
    "C": "The HF config's hidden size / layer count / vocab matches no registered torchtitan Qwen3 flavor.",
    "D": "The uv on PATH is not the pinned version.",
    "E": "dp_replicate x dp_shard x cp x tp x pp does not equal the number of ranks.",
    "F": "The active Python lacks the patched torchtitan-npu runtime (setup_backend.sh not run, or another venv).",
    "G": "A package in the venv differs from the version pinned in versions.env.",
    "H": "The context-parallel degree does not divide the attention (q and kv) head counts.",
    "I": "Gradients overflowed to inf/NaN in an actor update.",
    "J": "The CANN toolkit is not installed, or its environment was not sourced.",
    "K": "The job is configured with a node/device layout other than 1 node x 2 NPUs.",
}
FIXES = {
    1: "Launch on a single node with NNODES=1 and NPUS_PER_NODE=2.",
    2: "Install CANN 9.0 and source ascend-toolkit/set_env.sh before anything else.",
    3: "Inspect the batch and loss scale, keep lr 1e-6 and grad clipping; restart the run from a clean state.",
    4: "Rerun setup_backend.sh so versions.env pins are reinstalled and `uv pip check` passes.",
    5: "Run setup_backend.sh, then launch with the recipe's .venv python.",
    6: "Pick a context_parallel_size that divides both n_heads (16) and n_kv_heads (8): 1, 2, 4 or 8.",
    7: "Install uv 0.12.0 and rerun setup_backend.sh.",
    8: "Choose degrees whose product equals the world size (2 NPUs: shard 2 and cp 1, or shard 1 and cp 2).",
    9: "Point MODEL_PATH at the Qwen3-1.7B Wordle SFT checkpoint (flavor 1.7B).",
    10: "Install NNAL and source its atb/set_env.sh with --cxx_abi=1.",
    11: "Free two NPUs and expose exactly them, e.g. ASCEND_RT_VISIBLE_DEVICES=0,1.",
}
GIVEN = (f"ERRORS = {{\n" + "".join(f"    {k!r}: {v[0]!r},\n" for k, v in TABLE.items()) + "}\n"
         + "CAUSES = {\n" + "".join(f"    {k!r}: {v!r},\n" for k, v in CAUSES.items()) + "}\n"
         + "FIXES = {\n" + "".join(f"    {k!r}: {v!r},\n" for k, v in FIXES.items()) + "}\n")


def _mapping(name: str, col: int, swaps: dict | None = None) -> str:
    rows = {k: v[col] for k, v in TABLE.items()}
    for a, b in (swaps or {}).items():
        rows[a], rows[b] = rows[b], rows[a]
    return f"{name} = {{\n" + "".join(f"    {k!r}: {v!r},\n" for k, v in rows.items()) + "}\n"


SOL_MAP = _mapping("CAUSE_OF", 1) + "\n" + _mapping("FIX_OF", 2)
TPL_MAP = ("CAUSE_OF = {key: None for key in ERRORS}  # error key -> a letter from CAUSES\n"
           "FIX_OF = {key: None for key in ERRORS}    # error key -> a number from FIXES\n")
SOL_CLASSIFY = '''
import re

PATTERNS = [  # most specific phrase of each message; order does not matter because none overlaps
    ("uv_version", r"\\buv \\d+\\.\\d+\\.\\d+ is required"),
    ("cann_missing", r"CANN set_env\\.sh was not found"),
    ("atb_missing", r"NNAL/ATB is required"),
    ("version_pin", r"\\bis at \\S+; expected \\S+"),
    ("node_count", r"requires exactly one node with two NPUs"),
    ("npu_count", r"Expected exactly two visible NPUs, got \\d+"),
    ("torchtitan_npu_missing", r"torchtitan_npu is required"),
    ("flavor", r"No matching torchtitan flavor found"),
    ("grad_norm", r"grad_norm is not finite"),
    ("parallel_dims", r"Invalid parallel dims"),
    ("ulysses_heads", r"\\[Ulysses CP\\] n_(kv_)?heads=\\d+ must be divisible"),
]


def classify(message):
    """The key of the table row a log line belongs to, or None for errors outside the table."""
    for key, pattern in PATTERNS:
        if re.search(pattern, message):
            return key
    return None
'''
TPL_CLASSIFY = '''
import re


def classify(message):
    """Return the ERRORS key this log line belongs to, or None if it is not in the table."""
    raise NotImplementedError("implement classify")
'''
LOOSE = SOL_CLASSIFY.replace('''PATTERNS = [  # most specific phrase of each message; order does not matter because none overlaps
    ("uv_version", r"\\buv \\d+\\.\\d+\\.\\d+ is required"),''', '''PATTERNS = [  # checked in order
    ("uv_version", r"is required"),''')
NODE_NPU = _mapping("CAUSE_OF", 1, {"node_count": "npu_count"}) + "\n" + _mapping("FIX_OF", 2, {"node_count": "npu_count"})
DIMS_HEADS = _mapping("CAUSE_OF", 1, {"parallel_dims": "ulysses_heads"}) + "\n" + _mapping("FIX_OF", 2)
assert LOOSE != SOL_CLASSIFY and NODE_NPU != SOL_MAP and DIMS_HEADS != SOL_MAP

CLASSIFY_PUBLIC = [("table row: grad_norm", "grad_norm is not finite"),
                   ("table row: parallel dims", "Invalid parallel dims"),
                   ("not in the table", "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB")]
CLASSIFY_HIDDEN = [
    "ERROR: uv 0.12.0 is required (found uv 0.4.30). Install it with: pip install uv==0.12.0",
    "ERROR: NNAL/ATB is required: /usr/local/Ascend/nnal/atb/set_env.sh not found",
    "ERROR: transformers is at 5.10.4; expected 4.57.6",
    "Expected exactly two visible NPUs, got 8.",
    "ERROR: This backend requires exactly one node with two NPUs.",
    "ImportError: torchtitan_npu is required for model_engine=torchtitan on NPU. Run setup_backend.sh first.",
    "ValueError: No matching torchtitan flavor found for model_type=qwen3 (dim=1024, n_layers=28, vocab=151936)",
    "(TaskRunner pid=4242) RuntimeError: grad_norm is not finite: nan",
    "AssertionError: Invalid parallel dims: dp_replicate(1) * dp_shard(2) * cp(2) * tp(1) * pp(1) != WORLD_SIZE(2)",
    "ValueError: [Ulysses CP] n_kv_heads=8 must be divisible by cp=16",
    "ERROR: CANN set_env.sh was not found. Install CANN 9.0 or set ASCEND_HOME_PATH.",
    "torch.distributed.DistNetworkError: Connection reset by peer",
]


def spec() -> Exercise:
    checks = [
        Check("causes", "CAUSE_OF", "mapping", 4, "Cause of each error", "每个错误的原因",
              "Re-read the error strings named above and match each to its cause; two NPU-count messages and two "
              "parallelism messages are easy to mix up.", "重新阅读上面列出的错误，为每个错误匹配原因；两条 NPU 数量消息和两条并行度消息很容易混淆。",
              options={"extra_keys": "penalize"}),
        Check("fixes", "FIX_OF", "mapping", 3, "Fix for each error", "每个错误的修复方法",
              "Each fix should remove the cause you chose; the errors named above got a fix for a different problem.",
              "修复方法应当消除你选择的原因；上面列出的错误选了针对其他问题的修复。", options={"extra_keys": "penalize"}),
        Check("classify", "classify", "function", 3, "Recognise errors in real log lines", "在真实日志行中识别错误",
              "Match the most specific phrase of each message (e.g. 'NNAL/ATB is required', not just 'is required'); "
              "log lines carry prefixes and numbers, and errors outside the table give None.",
              "匹配每条消息最具体的短语（例如 'NNAL/ATB is required'，而不只是 'is required'）；日志行会带前缀和数字，表外错误返回 None。",
              calls=[{"args": [m], "public": True, "label": lab} for lab, m in CLASSIFY_PUBLIC]
              + [{"args": [m], "public": False} for m in CLASSIFY_HIDDEN], options={"compare": "exact"}),
    ]
    intro = [
        md("""
        # 第 8 章 · 练习：排障表

        切换到 TorchTitan-NPU 时最常见的报错来自环境安装（uv、CANN、NNAL/ATB、版本固定）、启动脚本的检查（节点与 NPU 数量）、
        verl 补丁（缺少 torchtitan_npu）以及 verl/torchtitan/torchtitan-npu 自身（flavor、grad_norm、并行度、Ulysses CP）。
        """, """
        # Chapter 8 · Exercise: the troubleshooting table

        The usual errors when switching to TorchTitan-NPU come from the environment set-up (uv, CANN, NNAL/ATB, version
        pins), the launch script's guards (node and NPU counts), the verl patch (torchtitan_npu missing) and
        verl/torchtitan/torchtitan-npu themselves (flavor, grad_norm, parallel dims, Ulysses CP).
        """),
        md("""
        ## 任务
        1. `CAUSE_OF`：每个错误键 → `CAUSES` 中的字母。
        2. `FIX_OF`：每个错误键 → `FIXES` 中的编号。
        3. `classify(message)`：把一行真实日志（可能带前缀、具体数字）归到 `ERRORS` 的键；表外的错误返回 `None`。
        """, """
        ## Tasks
        1. `CAUSE_OF`: each error key → a letter from `CAUSES`.
        2. `FIX_OF`: each error key → a number from `FIXES`.
        3. `classify(message)`: map one real log line (prefixes, concrete numbers) to its `ERRORS` key; errors outside
           the table give `None`.
        """),
        code(GIVEN),
    ]
    return Exercise(
        id="ch08.troubleshooting", title_en="The troubleshooting table", title_zh="排障表",
        summary_en="match the course's error strings to causes and fixes, and recognise them in logs",
        summary_zh="为课程中的错误信息匹配原因与修复，并在日志中识别它们",
        kernel_family="light", setup=GIVEN,
        answers=[("CAUSE_OF", "value"), ("FIX_OF", "value"), ("classify", "function")],
        checks=checks, intro=intro,
        answer_cells={"map": (TPL_MAP, SOL_MAP), "classify": (TPL_CLASSIFY, SOL_CLASSIFY)},
        after=[md("## 自查（仅公开用例）", "## Self-check (public cases only)"), code(SELF_CHECK)],
        mistakes=[
            Mistake("node_vs_npu_count", {"map": NODE_NPU}, {"causes": "node_count", "fixes": "npu_count"}),
            Mistake("dims_vs_heads", {"map": DIMS_HEADS}, {"causes": "ulysses_heads"}),
            Mistake("loose_patterns", {"classify": LOOSE}, {"classify": "most specific phrase"}),
        ],
    )


SELF_CHECK = '''
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
'''
