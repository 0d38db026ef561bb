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
# # 第 7 章 · 练习：训练前检查运行环境
#
# TorchTitan-NPU 路线有自己独立的 uv 0.12.0 环境：`setup_backend.sh` 先检查版本，再把固定的提交克隆到
# `runtime_sources/`、打补丁、以可编辑方式装进 `uv venv .venv`，最后运行 `uv pip check`。平台是 CANN 9.0 加 NNAL/ATB，
# ATB 用 `--cxx_abi=1` 加载。TT 固定版本（`versions.env`）：Python 3.11、GCC ≥ 11、uv 0.12.0；torch 2.12.0、
# torchvision 0.27.0、torch_npu 2.12.0rc1；vllm / vllm-ascend 0.15.0；triton-ascend 3.2.1；verl `e9aa879`、
# torchtitan `ac13e536`、torchtitan-npu `5901515`。启动脚本还要求恰好 1 个节点、2 张 NPU，这些检查在 DRY_RUN 之前执行。
#
# 本练习读取一份**环境报告**（每条命令 → 它的输出文本），用安装脚本和启动脚本**自己的原话**给出结论。
#
# ---
#
# # Chapter 7 · Exercise: checking the environment before the run
#
# The TorchTitan-NPU path has its own uv 0.12.0 environment: `setup_backend.sh` checks versions, clones the pinned
# commits into `runtime_sources/`, applies the patches, installs everything editable into `uv venv .venv`, then runs
# `uv pip check`. The platform is CANN 9.0 plus NNAL/ATB, sourced with `--cxx_abi=1`. The TT pins (`versions.env`):
# Python 3.11, GCC >= 11, uv 0.12.0; torch 2.12.0, torchvision 0.27.0, torch_npu 2.12.0rc1; vllm / vllm-ascend
# 0.15.0; triton-ascend 3.2.1; verl `e9aa879`, torchtitan `ac13e536`, torchtitan-npu `5901515`. The launch script
# also requires exactly 1 node with 2 NPUs, and its guards run before DRY_RUN.
#
# This exercise reads an **environment report** (each command → its output text) and gives the verdicts **in the
# setup's and the launch script's own words**.

