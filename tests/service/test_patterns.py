"""The shared text patterns (service/patterns.py): what they let through, and that the API's named fields
still carry them (a field without one let a NUL reach PostgreSQL once: a 500)."""
from __future__ import annotations

import re

import pytest

from service.patterns import PRINTABLE, PRINTABLE_NAME


@pytest.mark.parametrize("text", ["", "alice", "Ünïcødé name", "https://lms.example/issuer", "a b\u00a0c"])
def test_printable_text_passes(text):
    assert re.search(PRINTABLE, text)
    assert bool(re.search(PRINTABLE_NAME, text)) == bool(text)


@pytest.mark.parametrize("bad", ["\x00", "a\x00", "line\nbreak", "cr\r", "tab\there", "\x1f", "del\x7f"])
def test_control_characters_are_refused(bad):
    assert not re.search(PRINTABLE, bad) and not re.search(PRINTABLE_NAME, bad)


def test_the_fields_that_name_things_carry_the_patterns():
    from service.auth.schemas import TokenCreate
    from service.intake.routes import IntegrationCreate
    from service.intake.service import Learner

    def pattern(model, field):
        prop = model.model_json_schema()["properties"][field]
        return prop.get("pattern") or next(p["pattern"] for p in prop["anyOf"] if "pattern" in p)

    for model, field, expected in [
        (Learner, "subject", PRINTABLE), (Learner, "issuer", PRINTABLE), (Learner, "name", PRINTABLE),
        (IntegrationCreate, "issuer", PRINTABLE), (TokenCreate, "subject", PRINTABLE_NAME),
        (TokenCreate, "issuer", PRINTABLE_NAME), (TokenCreate, "name", PRINTABLE_NAME),
    ]:
        assert pattern(model, field) == expected, (model.__name__, field)


# Inputs that are not names and need no pattern: the uploaded file itself, and the intake notebook (parsed by
# pydantic's own JSON parser, which refuses lone surrogates; its bytes are stored as bytes, never as text).
_NOT_TEXT = {
    ("POST", "/api/v1/submissions", "notebook"),
    ("POST", "/api/v1/intake/submissions", "notebook"),
}


def _text_inputs(spec):
    """(method, path, where, schema) for every string an operation takes: parameters and body properties."""
    comps = spec["components"]["schemas"]

    def walk(schema, where, seen):
        if "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            if name not in seen:
                yield from walk(comps[name], where, seen | {name})
            return
        for key in ("anyOf", "oneOf", "allOf"):
            for sub in schema.get(key, []):
                yield from walk(sub, where, seen)
        for prop, sub in schema.get("properties", {}).items():
            yield from walk(sub, [*where, prop], seen)
        if isinstance(schema.get("items"), dict):
            yield from walk(schema["items"], [*where, "[]"], seen)
        if isinstance(schema.get("additionalProperties"), dict):
            yield from walk(schema["additionalProperties"], [*where, "*"], seen)
        if schema.get("type") == "string":
            yield where, schema

    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            for param in op.get("parameters", []):
                for where, schema in walk(param["schema"], [param["name"]], frozenset()):
                    yield method.upper(), path, where, schema
            for content in op.get("requestBody", {}).get("content", {}).values():
                for where, schema in walk(content["schema"], [], frozenset()):
                    yield method.upper(), path, where, schema


def test_every_text_input_of_the_api_has_a_rule(tmp_path, test_catalogue, svc):
    """A string the API takes has a pattern, an enum, a format or a cleaner (x-cleaned), else a NUL or a lone
    surrogate in it can reach the database: the 500 schemathesis found in the extension body (CI, stop 37)."""
    from service.app import create_app

    app = create_app(svc.settings(f"sqlite:///{tmp_path / 'p.db'}"), catalogue=test_catalogue)
    found = list(_text_inputs(app.openapi()))
    assert len(found) > 50  # the walk reaches parameters and nested bodies
    bare = [
        (method, path, ".".join(where))
        for method, path, where, schema in found
        if not any(key in schema for key in ("pattern", "enum", "const", "format", "x-cleaned"))
        and (method, path, where[-1] if where else "") not in _NOT_TEXT
    ]
    assert bare == []
