"""Mutants of a master's solution regions: small plausible slips that its checks should catch.

Each operator rewrites one node of the solution's syntax tree (standard library `ast`) whose lines lie
inside a `### BEGIN SOLUTION` region; the cell's text changes only at that node's span, so the mutant
reads like the solution with one slip. A mutant that does not parse, or parses to the solution's tree,
is not generated; two mutants with the same text are one. A mutant's id is stable across unrelated edits
(no line numbers): `<operator>:<sha1 of the whitespace-normalised source line, 8 hex>:<n>`, n counting
equal (operator, line) pairs in the order of the master (docs/exercise-format.md#mutants).
"""

from __future__ import annotations

import ast
import copy
import hashlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from grading.authoring.master import AuthoringError, Cell, Master
from grading.codec import decode

# Operator names, in the order mutants of one node are listed (part of every id: never rename one).
OPERATORS = {
    "cmp": "comparison swapped (< <=, > >=, == !=, in / not in, is / is not)",
    "arith": "arithmetic swapped (+ -, * /, // %, ** *, << >>, & |)",
    "const_inc": "a number increased by one",
    "const_zero": "a number set to 0",
    "bool_flip": "True and False swapped",
    "str_empty": "a string emptied",
    "and_or": "`and` and `or` swapped",
    "not_drop": "`not` dropped",
    "neg_drop": "unary minus dropped",
    "if_pass": "an if's body replaced by `pass`",
    "if_true": "a condition forced True",
    "if_false": "a condition forced False",
    "stmt_drop": "a statement replaced by `pass`",
    "args_swap": "a call's first two positional arguments swapped",
    "return_public": "the function returns a public example's expected value",
    "slice_lo": "a slice's lower bound dropped",
    "slice_hi": "a slice's upper bound dropped",
    "loop_ctl": "`break` and `continue` swapped",
}
_ORDER = {name: i for i, name in enumerate(OPERATORS)}
CMP = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
    ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}  # fmt: skip
ARITH = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Mod,
    ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult, ast.LShift: ast.RShift, ast.RShift: ast.LShift,
    ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd, ast.BitXor: ast.BitAnd,
}  # fmt: skip
_DROPPABLE = (
    ast.Assign,
    ast.AugAssign,
    ast.AnnAssign,
    ast.Expr,
    ast.Return,
    ast.Raise,
    ast.Assert,
    ast.Delete,
    ast.For,
    ast.While,
    ast.With,
    ast.Try,
    ast.If,
)  # fmt: skip  imports, defs, classes, global/nonlocal, pass (and break/continue: loop_ctl) are never dropped
_BINOP_PREC = {
    ast.BitOr: 6, ast.BitXor: 7, ast.BitAnd: 8, ast.LShift: 9, ast.RShift: 9, ast.Add: 10, ast.Sub: 10,
    ast.Mult: 11, ast.Div: 11, ast.FloorDiv: 11, ast.Mod: 11, ast.MatMult: 11, ast.Pow: 13,
}  # fmt: skip

Span = tuple[int, int, int, int]  # lineno, col (utf-8 bytes), end_lineno, end_col, as ast gives them


@dataclass(frozen=True)
class Mutant:
    id: str
    operator: str
    cell: int  # index into master.learner_cells
    line: int  # the master file's line (for the report; not part of the id)
    before: str  # the source line, as in the solution
    after: str  # the same line in the mutant
    source: str  # the mutated cell's whole source
    function: str | None  # the top-level function or class holding the slip (None: module level)


@dataclass(frozen=True)
class _Candidate:
    operator: str
    span: Span
    text: str  # what replaces the span


