"""Whether an event about a new submission has anyone to go to, asked before its outbox row is written.

The intake writes a "submission received" row only where some target would get it (service/submissions/
received.py), so uploads nobody listens for cost one indexed query per batch and no row. Each kind of target
says who listens with an optional `TargetSource.interest(event_type=...)`: a SELECT of (course, exercise id,
learner issuer) rows, "" meaning any, filtered by the expanding bind parameter `COURSES`. `Receivers` unions
them (built once, in service/wiring.py) and runs the union once per batch. It is a generous filter: the
fan-out (targets.py) still decides exactly who gets the event.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import BindParameter, bindparam, union_all
from sqlalchemy.orm import Session
from sqlalchemy.sql import Executable, Select

from service.outbox.protocol import TargetSource

# the batch's courses, in every source's interest statement
COURSES: BindParameter[list[str]] = bindparam("courses", expanding=True)
ANY = ""


@dataclass(frozen=True, slots=True)
class Interest:
    """The listeners found for one batch: (course, exercise id, issuer) with "" for any."""

    found: frozenset[tuple[str, str, str]]

    def wants(self, *, course: str, exercise_id: str, issuer: str) -> bool:
        keys = ((course, ANY, ANY), (course, exercise_id, ANY), (course, ANY, issuer), (course, exercise_id, issuer))
        return any(key in self.found for key in keys)


NOBODY = Interest(frozenset())


class Receivers:
    """Who would be sent an event of `event_type` about a new submission, per the sources' `interest`."""

    def __init__(self, sources: Sequence[TargetSource], *, event_type: str) -> None:
        statements: list[Select] = []
        for source in sources:
            interest = getattr(source, "interest", None)
            statement = interest(event_type=event_type) if interest is not None else None
            if statement is not None:
                statements.append(statement)
        self.event_type = event_type
        self.statement: Executable | None = None
        if len(statements) == 1:
            self.statement = statements[0]
        elif statements:
            self.statement = union_all(*statements)

    def wanted(self, session: Session, *, courses: Iterable[str]) -> Interest:
        """One query for the listeners of `courses` (nothing is asked when no source can listen)."""
        names = sorted(set(courses))
        if self.statement is None or not names:
            return NOBODY
        rows = session.connection().execute(self.statement, {"courses": names})
        return Interest(frozenset((str(c), str(e or ANY), str(i or ANY)) for c, e, i in rows))
