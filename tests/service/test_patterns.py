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