def generate(master: Master, answers: dict[str, str] | None = None) -> list[Mutant]:
    """Every mutant of the master's solution regions, in master order. `answers` maps a function check to
    the answer it calls (exercise.toml), for `return_public`."""
    publics = _public_values(master, answers or {})
    out: list[Mutant] = []
    seen: set[str] = set()
    counts: Counter[tuple[str, str]] = Counter()
    for index, cell in enumerate(master.learner_cells):
        if cell.kind != "code" or not cell.has_solution or not cell.region:
            continue
        for mutant in _cell_mutants(master, index, cell, publics):
            if mutant.source in seen:
                continue
            seen.add(mutant.source)
            key = (mutant.operator, _line_hash(mutant.before_line))
            counts[key] += 1
            out.append(
                Mutant(
                    id=f"{mutant.operator}:{key[1]}:{counts[key]}",
                    operator=mutant.operator,
                    cell=index,
                    line=mutant.line,
                    before=mutant.before,
                    after=mutant.after,
                    source=mutant.source,
                    function=mutant.function,
                )
            )
    return out


def stale_equivalents(master: Master, mutants: list[Mutant]) -> list[AuthoringError]:
    """An EQUIVALENT entry whose id no generated mutant has: the line it named changed, or was removed."""
    ids = {m.id for m in mutants}
    return [
        AuthoringError(
            master.path,
            e.line,
            f"EQUIVALENT declares mutant {e.mutant!r}, which no longer matches a generated mutant (stale)",
            "delete the entry, or replace its id with the current one from `titangrade exercises mutants ID` "
            "if that mutant still survives",
        )
        for e in master.equivalent
        if e.mutant not in ids
    ]


def _line_hash(line: str) -> str:
    return hashlib.sha1(" ".join(line.split()).encode("utf-8")).hexdigest()[:8]


@dataclass(frozen=True)
class _Made:
    operator: str
    line: int
    before_line: str
    before: str
    after: str
    source: str
    function: str | None


def _cell_mutants(master: Master, index: int, cell: Cell, publics: dict[str, list[Any]]) -> Iterator[_Made]:
    lines = cell.solution.split("\n")
    parsed = _parse_text(lines)
    try:
        tree = ast.parse(parsed)
    except SyntaxError:
        return  # build reports a solution cell that does not parse
    original = ast.dump(tree)
    region = {k + 1 for k in cell.region}  # 1-based, as ast counts
    found: list[tuple[int, int, int, int, _Candidate, str | None]] = []
    for top in tree.body:
        owner = top.name if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else None
        for k, cand in enumerate(_candidates(top, publics)):
            l0, c0, l1, _ = cand.span
            if all(n in region for n in range(l0, l1 + 1)):
                found.append((l0, c0, _ORDER[cand.operator], k, cand, owner))
    for l0, _c0, _o, _k, cand, owner in sorted(found, key=lambda f: f[:4]):
        new_lines = _apply(lines, cand.span, cand.text)
        try:
            if ast.dump(ast.parse(_parse_text(new_lines))) == original:
                continue
        except SyntaxError:
            continue
        more = " ..." if cand.span[2] > l0 else ""
        yield _Made(
            operator=cand.operator,
            line=cell.line_nos[l0 - 1] if l0 - 1 < len(cell.line_nos) else cell.line,
            before_line=lines[l0 - 1],
            before=lines[l0 - 1].strip() + more,
            after=new_lines[l0 - 1].strip(),
            source="\n".join(new_lines),
            function=owner,
        )


def _parse_text(lines: list[str]) -> str:
    """The cell as Python: IPython magics and shell lines blanked (line numbers kept)."""
    return "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in lines)


def _apply(lines: list[str], span: Span, text: str) -> list[str]:
    l0, c0, l1, c1 = span
    head = lines[l0 - 1][: _chars(lines[l0 - 1], c0)]
    tail = lines[l1 - 1][_chars(lines[l1 - 1], c1) :]
    return [*lines[: l0 - 1], head + text + tail, *lines[l1:]]


def _chars(line: str, byte_col: int) -> int:
    """ast columns count UTF-8 bytes; string slicing counts characters."""
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


def _span(node: ast.AST) -> Span:
    return (node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or 0)  # type: ignore[attr-defined]