# %% [markdown]
# ## 任务 1：`setup_verdicts(report)` → 结论列表（环境就绪时为空列表）
#
# 按下面的顺序检查，每条不满足的检查给出一句结论（字符串须逐字一致）：
# 1. uv：`uv --version` 的输出以 `uv ` 开头、第二个词是版本；版本不是 0.12.0 或没有 uv（如 `command not found`）→
#    `uv 0.12.0 is required`
# 2. Python：`python -V` 的版本（如 `3.11.9`）主.次版本须为 3.11，否则 → `Python is at <版本>; expected 3.11`
# 3. GCC：`gcc --version` 第一行形如 `gcc (<包名>) <版本>`，取括号之后的版本；**按数字比较**主版本须 ≥ 11，否则 →
#    `GCC is at <版本>; expected >= 11`
# 4. CANN 与 ATB：`ls <两个 set_env.sh>` 的输出中，**某一行恰好等于该路径**才算存在（出错行 `ls: cannot access '...'`
#    也含路径，但不算）。CANN 缺失 → `CANN set_env.sh was not found.`；ATB 缺失 → `NNAL/ATB is required`
#    （安装脚本这条消息更长，课程资料只给出了开头这几个词，本练习就用它们）。
# 5. 固定的包（按 `PINS` 的顺序）：在 `uv pip list`（跳过表头两行，每行第一列包名、第二列版本）里找到它；
#    **包名不区分大小写，`-` 与 `_` 视为相同**（列表里可能是 `torch-npu`）；比较时**忽略版本中 `+` 之后的本地标签**
#    （如 `2.12.0+cpu`、`0.15.0+empty`）。不一致 → `<PINS 中的包名> is at <列表中的版本>; expected <固定版本>`。
#    报告里总会列出这六个包。
# 6. 固定的提交（按 `COMMITS` 的顺序）：`git -C runtime_sources/<名> rev-parse --short HEAD` 输出缩写提交号
#    （git 至少 7 位，可能更长）；**两者之一是另一个的前缀**即为一致，否则 → `<名> is at <输出>; expected <固定提交>`。
#
# ## 任务 2：`guard_verdict(report)` → 第一条失败的启动检查的消息，全部通过时为 `None`
#
# 启动脚本按顺序检查，**遇到第一条失败就停止**：
# `env` 每行输出一个 `名称=值`，在**第一个 `=`** 处拆开；不含 `=` 的行是上一行多行值（如导出的 bash 函数）的续行，跳过。
# 1. 节点与卡数：`env` 输出中的 `NNODES`（未设置时为 1）与 `NPUS_PER_NODE`（未设置时为 2）须为 1 和 2，否则 →
#    `This backend requires exactly one node with two NPUs.`
# 2. 可见 NPU 数：设置了 `ASCEND_RT_VISIBLE_DEVICES` 时为其中逗号分隔的编号个数；未设置时为本机全部 NPU，即
#    `ls /dev/davinci*` 中**形如 `/dev/davinci<数字>` 的行数**（`/dev/davinci_manager` 不是 NPU）。不等于 2 →
#    `Expected exactly two visible NPUs, got <个数>.`
#
# ---
#
# ## Task 1: `setup_verdicts(report)` → a list of verdicts (empty when the environment is ready)
#
# Check in this order; each failed check adds one verdict (the strings must match exactly):
# 1. uv: the `uv --version` output starts with `uv ` and its second word is the version; a version other than 0.12.0,
#    or no uv at all (e.g. `command not found`) → `uv 0.12.0 is required`
# 2. Python: the `python -V` version (e.g. `3.11.9`) must have major.minor 3.11, otherwise →
#    `Python is at <version>; expected 3.11`
# 3. GCC: the first line of `gcc --version` reads `gcc (<package>) <version>`; take the version after the
#    parenthesis. **Compared as a number**, its major version must be >= 11, otherwise → `GCC is at <version>; expected >= 11`
# 4. CANN and ATB: in the output of `ls <the two set_env.sh>`, a script exists only when **a line equals its path
#    exactly** (an error line `ls: cannot access '...'` holds the path too, and does not count). CANN missing →
#    `CANN set_env.sh was not found.`; ATB missing → `NNAL/ATB is required` (the setup's message goes on; the course
#    material gives only these first words, and this exercise uses them).
# 5. Pinned packages (in `PINS` order): find each in `uv pip list` (skip its two header lines; the first column is
#    the name, the second the version). **Names compare case-insensitively with `-` and `_` the same** (the list may
#    say `torch-npu`), and versions compare **without a local label after `+`** (`2.12.0+cpu`, `0.15.0+empty`).
#    A mismatch → `<name as in PINS> is at <version as listed>; expected <pinned version>`. Reports always list all six.
# 6. Pinned commits (in `COMMITS` order): `git -C runtime_sources/<name> rev-parse --short HEAD` prints an abbreviated
#    hash (at least 7 characters, maybe more); it matches when **either hash is a prefix of the other**, otherwise →
#    `<name> is at <output>; expected <pinned commit>`.
#
# ## Task 2: `guard_verdict(report)` → the message of the first launch guard that fails, or `None` when all pass
#
# The launch script checks in this order and **stops at the first failure**:
# `env` prints one `NAME=value` per line: split it at the **first `=`**; a line without `=` continues a multi-line value
# (an exported bash function, say) and is skipped.
# 1. Nodes and cards: `NNODES` (1 when unset) and `NPUS_PER_NODE` (2 when unset) in the `env` output must be 1 and 2,
#    otherwise → `This backend requires exactly one node with two NPUs.`
# 2. Visible NPUs: with `ASCEND_RT_VISIBLE_DEVICES` set, the number of comma-separated ids in it; unset, every NPU of
#    the host, i.e. the number of **lines of the form `/dev/davinci<digits>`** in `ls /dev/davinci*`
#    (`/dev/davinci_manager` is not an NPU). Not 2 → `Expected exactly two visible NPUs, got <count>.`

