"""Progress events of one grading run, typed: one class per kind, shared by everything that touches them.

The engine emits them to its progress callback (grading/pipeline.py), a worker stores each as a row
(`kind` and `data()`, service/workers/progress.py), and the event stream reads the rows back
(`from_row`) and sends `to_json()`, the JSON an EventSource client reads (service/submissions/events.py).
The service's own kinds (queued, claimed, placed, requeued, estimate) are here too, so the stream's whole
vocabulary is in one place; the engine imports nothing from the service.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

OMIT_NONE = {"omit_none": True}  # a field that is left out of the JSON when it is None


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """One progress event; `kind` is its name on the stream (`event:`) and in the stored row."""

    kind: ClassVar[str] = ""

    def data(self) -> dict[str, Any]:
        """The event's fields as plain JSON data (the stored row's `data`)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None and f.metadata.get("omit_none"):
                continue
            out[f.name] = list(value) if isinstance(value, tuple) else value
        return out

    def to_json(self) -> dict[str, Any]:
        """What a stream client reads: the kind under `event`, then the fields."""
        return {"event": self.kind, **self.data()}


# ---- the service's kinds: before and around the engine's run --------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Queued(Event):
    kind: ClassVar[str] = "queued"
    priority: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Claimed(Event):
    kind: ClassVar[str] = "claimed"
    worker: str
    attempt: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Placed(Event):
    """Where a cluster job runs (Ray): for operators and the tests."""

    kind: ClassVar[str] = "placed"
    node: str
    device_kind: str
    device_ids: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Requeued(Event):
    kind: ClassVar[str] = "requeued"
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Estimate(Event):
    """A queued submission's waiting-time estimate (its fields are the queue's public estimate). Only
    streamed, never stored: it has no id and is not replayed."""

    kind: ClassVar[str] = "estimate"
    estimate: Mapping[str, Any] = field(default_factory=dict)

    def data(self) -> dict[str, Any]:
        return dict(self.estimate)


# ---- the engine's kinds --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Started(Event):
    kind: ClassVar[str] = "started"
    exercise_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Cell(Event):
    """Cell `index` (0-based) of `total` learner cells is about to run; the engine throttles these."""

    kind: ClassVar[str] = "cell"
    index: int
    total: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Restart(Event):
    """The kernel was restarted and the notebook re-run without cell `skipped`."""

    kind: ClassVar[str] = "restart"
    skipped: int | None  # None: the same cells again, each check's calls in a cell of their own


@dataclass(frozen=True, slots=True, kw_only=True)
class Checks(Event):
    kind: ClassVar[str] = "checks"


@dataclass(frozen=True, slots=True, kw_only=True)
class Done(Event):
    """The run's last event: the stream ends after it. A superseded attempt's has `superseded_by` and no
    `max_score`."""

    kind: ClassVar[str] = "done"
    status: str
    score: float | None
    max_score: float | None = field(default=None, metadata=OMIT_NONE)
    superseded_by: str | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True, slots=True, kw_only=True)
class Other(Event):
    """A stored row of a kind this code does not know (or whose fields it does not), passed on as stored."""

    name: str
    payload: Mapping[str, Any] = field(default_factory=dict)

    def data(self) -> dict[str, Any]:
        return dict(self.payload)

    def to_json(self) -> dict[str, Any]:
        return {"event": self.name, **self.data()}


KINDS: dict[str, type[Event]] = {
    cls.kind: cls for cls in (Queued, Claimed, Placed, Requeued, Estimate, Started, Cell, Restart, Checks, Done)
}


def kind_of(event: Event) -> str:
    """The event's name on the stream and in its row."""
    return event.name if isinstance(event, Other) else event.kind


def from_row(kind: str, data: Mapping[str, Any]) -> Event:
    """A stored row as its typed event; a kind or field set this code does not know stays an `Other`, so
    reading a row back never changes what the stream sends."""
    cls = KINDS.get(kind)
    if cls is not None:
        try:
            event = cls(**data)
        except TypeError:  # a missing or unknown field: an older or newer writer
            event = None
        if event is not None and event.data() == dict(data):
            return event
    return Other(name=kind, payload=dict(data))
