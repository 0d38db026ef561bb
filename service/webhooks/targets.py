"""Webhook endpoints as a kind of outbox target: which endpoints want an event, and the body they get.

The outbox fans each event out through this source (service/outbox/targets.py); `WebhookSender`
(service/webhooks/sender.py) sends what it made.
"""

from __future__ import annotations

import json

from sqlalchemy import String, cast, literal, select
from sqlalchemy.orm import Session
from sqlalchemy.sql import Select

from service.outbox.models import OutboxEvent
from service.outbox.receivers import ANY, COURSES
from service.timefmt import rfc3339
from service.webhooks.models import WebhookEndpoint


class WebhookTargets:
    """Endpoints of the event's course that subscribed to its type: {"type", "timestamp", "data"} bodies."""

    kind = "webhook"

    def targets(self, session: Session, *, course: str, event_type: str) -> list[int]:
        rows = session.execute(
            select(WebhookEndpoint.id, WebhookEndpoint.event_types).where(
                WebhookEndpoint.course == course, WebhookEndpoint.removed_at.is_(None)
            )
        )
        return [endpoint_id for endpoint_id, types in rows if event_type in (types or ())]

    def interest(self, *, event_type: str) -> Select:
        """Courses with a live endpoint whose `event_types` (a JSON list) name `event_type`: its text holding
        the quoted name is enough here, `targets` checks the list itself."""
        return select(WebhookEndpoint.course, literal(ANY), literal(ANY)).where(
            WebhookEndpoint.course.in_(COURSES),
            WebhookEndpoint.removed_at.is_(None),
            cast(WebhookEndpoint.event_types, String).like(f'%"{event_type}"%'),
        )

    def body(self, *, event: OutboxEvent, event_type: str, target_id: int, learner: dict | None) -> str:
        return envelope(event=event, event_type=event_type, learner=learner)


def envelope(*, event: OutboxEvent, event_type: str, learner: dict | None) -> str:
    """The body receivers get. `data.score` is the score that counts, as the API's `score` is: the override
    when there is one, else the engine's after the late penalty; `data.raw_score` the same before the penalty;
    `data.auto_score` is the engine's (the outbox payload's `score`)."""
    data = dict(event.payload or {})
    data["auto_score"] = data.get("score")
    if data.get("manual_score") is not None:
        data["score"] = data["manual_score"]
    if "final_score" in data:  # events since 0010 also carry submitted_at, late, late_by_s, penalty_percent
        data["raw_score"] = data["score"]
        data["score"] = data.pop("final_score")
    if learner is not None:
        data["learner"] = learner
    data["event_id"] = event.id
    data["links"] = {"submission": f"/api/v1/submissions/{event.submission_id}"}
    return json.dumps(
        {"type": event_type, "timestamp": rfc3339(event.created_at), "data": data},
        separators=(",", ":"),
        sort_keys=True,
    )