# %%
PINS = {"torch": "2.12.0", "torchvision": "0.27.0", "torch_npu": "2.12.0rc1",
        "vllm": "0.15.0", "vllm-ascend": "0.15.0", "triton-ascend": "3.2.1"}
COMMITS = {"verl": "e9aa879", "torchtitan": "ac13e536", "torchtitan-npu": "5901515"}
CANN_SET_ENV = "/usr/local/Ascend/ascend-toolkit/set_env.sh"
ATB_SET_ENV = "/usr/local/Ascend/nnal/atb/set_env.sh"
LS_SET_ENV = f"ls {CANN_SET_ENV} {ATB_SET_ENV}"
GCC_11 = """gcc (GCC) 11.4.0
Copyright (C) 2021 Free Software Foundation, Inc.
This is free software; see the source for copying conditions.  There is NO
warranty; not even for MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE.
"""
PIP_LIST_OK = """Package                Version        Editable project location
---------------------- -------------- ---------------------------------------------------
hydra-core             1.3.3
numpy                  1.26.4
ray                    2.47.1
torch                  2.12.0
torch-npu              2.12.0rc1
torchvision            0.27.0
transformers           4.57.6
triton-ascend          3.2.1
verl                   0.8.0.dev0     /root/wordle/torchtitan-npu/runtime_sources/verl
vllm                   0.15.0+empty   /root/wordle/torchtitan-npu/runtime_sources/vllm
vllm-ascend            0.15.0         /root/wordle/torchtitan-npu/runtime_sources/vllm-ascend
"""
READY = {
    "uv --version": "uv 0.12.0\n",
    "python -V": "Python 3.11.9\n",
    "gcc --version": GCC_11,
    "uv pip list": PIP_LIST_OK,
    "git -C runtime_sources/verl rev-parse --short HEAD": "e9aa879\n",
    "git -C runtime_sources/torchtitan rev-parse --short HEAD": "ac13e536\n",
    "git -C runtime_sources/torchtitan-npu rev-parse --short HEAD": "5901515\n",
    LS_SET_ENV: f"{CANN_SET_ENV}\n{ATB_SET_ENV}\n",
    "env": "HOME=/root\nPATH=/root/wordle/torchtitan-npu/.venv/bin:/usr/local/bin:/usr/bin:/bin\n"
           "ASCEND_RT_VISIBLE_DEVICES=0,1\nHCCL_CONNECT_TIMEOUT=3600\n",
    "ls /dev/davinci*": "/dev/davinci0\n/dev/davinci1\n/dev/davinci2\n/dev/davinci3\n/dev/davinci_manager\n",
}
# The FSDP recipe's stack on a fresh host: an older uv, no CANN or ATB scripts sourced, torch_npu of the FSDP stack.
FSDP_HOST = {**READY,
             "uv --version": "uv 0.11.2\n",
             "uv pip list": PIP_LIST_OK.replace("torch-npu              2.12.0rc1",
                                                "torch-npu              2.9.0    "),
             LS_SET_ENV: f"ls: cannot access '{CANN_SET_ENV}': No such file or directory\n"
                         f"ls: cannot access '{ATB_SET_ENV}': No such file or directory\n",
             "env": "HOME=/root\nPATH=/usr/local/bin:/usr/bin:/bin\nASCEND_RT_VISIBLE_DEVICES=0\n"}

# %%
import re


