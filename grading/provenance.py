"""Provenance: a graded callable must be the learner's own code, not the runtime's answer.

Each exercise declares a policy (exercise.toml `[policy]`, grading/exercise.py::Policy): `own` callables
the learner writes, `forbid` modules whose code would answer the exercise. Two layers enforce it:

1. the sandbox view (grading/sandbox/views.py): forbidden modules do not exist in the kernel;
2. this module: a grader cell (grading/provenance_kernel.py, installed before learner code) reports where
   each `own` callable's code comes from and what it references; `judge` turns that, and a static scan
   of the submitted cells for imports of forbidden modules, into verdicts, and `enforce` sets every
   affected check to 0 with a bilingual message saying why.

Layer 2 also covers unsafe-local mode, where nothing can be hidden. It is best effort against a learner
who rewrites code objects in their own process; layer 1 is what such a learner cannot get around.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from grading.exercise import Exercise, Manifest
from grading.result import CheckResult

LABEL = "provenance"
_KERNEL_SOURCE = Path(__file__).with_name("provenance_kernel.py").read_text(encoding="utf-8")
_RUNTIME_DIRS = ("/site-packages/", "/dist-packages/", "/exercises/lab/", "/lib/python3")

MESSAGES = {
    "not_function": {
        "en": "{name} must be a function you define in your notebook (found {what}); this task scores 0.",
        "zh": "{name} 必须是你在 notebook 中自己定义的函数（实际是 {what}），本项记 0 分。",
    },
    "not_yours": {
        "en": "{name} is not your code: it comes from {where}, not from your notebook cells; write it "
        "yourself (this task scores 0).",
        "zh": "{name} 不是你写的代码：它来自 {where}，而不是你的 notebook 单元；请自己实现（本项记 0 分）。",
    },
    "forbidden_ref": {
        "en": "{name} calls {ref} from {module}, which this exercise asks you to implement yourself; "
        "this task scores 0.",
        "zh": "{name} 调用了 {module} 中的 {ref}，而本练习要求你自己实现它；本项记 0 分。",
    },
    "forbidden_module": {
        "en": "{name} uses the module {module}, whose code this exercise asks you to write yourself; "
        "this task scores 0.",
        "zh": "{name} 使用了模块 {module}，而本练习要求你自己写出这部分代码；本项记 0 分。",
    },
    "forbidden_import": {
        "en": "Your notebook imports {module} (code cell {cell}), whose code this exercise asks you to write "
        "yourself, so {name} cannot count as your work; this task scores 0.",
        "zh": "你的 notebook 导入了 {module}（第 {cell} 个代码单元），而本练习要求你自己写出这部分代码，"
        "因此 {name} 不能算作你的成果；本项记 0 分。",
    },
    "unverified": {
        "en": "Could not verify that {name} is your own code (its inspection failed); this task scores 0.",
        "zh": "无法确认 {name} 是你自己写的代码（检查失败），本项记 0 分。",
    },
}


def _msg(key: str, lang: str, **params: Any) -> str:
    entry = MESSAGES[key]
    return (entry["zh"] if lang.startswith("zh") else entry["en"]).format(**params)


def seed_source(handle: str) -> str:
    """Lines for the seed cell: install the reporter before any learner code runs."""
    return (
        "def _titangrade_prov_boot():\n"
        "    ns = {'__name__': 'titangrade_provenance'}\n"
        f"    exec(compile({_KERNEL_SOURCE!r}, '<titangrade-provenance>', 'exec'), ns)\n"
        "    return ns['install']()\n"
        f"{handle} = _titangrade_prov_boot()\n"
        "del _titangrade_prov_boot\n"
    )


def cell_source(handle: str, nonce: str, names: tuple[str, ...], timeout_s: float) -> str:
    return f"{handle}({nonce!r}, {list(names)!r}, {timeout_s!r})\n"


def _forbidden(module: str, forbid: tuple[str, ...], file: str = "") -> str | None:
    """The forbidden module that `module` is (or lies in), or whose source tree holds `file`: code
    loaded from a forbidden file under another module name is still that code."""
    for f in forbid:
        if module == f or module.startswith(f + "."):
            return f
        tail = "/" + f.replace(".", "/")
        if file and (tail + "/" in file or file.endswith(tail + ".py")):
            return f
    return None


def scan_imports(sources: list[str], forbid: tuple[str, ...]) -> tuple[str, int, bool] | None:
    """(forbidden module, 0-based code cell as in cell reports, whether that cell is a `%%writefile`) of
    the first import of a forbidden module in the learner's code cells: `import`, `from ... import`, and
    importlib.import_module/__import__ with a literal name."""
    if not forbid:
        return None
    for index, src in enumerate(sources):
        writes_file = src.lstrip().startswith("%%writefile")
        lines = [ln for ln in src.splitlines() if not ln.lstrip().startswith(("%", "!"))]
        try:
            tree = ast.parse("\n".join(lines))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
                func = node.func
                fname = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if fname in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                    names = [node.args[0].value]
            for name in names:
                hit = _forbidden(name, forbid)
                if hit:
                    return hit, index, writes_file
    return None


def judge(
    manifest: Manifest, payload: dict[str, Any] | None, sources: list[str], *, lang: str = "en"
) -> dict[str, str]:
    """{answer name: why it scores 0}. An `own` callable is judged by where its code comes from and what
    it reaches (the kernel's report); a value answer, which has no code to inspect, by whether the
    notebook imports a forbidden module (every answer, when the import is in a `%%writefile` cell: that
    code runs in processes the report cannot see). `payload` is the provenance cell's output; None when the
    kernel gave no answers at all (its checks fail on their own), {} when only the report is missing."""
    forbid = manifest.policy.forbid
    verdicts: dict[str, str] = {}
    hit = scan_imports(sources, forbid)
    if hit:
        for answer in manifest.answers:
            # a %%writefile module runs in launched processes the kernel-side report cannot see into
            if answer.kind != "function" or hit[2]:
                verdicts[answer.name] = _msg("forbidden_import", lang, module=hit[0], cell=hit[1], name=answer.name)
    reports = (payload or {}).get("provenance")
    for name in manifest.own:
        if name in verdicts:
            continue
        report = reports.get(name) if isinstance(reports, dict) else None
        if not isinstance(report, dict):
            if payload is not None:
                verdicts[name] = _msg("unverified", lang, name=name)
            continue
        kind = report.get("kind")
        if kind == "missing":
            continue  # its checks fail on their own
        if kind == "not_function":
            what = f"{report.get('module', '?')}.{report.get('qualname', '?')}"
            verdicts[name] = _msg("not_function", lang, name=name, what=what)
            continue
        if kind != "function":
            verdicts[name] = _msg("unverified", lang, name=name)
            continue
        file = str(report.get("file", ""))
        module = str(report.get("module", ""))
        if (
            module != "__main__"
            or not report.get("in_main")
            or any(d in file for d in _RUNTIME_DIRS)
            or _forbidden(module, forbid, file)
        ):
            verdicts[name] = _msg("not_yours", lang, name=name, where=module or "?")  # no host paths
            continue
        for ref in report.get("refs", []):
            pair = isinstance(ref, list) and len(ref) == 2
            ref_name, ref_file = (str(ref[0]), str(ref[1])) if pair else (str(ref), "")
            ref_module, _, qual = ref_name.partition(":")
            if _forbidden(ref_module, forbid, ref_file):
                verdicts[name] = (
                    _msg("forbidden_ref", lang, name=name, ref=qual, module=ref_module)
                    if qual
                    else _msg("forbidden_module", lang, name=name, module=ref_module)
                )
                break
    return verdicts


def enforce(exercise: Exercise, checks: list[CheckResult], verdicts: dict[str, str]) -> list[CheckResult]:
    """Every check reading an answer with a verdict scores 0; its feedback says why."""
    answer_of = {c.name: c.answer for c in exercise.manifest.checks}
    for result in checks:
        why = verdicts.get(answer_of.get(result.name, ""))
        if why:
            result.score, result.passed, result.feedback = 0.0, False, why
    return checks