def _body_span(body: list[ast.stmt]) -> Span:
    return (body[0].lineno, body[0].col_offset, body[-1].end_lineno or 0, body[-1].end_col_offset or 0)


def _prec(node: ast.AST) -> int:
    """Python's binding strength of an expression's top operator (higher binds tighter)."""
    if isinstance(node, ast.NamedExpr):
        return -1
    if isinstance(node, ast.Lambda):
        return 0
    if isinstance(node, ast.IfExp):
        return 1
    if isinstance(node, ast.BoolOp):
        return 2 if isinstance(node.op, ast.Or) else 3
    if isinstance(node, ast.UnaryOp):
        return 4 if isinstance(node.op, ast.Not) else 12
    if isinstance(node, ast.Compare):
        return 5
    if isinstance(node, ast.BinOp):
        return _BINOP_PREC[type(node.op)]
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and node.value < 0:
        return 12
    return 20


def _expr(old: ast.AST, new: ast.AST) -> str:
    """The text replacing `old` by `new`, in parentheses where `new` binds more loosely."""
    text = ast.unparse(new)
    if _prec(new) < _prec(old):
        text = f"({text})"
    return text


def _is_print(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"


def _skipped(node: ast.AST) -> bool:
    """Subtrees never mutated: f-strings (3.11 positions inside them are unreliable) and output."""
    return isinstance(node, ast.JoinedStr) or _is_print(node)


def _children(node: ast.AST) -> Iterator[ast.AST]:
    if _quiet_statement(node):
        return  # a docstring emptied or a print changed: no graded value changes
    for name, value in ast.iter_fields(node):
        if name in ("annotation", "returns", "type_comment"):
            continue  # annotations are not behaviour
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, ast.AST) and not _skipped(child):
                yield child


def _walk(node: ast.AST, in_raise: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    yield node, in_raise
    for child in _children(node):
        yield from _walk(child, in_raise or isinstance(node, ast.Raise))


def _candidates(top: ast.stmt, publics: dict[str, list[Any]]) -> Iterator[_Candidate]:
    if _skipped(top):
        return
    if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef)) and top.name in publics:
        yield from _return_public(top, publics[top.name])
    for node, in_raise in _walk(top):
        yield from _node_candidates(node, in_raise)


def _node_candidates(node: ast.AST, in_raise: bool) -> Iterator[_Candidate]:
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in CMP:
                new = copy.deepcopy(node)
                new.ops[i] = CMP[type(op)]()
                yield _Candidate("cmp", _span(node), _expr(node, new))
    elif isinstance(node, ast.BinOp) and type(node.op) in ARITH and not _string_formatting(node):
        new_bin = copy.deepcopy(node)
        new_bin.op = ARITH[type(node.op)]()
        yield _Candidate("arith", _span(node), _expr(node, new_bin))
    elif isinstance(node, ast.AugAssign) and type(node.op) in ARITH:
        new_aug = copy.deepcopy(node)
        new_aug.op = ARITH[type(node.op)]()
        yield _Candidate("arith", _span(node), ast.unparse(new_aug))
    elif isinstance(node, ast.Constant):
        yield from _constant(node, in_raise)
    elif isinstance(node, ast.BoolOp):
        flipped = ast.BoolOp(op=ast.Or() if isinstance(node.op, ast.And) else ast.And(), values=node.values)
        yield _Candidate("and_or", _span(node), _expr(node, flipped))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub)):
        operator = "not_drop" if isinstance(node.op, ast.Not) else "neg_drop"
        yield _Candidate(operator, _span(node), _expr(node, node.operand))
    elif isinstance(node, (ast.If, ast.IfExp)):
        if isinstance(node, ast.If) and not (len(node.body) == 1 and isinstance(node.body[0], ast.Pass)):
            yield _Candidate("if_pass", _body_span(node.body), "pass")
        yield _Candidate("if_true", _span(node.test), "True")
        yield _Candidate("if_false", _span(node.test), "False")
    elif isinstance(node, ast.Call) and len(node.args) >= 2 and not _commutative(node):
        a, b = node.args[0], node.args[1]
        if not isinstance(a, ast.Starred) and not isinstance(b, ast.Starred) and ast.dump(a) != ast.dump(b):
            new_call = copy.deepcopy(node)
            new_call.args[0], new_call.args[1] = new_call.args[1], new_call.args[0]
            yield _Candidate("args_swap", _span(node), ast.unparse(new_call))
    elif isinstance(node, ast.comprehension):
        for cond in node.ifs:
            yield _Candidate("if_true", _span(cond), "True")
    elif isinstance(node, ast.Slice):
        for operator, bound in (("slice_lo", "lower"), ("slice_hi", "upper")):
            if getattr(node, bound) is not None:
                new_slice = copy.deepcopy(node)
                setattr(new_slice, bound, None)
                yield _Candidate(operator, _span(node), ast.unparse(new_slice))
    if isinstance(node, (ast.Break, ast.Continue)):
        yield _Candidate("loop_ctl", _span(node), "continue" if isinstance(node, ast.Break) else "break")
    no_else_if = isinstance(node, ast.If) and not node.orelse  # if_pass already drops what it does
    if isinstance(node, _DROPPABLE) and not _quiet_statement(node) and not no_else_if:
        yield _Candidate("stmt_drop", _span(node), "pass")