def setup_verdicts(report):
    ### BEGIN SOLUTION
    """The setup's verdicts on an environment report, in its order and its own words."""
    out = []
    uv = report["uv --version"].split()
    if uv[:1] != ["uv"] or uv[1] != "0.12.0":
        out.append("uv 0.12.0 is required")
    python = report["python -V"].split()[1]
    if python.split(".")[:2] != ["3", "11"]:
        out.append(f"Python is at {python}; expected 3.11")
    gcc = re.match(r"gcc \([^)]*\) (\S+)", report["gcc --version"]).group(1)
    if int(gcc.split(".")[0]) < 11:
        out.append(f"GCC is at {gcc}; expected >= 11")
    listed = report[LS_SET_ENV].splitlines()
    if CANN_SET_ENV not in listed:
        out.append("CANN set_env.sh was not found.")
    if ATB_SET_ENV not in listed:
        out.append("NNAL/ATB is required")
    rows = [line.split() for line in report["uv pip list"].splitlines()]  # the header rows name no package
    installed = {row[0].lower().replace("_", "-"): row[1] for row in rows}
    for name, pinned in PINS.items():
        version = installed[name.replace("_", "-")]
        if version.split("+")[0] != pinned:
            out.append(f"{name} is at {version}; expected {pinned}")
    for name, pinned in COMMITS.items():
        head = report[f"git -C runtime_sources/{name} rev-parse --short HEAD"].strip()
        if not (head.startswith(pinned) or pinned.startswith(head)):
            out.append(f"{name} is at {head}; expected {pinned}")
    return out
    ### STUB
    # """Return the list of verdicts (the exact strings above), in the order of the checks; [] when all pass."""
    # raise NotImplementedError("implement setup_verdicts")
    ### END SOLUTION


def guard_verdict(report):
    ### BEGIN SOLUTION
    """The message of the first launch guard that fails, or None."""
    env = dict(line.split("=", 1) for line in report["env"].splitlines() if "=" in line)
    if env.get("NNODES", "1") != "1" or env.get("NPUS_PER_NODE", "2") != "2":
        return "This backend requires exactly one node with two NPUs."
    if "ASCEND_RT_VISIBLE_DEVICES" in env:
        visible = len(env["ASCEND_RT_VISIBLE_DEVICES"].split(","))
    else:
        visible = len(re.findall(r"^/dev/davinci\d+$", report["ls /dev/davinci*"], re.M))
    if visible != 2:
        return f"Expected exactly two visible NPUs, got {visible}."
    return None
    ### STUB
    # """Return the first failing guard's message (exact string above), or None when both guards pass."""
    # raise NotImplementedError("implement guard_verdict")
    ### END SOLUTION

# %% [markdown]
# ## 自查（仅公开用例）
#
# ---
#
# ## Self-check (public cases only)

# %% tags=["self-check"]
from exercises.lab.selfcheck import show

show("ready host", lambda: setup_verdicts(READY), [])
show("FSDP host", lambda: setup_verdicts(FSDP_HOST),
     ["uv 0.12.0 is required", "CANN set_env.sh was not found.", "NNAL/ATB is required",
      "torch_npu is at 2.9.0; expected 2.12.0rc1"])
show("guards, ready host", lambda: guard_verdict(READY), None)
show("guards, one card visible", lambda: guard_verdict(FSDP_HOST), "Expected exactly two visible NPUs, got 1.")
show("guards, two nodes", lambda: guard_verdict({**READY, "env": READY["env"] + "NNODES=2\n"}),
     "This backend requires exactly one node with two NPUs.")

# %% tags=["grader"]
# Grader only: never in the template or the solution. The checks' calls (public and hidden reports) are in
# cases.json next to this file; typical mistakes are patches of the solution with the score each must get.
MISTAKES = [
    {"name": "gcc_string_compare", "score": 9.25, "fails": {"setup_verdicts": "as a number"},
     "patch": [{"find": 'if int(gcc.split(".")[0]) < 11:', "replace": 'if gcc < "11":'}]},
    {"name": "local_label_kept", "score": 4.375, "fails": {"setup_verdicts": "local label"},
     "patch": [{"find": 'if version.split("+")[0] != pinned:', "replace": "if version != pinned:"}]},
    {"name": "path_in_text", "score": 8.5, "fails": {"setup_verdicts": "equals its path"},
     "patch": [{"find": "listed = report[LS_SET_ENV].splitlines()", "replace": "listed = report[LS_SET_ENV]"}]},
    {"name": "davinci_manager_counted", "score": 8.8571, "fails": {"guard_verdict": "davinci_manager"},
     "patch": [{"find": 'visible = len(re.findall(r"^/dev/davinci\\d+$", report["ls /dev/davinci*"], re.M))',
                "replace": 'visible = len(report["ls /dev/davinci*"].split())'}]},
]

