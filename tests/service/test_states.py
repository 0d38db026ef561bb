"""Submission and job states are service.states enums: no bare status string is left in service/.

The scan looks only where a string is used as a status: compared with, assigned to, passed as or
keyed by something named status (or state), returned, or iterated as statuses. The same words as
progress-event names (`event="queued"`, `kind == "done"`), catalogue keys or prose are not statuses.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from service.states import JobStatus, SubmissionStatus

SERVICE = Path(__file__).resolve().parents[2] / "service"
STATUSES = {s.value for s in SubmissionStatus} | {s.value for s in JobStatus}
_NAMED_STATUS = re.compile(r"status|state", re.IGNORECASE)


def _literals(node: ast.AST | None) -> list[ast.Constant]:
    """The status strings `node` is made of directly: itself, either branch of `a if c else b`, the items
    of a tuple, list or set."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in STATUSES:
        return [node]
    if isinstance(node, ast.IfExp):
        return _literals(node.body) + _literals(node.orelse)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [c for item in node.elts for c in _literals(item)]
    return []


def _named_status(node: ast.AST) -> bool:
    return bool(_NAMED_STATUS.search(ast.unparse(node)))


def _assigned(target: ast.AST, value: ast.AST | None) -> list[ast.Constant]:
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
        return [c for t, v in zip(target.elts, value.elts, strict=True) for c in _assigned(t, v)]
    if not _named_status(target):
        return []
    if isinstance(value, ast.Call):  # a column's default: mapped_column(..., default="queued")
        return [c for k in value.keywords if k.arg == "default" for c in _literals(k.value)]
    return _literals(value)


def _found(node: ast.AST) -> list[ast.Constant]:
    match node:
        case ast.Compare(left=left, comparators=rest):
            operands = [left, *rest]
            if any(_named_status(o) for o in operands if not _literals(o)):
                return [c for o in operands for c in _literals(o)]
        case ast.Call(func=ast.Attribute(attr="in_" | "get", value=column), args=args) if _named_status(column):
            return [c for a in args[:1] for c in _literals(a)]  # Job.status.in_(...), by_status.get("running")
        case ast.Call(keywords=keywords):
            return [c for k in keywords if k.arg and _NAMED_STATUS.search(k.arg) for c in _literals(k.value)]
        case ast.Dict(keys=keys, values=values):
            return [
                c
                for k, v in zip(keys, values, strict=True)
                if isinstance(k, ast.Constant) and isinstance(k.value, str) and _NAMED_STATUS.search(k.value)
                for c in _literals(v)
            ]
        case ast.Assign(targets=targets, value=value):
            return [c for t in targets for c in _assigned(t, value)]
        case ast.AnnAssign(target=target, value=value):
            return _assigned(target, value)
        case ast.Return(value=value):
            return _literals(value)
        case ast.For(target=target, iter=iterable) if _named_status(target):
            return _literals(iterable)
    return []


def bare_statuses(source: str) -> list[str]:
    """`line: "word"` for each status string used as a status in `source`."""
    hits = {(c.lineno, c.value) for node in ast.walk(ast.parse(source)) for c in _found(node)}
    return [f"{line}: {value!r}" for line, value in sorted(hits)]


@pytest.mark.parametrize(
    "planted",
    [
        'if sub.status == "queued": pass',
        'q = select(Job).where(Job.status.in_(("queued", "running")))',
        'stmt = update(Job).values(status="done")',
        'sub.status, sub.message = "not_gradable", "x"',
        'payload = {"status": "superseded", "score": None}',
        'ok = payload.get("status") != "not_gradable"',
        'def fault():\n    return "failed"',
        'status: Mapped[str] = mapped_column(String(20), default="queued")',
        'TERMINAL_STATUSES = ("graded", "error")',
        'for status in ("queued", "cancelled"): pass',
        'row = {"status": "cancelled" if gone else "queued"}',
        'live = sub.status in ("queued", "running")',
        'busy = jobs_by_status(s).get("running")',
    ],
)
def test_the_scan_finds_a_planted_status_literal(planted):
    assert bare_statuses(planted)


@pytest.mark.parametrize(
    "unrelated",
    [
        'session.add(ProgressEvent(submission_id=i, event="queued", data={"priority": 0}))',
        'if event.get("event") == "done": pass',
        'if obj.event in ("queued", "requeued"): pass',
        'LABELS = {"queued": ("queued", "排队中"), "error": ("error", "出错")}',
        'body = {"error": {"code": code, "message": message}}',
        'log.info("job %s done", job_id)',
        "if sub.status == SubmissionStatus.QUEUED: pass",
    ],
)
def test_the_scan_leaves_other_words_alone(unrelated):
    assert bare_statuses(unrelated) == []


def test_no_bare_status_literal_in_service():
    found = {
        str(path.relative_to(SERVICE.parent)): hits
        for path in sorted(SERVICE.rglob("*.py"))
        if "migrations" not in path.parts and (hits := bare_statuses(path.read_text(encoding="utf-8")))
    }
    assert not found, f"use service.states.SubmissionStatus / JobStatus instead of these strings: {found}"


def test_the_members_are_the_stored_strings():
    """The database, the API and webhooks carry these exact strings; renaming a value is a migration."""
    assert [s.value for s in SubmissionStatus] == [
        "queued", "running", "superseded", "graded", "error", "not_gradable"
    ]  # fmt: skip
    assert [s.value for s in JobStatus] == ["queued", "running", "done", "failed", "cancelled"]
    assert f"{SubmissionStatus.NOT_GRADABLE}" == "not_gradable" and JobStatus.DONE == "done"
