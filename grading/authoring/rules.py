"""Stated rules per check: `RULES` in a master's grader cell (issue 29; docs/exercise-format.md, *Rules*).

Each check lists the rules its notebook states (`stated`: a phrase found verbatim in the learner template),
and every hidden call names the rule(s) it tests, so a failing case's feedback is that rule's hint. `build`
refuses, as authoring errors, a check without rules, a rule no call tests, a hidden call naming no rule, a
rule the template does not state, and a hidden call whose argument types go beyond the public calls'.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path
from typing import Any

from grading.authoring.arg_shapes import beyond, strings_in
from grading.authoring.master import AuthoringError, Master
from grading.authoring.policy_note import policy_markdown
from grading.exercise import Exercise
from grading.steps.grader_cells import MIN_SCRUB_CHARS

# Every master declares RULES (issue 29): one without them is refused. Kept as a switch so a course that
# imports older masters can build them while it writes their RULES; a master that declares RULES is always
# checked fully.
REQUIRE_RULES = True
RULE_ID = re.compile(r"[a-z][a-z0-9_]*")
RULE_KEYS, RULE_OPTIONAL = {"id", "stated", "hint"}, {"types"}
HINTS_FIELD = "rule_hints"  # answer-file field of a function check: {rule id: hint}, in RULES order


class RuleErrors(AuthoringError):
    """Every rule problem of one master at once (each `file:line: problem` + `fix:`), so an author fixes
    them in one pass."""

    def __init__(self, problems: list[AuthoringError]) -> None:
        first = problems[0]
        super().__init__(first.path, first.line, first.problem, first.fix)
        self.problems = problems
        self.args = ("\n".join(str(p) for p in problems),)

    def __str__(self) -> str:
        return str(self.args[0])


def normalised(text: str) -> str:
    """Whitespace runs as one space, case-folded: how `stated` and `types` phrases are matched."""
    return " ".join(text.split()).casefold()


def template_text(master: Master) -> str:
    """What the learner template states, normalised: its markdown cells, and in its code cells the stub
    lines, comments and string literals (docstrings, messages) it shows (the generated policy cell aside)."""
    parts: list[str] = []
    for cell in master.learner_cells:
        if cell.kind == "markdown":
            parts.append(cell.template)
            continue
        solution = set(cell.solution.split("\n"))
        parts.extend(ln for ln in cell.template.split("\n") if ln not in solution)  # the stub's lines
        parts.extend(_code_words(cell.template))
    return normalised("\n".join(parts))


def _code_words(source: str) -> list[str]:
    words: list[str] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                words.append(tok.string.lstrip("#"))
            elif tok.type == tokenize.STRING:
                try:
                    words.append(str(ast.literal_eval(tok.string)))
                except (ValueError, SyntaxError):  # an f-string: its text as written
                    words.append(tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):  # not Python as a whole: every comment line
        words += [ln.split("#", 1)[1] for ln in source.split("\n") if "#" in ln]
    return words


def signature(master: Master, name: str) -> set[str] | None:
    """Parameter names of `def name(...)` as the template shows it (None: the template defines no such function)."""
    for cell in master.learner_cells:
        if cell.kind != "code":
            continue
        src = "\n".join(ln for ln in cell.template.split("\n") if not ln.lstrip().startswith(("%", "!")))
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                a = node.args
                return {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
    return None


# -- where things are written --------------------------------------------------------------------------------


class _Lines:
    """Lines of CHECKS entries, their calls, RULES entries and rules, read from the grader cells' syntax."""

    def __init__(self, master: Master) -> None:
        self.master = master
        self.sidecar = master.path.parent / "cases.json"
        self.at: dict[tuple, int] = {}
        for offset, source in master.grader_sources:
            for node in ast.parse(source).body:
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
                    self._walk(node.targets[0], node.value, offset)

    def _walk(self, target: ast.expr, table: ast.Dict, offset: int) -> None:
        name = target.id if isinstance(target, ast.Name) else ""
        for key, value in zip(table.keys, table.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                continue
            self.at[(name, key.value)] = offset + key.lineno - 1
            items: list[ast.expr] = []
            if name == "RULES" and isinstance(value, ast.List):
                items = value.elts
            elif name == "CHECKS" and isinstance(value, ast.Dict):
                items = next(
                    (
                        v.elts
                        for k, v in zip(value.keys, value.values, strict=True)
                        if _is_key(k, "calls") and isinstance(v, ast.List)
                    ),
                    [],
                )
            for i, item in enumerate(items):
                self.at[(name, key.value, i)] = offset + item.lineno - 1

    def check(self, name: str, index: int | None = None) -> tuple[Path, int]:
        """Where CHECKS declares `name` (or its call `index`); cases.json line 1 for a check kept there."""
        key = ("CHECKS", name) if index is None else ("CHECKS", name, index)
        if key in self.at:
            return self.master.path, self.at[key]
        if ("CHECKS", name) in self.at:
            return self.master.path, self.at[("CHECKS", name)]
        return (self.sidecar, 1) if self.sidecar.exists() else (self.master.path, self.master.grader_line or 1)

    def rule(self, check: str, index: int | None = None) -> int:
        key = ("RULES", check) if index is None else ("RULES", check, index)
        return self.at.get(key) or self.at.get(("RULES", check)) or self.master.rules_line or 1


def _is_key(node: ast.expr | None, name: str) -> bool:
    return isinstance(node, ast.Constant) and node.value == name


# -- the checks ----------------------------------------------------------------------------------------------


def check_rules(ex: Exercise, master: Master) -> None:
    """Raise RuleErrors listing every rule problem of `master` (nothing when it has none, or when it declares
    no RULES while REQUIRE_RULES is off)."""
    problems = rule_problems(ex, master)
    if problems:
        raise RuleErrors(problems)


def rule_problems(ex: Exercise, master: Master) -> list[AuthoringError]:
    if master.rules is None:
        if not REQUIRE_RULES:
            return []
        return [
            AuthoringError(
                master.path,
                master.grader_line or 1,
                "the master declares no RULES: the rules its notebook states, and which cases test each",
                'add RULES = {"<check>": [{"id": ..., "stated": "<phrase in the notebook>", "hint": {"en": ..., '
                '"zh": ...}}]} to the grader cell and name them in each call ("rules": [...])',
            )
        ]
    lines = _Lines(master)
    found: list[AuthoringError] = []

    def problem(path: Path, line: int, text: str, fix: str) -> None:
        found.append(AuthoringError(path, line, text, fix))

    rules = master.rules
    if not isinstance(rules, dict) or not all(isinstance(v, list) for v in rules.values()):
        problem(
            master.path,
            master.rules_line,
            "RULES must be a dict of check name -> list of rules",
            'write RULES = {"<check>": [{"id": ..., "stated": ..., "hint": {"en": ..., "zh": ...}}]}',
        )
        return found
    stated = f"{template_text(master)} {normalised(policy_markdown(ex.manifest))}"  # build adds the policy cell
    declared = {c.name: c for c in ex.manifest.checks}
    for name in rules:
        if name not in declared:
            problem(
                master.path,
                lines.rule(name),
                f"RULES names {name!r}, which is not a check of exercise.toml",
                f"use one of {sorted(declared)}, or delete the entry",
            )
    for check in ex.manifest.checks:
        entries = rules.get(check.name) or []
        if not entries:
            problem(
                master.path,
                lines.rule(check.name) if check.name in rules else master.rules_line,
                f"check {check.name!r} lists no rule in RULES",
                f'add "{check.name}": [{{"id": ..., "stated": "<the phrase of the notebook stating it>", '
                '"hint": {"en": ..., "zh": ...}}] to RULES',
            )
            continue
        ids = _rule_entries(master, check.name, entries, stated, lines, problem)
        if check.kind == "function":
            _call_problems(ex, master, check, ids, lines, problem)
            _hint_problems(master, check.name, entries, ids, stated, lines, problem)
    return found


def _hint_problems(master, check: str, entries: list, ids: dict[str, dict], stated: str, lines: _Lines, problem):
    """A rule's hint is shown to learners (and is public text the scrub spares): it may not hold a string of a
    hidden case of its check that the template does not show."""
    calls = master.checks.get(check, {}).get("calls", [])
    hidden = {
        s
        for c in calls
        if not c.get("public", False)
        for s in strings_in([c.get("args", []), c.get("kwargs", {}), c.get("expect")])
        if len(s) >= MIN_SCRUB_CHARS and normalised(s) not in stated
    }
    for i, rule in enumerate(entries):
        if not isinstance(rule, dict) or ids.get(str(rule.get("id"))) is not rule or not isinstance(rule["hint"], dict):
            continue
        text = " ".join(str(v) for v in rule["hint"].values())
        leaked = sorted(s for s in hidden if s in text)
        if leaked:
            problem(
                master.path,
                lines.rule(check, i),
                f"rule {rule['id']!r}: its hint names {leaked[0][:60]!r}, a hidden case's value the template "
                "does not show",
                "let the hint speak of the rule, never of a hidden input or expected value",
            )


def _rule_entries(master, check: str, entries: list, stated: str, lines: _Lines, problem) -> dict[str, dict]:
    """Each rule's own form and phrases; returns the well-formed ones by id, in RULES order."""
    ids: dict[str, dict] = {}
    for i, rule in enumerate(entries):
        at = lines.rule(check, i)
        keys = set(rule) if isinstance(rule, dict) else set()
        if not isinstance(rule, dict) or RULE_KEYS - keys or keys - RULE_KEYS - RULE_OPTIONAL:
            what = (
                f"missing {sorted(RULE_KEYS - keys)}"
                if RULE_KEYS - keys
                else f"unknown keys {sorted(keys - RULE_KEYS - RULE_OPTIONAL)}"
            )
            problem(
                master.path,
                at,
                f"rule {i + 1} of check {check!r}: {what if isinstance(rule, dict) else 'not a dict'}",
                'a rule is {"id": ..., "stated": ..., "hint": {"en": ..., "zh": ...}} and optionally "types"',
            )
            continue
        rid = rule["id"]
        if not isinstance(rid, str) or not RULE_ID.fullmatch(rid):
            problem(master.path, at, f"rule id {rid!r} of check {check!r} is not snake case", "use e.g. 'vocab_size'")
            continue
        if rid in ids:
            problem(master.path, at, f"rule {rid!r} is declared twice in check {check!r}", "rename one")
            continue
        hint = rule["hint"]
        if not (isinstance(hint, dict) and all(isinstance(hint.get(k), str) and hint[k].strip() for k in ("en", "zh"))):
            problem(
                master.path,
                at,
                f"rule {rid!r}: its hint is not {{'en': ..., 'zh': ...}} with both texts",
                "write the feedback a learner reads when a case of this rule fails, in English and Chinese",
            )
        for field in ("stated", *(("types",) if "types" in rule else ())):
            phrase = rule[field]
            if not isinstance(phrase, str) or not phrase.strip():
                problem(
                    master.path,
                    at,
                    f"rule {rid!r}: {field!r} must be a non-empty phrase",
                    "quote the words of the notebook that state it",
                )
            elif normalised(phrase) not in stated:
                problem(
                    master.path,
                    at,
                    f"rule {rid!r}: its {field} phrase {phrase[:80]!r} is not in the learner template's text",
                    "quote the notebook (a markdown cell, or a stub, docstring or comment line the template "
                    "shows) word for word, or state the rule there first",
                )
        ids[rid] = rule
    return ids


def _call_problems(ex: Exercise, master: Master, check, ids: dict[str, dict], lines: _Lines, problem) -> None:
    calls = master.checks.get(check.name, {}).get("calls", [])
    publics = [c for c in calls if c.get("public", False)]
    if not publics:  # a check of hidden cases only: what the checks on the same function show publicly
        publics = [
            c
            for other in ex.manifest.checks
            if other.kind == "function" and other.answer == check.answer
            for c in master.checks.get(other.name, {}).get("calls", [])
            if c.get("public", False)
        ]
    used: set[str] = set()
    params = signature(master, check.answer)
    for n, call in enumerate(calls):
        path, line = lines.check(check.name, n)
        hidden = not call.get("public", False)
        what = f"{'hidden' if hidden else 'public'} call {n + 1} of check {check.name!r}"
        named = call.get("rules", [])
        if not isinstance(named, list) or not all(isinstance(r, str) for r in named):
            problem(path, line, f'{what}: "rules" must be a list of rule ids', f"use ids of {sorted(ids)}")
            continue
        unknown = [r for r in named if r not in ids]
        if unknown:
            problem(
                path,
                line,
                f"{what} names rule {unknown[0]!r}, which RULES does not list for {check.name!r}",
                f"use one of {sorted(ids)}, or add the rule to RULES",
            )
        used.update(named)
        if not hidden:
            continue
        if not named:
            problem(
                path, line, f"{what} names no rule", f'add "rules": [...] with the rule(s) it tests, of {sorted(ids)}'
            )
        waived = any("types" in ids.get(r, {}) for r in named)
        for text, fix in beyond(call, publics, params, waived=waived, answer=check.answer):
            problem(path, line, f"{what}: {text}", fix)
    for rid in ids:
        if rid not in used:
            problem(
                master.path,
                lines.rule(check.name, list(ids).index(rid)),
                f"rule {rid!r} of check {check.name!r} is tested by no call",
                'name it in the "rules" of the calls that test it, or add a hidden call for it',
            )


def rule_hints(ex: Exercise, master: Master, check_name: str) -> dict[str, Any] | None:
    """{rule id: hint} of a function check, in RULES order, for the answer file (None: nothing to carry)."""
    kinds = {c.name: c.kind for c in ex.manifest.checks}
    rules = master.rules.get(check_name) if isinstance(master.rules, dict) else None
    if kinds.get(check_name) != "function" or not isinstance(rules, list):
        return None
    hints = {r["id"]: r["hint"] for r in rules if isinstance(r, dict) and "id" in r and "hint" in r}
    return hints or None
