"""The text rules that fields of the API share.

No control characters anywhere a learner, an LMS or an instructor names something: PostgreSQL refuses
NUL (a 500 that schemathesis found twice), and CR/LF would break headers and logs. A patterned field also
refuses a lone surrogate (pydantic cannot hand it to the pattern: a 422 naming the field). Free text is
cleaned instead of refused. tests/service/test_patterns.py fails on any text input of the OpenAPI document
that has neither a pattern, an enum, a format nor a cleaner.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, Field
from pydantic.json_schema import JsonDict

from grading.text import clean_text

PRINTABLE = r"^[^\x00-\x1f\x7f]*$"  # may be empty
PRINTABLE_NAME = r"^[^\x00-\x1f\x7f]+$"  # at least one character


def _clean(value: object) -> object:
    """Before validation (strict models refuse a lone surrogate in any str), so the bound counts what is kept."""
    return clean_text(value) if isinstance(value, str) else value


# Free text (a reason, a description): cleaned like kernel text (controls and bidi shown as escapes, lone
# surrogates replaced: never refused for them), then at most so many characters (its column's width).
CLEANED: JsonDict = {"x-cleaned": True}  # marks such a field in the OpenAPI document (and for the test that walks it)
CleanDescription = Annotated[str, Field(max_length=500, json_schema_extra=CLEANED), BeforeValidator(_clean)]
CleanReason = Annotated[str, Field(min_length=3, max_length=2000, json_schema_extra=CLEANED), BeforeValidator(_clean)]