RULES = {
    "setup_verdicts": [
        {"id": "check_order", "stated": "Check in this order",
         "hint": {"en": "Run the six checks in their stated order and return one exact sentence per failed check.",
                  "zh": "按说明的顺序执行六项检查，每项失败的检查返回一句逐字一致的结论。"}},
        {"id": "uv_version", "stated": "a version other than 0.12.0, or no uv at all",
         "hint": {"en": "uv must report exactly 0.12.0; a missing uv gives the same verdict.",
                  "zh": "uv 必须恰好是 0.12.0；没有 uv 时给出同一条结论。"}},
        {"id": "python_minor", "stated": "must have major.minor 3.11",
         "hint": {"en": "Only Python's major.minor version counts, and it must be 3.11.",
                  "zh": "只看 Python 的主.次版本，必须是 3.11。"}},
        {"id": "gcc_major", "stated": "its major version must be >= 11",
         "hint": {"en": "Compare GCC's major version as a number (9 < 11 although '9' > '11' as text).",
                  "zh": "GCC 主版本要按数字比较（作为文本 '9' > '11'，但 9 < 11）。"}},
        {"id": "set_env_lines", "stated": "a line equals its path exactly",
         "hint": {"en": "A set_env.sh exists only when a line of the ls output equals its path; ls's error line names the path too.",
                  "zh": "只有 ls 输出中某一行等于该路径时 set_env.sh 才存在；ls 的出错行里也有这个路径。"}},
        {"id": "package_pins", "stated": "Names compare case-insensitively",
         "hint": {"en": "Find each pinned package whatever its case and with '-' and '_' alike, and name it as PINS does.",
                  "zh": "查找固定的包时不区分大小写、'-' 与 '_' 视为相同，结论里用 PINS 中的包名。"}},
        {"id": "local_label", "stated": "without a local label after",
         "hint": {"en": "Drop a version's local label after '+' before comparing, and quote the version as listed.",
                  "zh": "比较前去掉版本中 '+' 之后的本地标签，结论中引用列表里的原版本。"}},
        {"id": "commit_prefix", "stated": "either hash is a prefix of the other",
         "hint": {"en": "An abbreviated commit matches its pin when either hash is a prefix of the other.",
                  "zh": "缩写提交号只要一方是另一方的前缀，就与固定提交一致。"}},
    ],
    "guard_verdict": [
        {"id": "env_lines", "stated": "a line without `=` continues a multi-line value",
         "hint": {"en": "Read env as NAME=value lines split at the first '='; skip the lines without '='.",
                  "zh": "env 按 名称=值 逐行读取，在第一个 '=' 处拆开；跳过不含 '=' 的行。"}},
        {"id": "node_guard", "stated": "must be 1 and 2",
         "hint": {"en": "NNODES must be 1 and NPUS_PER_NODE 2, counting unset variables as 1 and 2.",
                  "zh": "NNODES 必须为 1、NPUS_PER_NODE 必须为 2，未设置时分别按 1 和 2 计。"}},
        {"id": "visible_env", "stated": "the number of comma-separated ids in it",
         "hint": {"en": "With ASCEND_RT_VISIBLE_DEVICES set, the visible NPUs are the ids it lists.",
                  "zh": "设置了 ASCEND_RT_VISIBLE_DEVICES 时，可见 NPU 就是它列出的编号。"}},
        {"id": "visible_host", "stated": "is not an NPU",
         "hint": {"en": "Unset, count only the /dev/davinci<digits> lines; davinci_manager is not an NPU.",
                  "zh": "未设置时只数 /dev/davinci<数字> 的行；davinci_manager 不是 NPU。"}},
        {"id": "first_failure", "stated": "stops at the first failure",
         "hint": {"en": "The guards run in order and the first failure is the only message.",
                  "zh": "检查按顺序执行，只返回第一条失败的消息。"}},
    ],
}

EQUIVALENT = [
    {"mutant": "stmt_drop:6b056bb6:1",
     "reason": "dropping the final `return None` leaves a function that falls off its end, which returns None too"},
]