def _commutative(call: ast.Call) -> bool:
    """min(a, b) is max(b, a)'s twin: swapping their arguments is equivalent, so it is not made."""
    return isinstance(call.func, ast.Name) and call.func.id in ("min", "max")


def _string_formatting(node: ast.BinOp) -> bool:
    """`"a" + s` or `"%d" % n`: swapping the operator only raises TypeError, which no check needs to see."""
    return any(isinstance(side, (ast.Constant, ast.JoinedStr)) and isinstance(getattr(side, "value", ""), str)
               for side in (node.left, node.right))  # fmt: skip


def _quiet_statement(node: ast.AST) -> bool:
    """A docstring, `...` or a print: dropping it changes no graded value."""
    return isinstance(node, ast.Expr) and (isinstance(node.value, ast.Constant) or _is_print(node.value))


def _constant(node: ast.Constant, in_raise: bool) -> Iterator[_Candidate]:
    value = node.value
    if isinstance(value, bool):
        yield _Candidate("bool_flip", _span(node), repr(not value))
    elif isinstance(value, (int, float)):
        if value + 1 != value:
            yield _Candidate("const_inc", _span(node), _expr(node, ast.Constant(value + 1)))
        if value != 0:
            yield _Candidate("const_zero", _span(node), repr(type(value)(0)))
    elif isinstance(value, str) and value and not in_raise:  # an exception's message is not graded
        yield _Candidate("str_empty", _span(node), '""')


def _return_public(func: ast.FunctionDef | ast.AsyncFunctionDef, values: list[Any]) -> Iterator[_Candidate]:
    """The function's first statement replaced by `return <a public call's expected value>`."""
    first = func.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and len(func.body) > 1:
        first = func.body[1]  # keep the docstring
    for value in values:
        yield _Candidate("return_public", _span(first), f"return {value!r}")


def _public_values(master: Master, answers: dict[str, str]) -> dict[str, list[Any]]:
    """function name -> the distinct expected values of its checks' public calls (as Python literals)."""
    out: dict[str, list[Any]] = {}
    for check, data in master.checks.items():
        function = answers.get(check)
        if function is None:
            continue
        for call in data.get("calls", []) or []:
            if not (isinstance(call, dict) and call.get("public") and "expect" in call):
                continue
            value = decode(call["expect"])
            try:
                literal = ast.literal_eval(repr(value)) == value
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                literal = False
            if literal and value not in out.setdefault(function, []):
                out[function].append(value)
    return out
