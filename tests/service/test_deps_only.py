"""Routes get their collaborators through service/deps.py (an `Annotated` dependency in the signature), never
from `app.state`: what a route uses is then visible in its signature, and app.py and deps.py stay the only
modules that know what the state holds (STYLE.md, habit 12)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

SERVICE = Path(__file__).resolve().parents[2] / "service"
STATE_OWNERS = {"app.py", "deps.py", "wiring.py"}  # put things on app.state, or hand them out
ROUTE_MODULES = sorted(
    {*SERVICE.glob("*/routes.py"), *SERVICE.glob("web/*.py"), SERVICE / "ops.py", SERVICE / "http_errors.py"}
)


def app_state_reads(source: str) -> list[tuple[int, str]]:
    """Each `<x>.app.state` (a request's or connection's app) and each bare `app.state` in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Attribute) and node.attr == "state"):
            continue
        owner = node.value
        if (isinstance(owner, ast.Attribute) and owner.attr == "app") or (
            isinstance(owner, ast.Name) and owner.id == "app"
        ):
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_the_scan_sees_state_reads_and_leaves_the_request_own_state_alone():
    source = (
        "def f(request, app):\n"
        "    a = request.app.state.sessions\n"
        "    b = app.state.x\n"
        "    c = request.state.principal\n"
    )
    assert app_state_reads(source) == [(2, "request.app.state"), (3, "app.state")]


def test_the_route_modules_are_found():
    names = {str(p.relative_to(SERVICE)) for p in ROUTE_MODULES}
    assert {"submissions/routes.py", "lti/routes.py", "web/learner.py", "web/staff.py", "ops.py"} <= names


@pytest.mark.parametrize("module", ROUTE_MODULES, ids=lambda p: str(p.relative_to(SERVICE)))
def test_route_modules_read_nothing_from_app_state(module: Path):
    reads = app_state_reads(module.read_text())
    assert not reads, f"{module.relative_to(SERVICE)} reads {reads}: add an Annotated dependency to service/deps.py"


def test_no_module_reaches_app_state_through_a_request():
    """Outside app.py/deps.py (and the wiring), nothing reads the state through a request or a connection."""
    offenders = {
        str(path.relative_to(SERVICE)): reads
        for path in SERVICE.rglob("*.py")
        if path.name not in STATE_OWNERS or path.parent != SERVICE
        if (reads := [r for r in app_state_reads(path.read_text()) if r[1] != "app.state"])
    }
    assert not offenders, f"use a dependency from service/deps.py (or deps.settings_of in a handler): {offenders}"
