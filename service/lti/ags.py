"""Grade passback with LTI Assignment and Grade Services: the outbox's second kind of target ("lti").

A line item (service/lti/models.LtiLineItem) is the target: every grade event of its course and exercise
for a learner of its platform becomes an `outbox_deliveries` row whose body is the AGS score. The shared
delivery loop (service/outbox/delivery.py) claims it, retries it on the same schedule, logs each attempt
and dead-letters it; `AgsSender` gets an OAuth2 token (client-credentials grant with a JWT client
assertion signed by the tool's key, cached until shortly before it expires) and POSTs the score to
`{lineitem}/scores`. A regrade or an override is a new event, so the new score is sent again; its later
timestamp makes the platform keep it. A received submission (the intake's "submission.received" row) is sent
as Submitted / Pending stamped with the upload time, before any grade's time; a Pending that a later score
to the same line item and learner has overtaken is dropped at its claim, never sent (`overtaken`).
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import httpx
from sqlalchemy import select
from sqlalchemy.orm import Session
from sqlalchemy.sql import Select

from service.lti import tokens
from service.lti.keys import KeyStore, key_store
from service.lti.models import LtiLineItem, LtiPlatform
from service.outbox.models import DeliveryStatus, OutboxDelivery, OutboxEvent
from service.outbox.protocol import DeliveryResult, Drop
from service.outbox.receivers import COURSES
from service.outbox.ssrf import AddressPolicy, make_client
from service.outbox.targets import RECEIVED
from service.states import SubmissionStatus
from service.submissions.models import Submission
from service.timefmt import rfc3339

SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
TOKEN_MARGIN_S = 60  # a cached token is renewed this long before the platform says it expires
EXCERPT_BYTES = 1024


class LtiTargets:
    """Line items of the event's course; `accepts` narrows them to the event's exercise and the learners
    whose identity comes from the line item's platform."""

    kind = "lti"

    def __init__(self) -> None:
        self._items: dict[int, tuple[str, str]] = {}  # line item id -> (exercise id, platform issuer)

    def targets(self, session: Session, *, course: str, event_type: str) -> list[int]:
        rows = session.execute(
            select(LtiLineItem.id, LtiLineItem.exercise_id, LtiPlatform.issuer)
            .join(LtiPlatform, LtiPlatform.id == LtiLineItem.platform_id)
            .where(LtiLineItem.course == course, LtiPlatform.removed_at.is_(None))
        )
        ids = []
        for item_id, exercise_id, issuer in rows:
            self._items[item_id] = (exercise_id, issuer)
            ids.append(item_id)
        return ids

    def interest(self, *, event_type: str) -> Select:
        """Every grade event type goes to a line item: (course, exercise, platform issuer) of the live ones."""
        return (
            select(LtiLineItem.course, LtiLineItem.exercise_id, LtiPlatform.issuer)
            .join(LtiPlatform, LtiPlatform.id == LtiLineItem.platform_id)
            .where(LtiLineItem.course.in_(COURSES), LtiPlatform.removed_at.is_(None))
        )

    def accepts(self, *, event: OutboxEvent, target_id: int, learner: dict | None) -> bool:
        exercise_id, issuer = self._items.get(target_id, ("", ""))
        return (
            learner is not None
            and learner.get("issuer") == issuer
            and (event.payload or {}).get("exercise_id") == exercise_id
        )

    def body(self, *, event: OutboxEvent, event_type: str, target_id: int, learner: dict | None) -> str:
        return event_score(event=event, event_type=event_type, user_id=(learner or {}).get("subject", ""))


def event_score(*, event: OutboxEvent, event_type: str, user_id: str) -> str:
    """A grade event's AGS score: the override or the engine's score, less the late penalty."""
    p = event.payload or {}
    manual = p.get("manual_score")
    score = manual if manual is not None else p.get("score")
    status = SubmissionStatus.NOT_GRADABLE if event_type == "submission.not_gradable" else p.get("status")
    return score_body(
        user_id=user_id,
        timestamp=rfc3339(score_time(event)) or "",
        status=str(status or ""),
        score=score,
        max_score=p.get("max_score"),
        penalty=late_penalty(p),
        submitted_at=p.get("submitted_at"),
    )


def score_time(event: OutboxEvent) -> dt.datetime | None:
    """The score's `timestamp`: when the event was written (a received submission's is its upload time). A
    grade's is held at least 1 ms after its upload time, so a worker whose clock is behind the API's never
    stamps the final score older than the submission's `Pending`, which the platform would then keep."""
    at = event.created_at
    submitted = (event.payload or {}).get("submitted_at")
    if at is None or event.kind == RECEIVED or not isinstance(submitted, str):
        return at
    try:
        upload = dt.datetime.fromisoformat(submitted).astimezone(dt.UTC).replace(tzinfo=None)
    except ValueError:
        return at
    return max(at, upload + dt.timedelta(milliseconds=1))


def late_penalty(payload: dict) -> LatePenalty | None:
    """The points the course's late policy took off (events since migration 0010 carry `final_score`, the
    score after the penalty); none for an override, which is final (docs/service.md, deadlines)."""
    raw, final = payload.get("score"), payload.get("final_score")
    if (
        payload.get("manual_score") is not None
        or not isinstance(raw, int | float)
        or not isinstance(final, int | float)
    ):
        return None
    points = float(raw) - float(final)
    if points <= 0:
        return None
    return LatePenalty(points=points, reason=f"submitted late, {float(payload.get('penalty_percent') or 0):g}% penalty")


@dataclass(frozen=True, slots=True, kw_only=True)
class LatePenalty:
    """Points taken off a late submission's score before it is sent (never below zero), and why."""

    points: float
    reason: str = ""


PENDING_STATUSES = (SubmissionStatus.QUEUED, SubmissionStatus.RUNNING)


def score_body(
    *,
    user_id: str,
    timestamp: str,
    status: str,
    score: float | None,
    max_score: float | None,
    penalty: LatePenalty | None = None,
    submitted_at: str | None = None,
) -> str:
    """The AGS score (its feedback comment is added when sent, see AgsSender.prepare): graded -> Completed /
    FullyGraded with `score` less the late penalty; queued or running -> Submitted / Pending with no score;
    not gradable (or no score) -> Submitted / Failed with no score (a grader fault is never a zero).
    `submission.submittedAt` (AGS 2.0's Score.submission, as Canvas documents it) is the upload time."""
    body: dict = {"userId": user_id, "timestamp": timestamp, "activityProgress": "Submitted"}
    if submitted_at:
        body["submission"] = {"submittedAt": submitted_at}
    if status in PENDING_STATUSES:
        body["gradingProgress"] = "Pending"
    elif status == SubmissionStatus.NOT_GRADABLE or score is None or not max_score:
        body["gradingProgress"] = "Failed"
    else:
        given = float(score) - (penalty.points if penalty is not None else 0.0)
        body.update(
            scoreGiven=max(given, 0.0),
            scoreMaximum=float(max_score),
            activityProgress="Completed",
            gradingProgress="FullyGraded",
        )
        if penalty is not None and penalty.points > 0:  # AGS has no penalty field: the comment says it
            why = f" ({penalty.reason[:200]})" if penalty.reason else ""
            body["comment"] = f"late penalty: {float(penalty.points):g} of {float(score):g} points taken off{why}"
    return json.dumps(body, separators=(",", ":"), sort_keys=True)


def feedback_comment(session: Session, *, submission_id: str, payload: dict) -> str:
    """A short summary for the gradebook: checks passed, and an override's reason. Never check details."""
    sub = session.get(Submission, submission_id)
    checks = (sub.result or {}).get("checks", []) if sub is not None else []
    parts = []
    if checks:
        parts.append(f"{sum(bool(c.get('passed')) for c in checks)}/{len(checks)} checks passed")
    if payload.get("manual_score") is not None and payload.get("reason"):
        parts.append(f"score set by the instructor: {str(payload['reason'])[:200]}")
    if payload.get("status") in PENDING_STATUSES:
        parts.append("received; it is being graded")
    if payload.get("status") == SubmissionStatus.NOT_GRADABLE:
        parts.append("the grader could not grade this submission (not the learner's fault); it will be retried")
    parts.append(f"details: /api/v1/submissions/{submission_id}")
    return "; ".join(parts)


def overtaken(session: Session, *, delivery: OutboxDelivery, event: OutboxEvent) -> bool:
    """A later delivery to the same line item for the same learner (this submission's final score, or a later
    attempt's) exists and was not itself dropped: this `Pending` must never be sent after it."""
    learner = select(Submission.identity_id).where(Submission.id == event.submission_id).scalar_subquery()
    later = session.scalar(
        select(OutboxDelivery.id)
        .join(OutboxEvent, OutboxEvent.id == OutboxDelivery.event_id)
        .join(Submission, Submission.id == OutboxEvent.submission_id)
        .where(
            OutboxDelivery.target_kind == LtiTargets.kind,
            OutboxDelivery.target_id == delivery.target_id,
            OutboxDelivery.event_id > delivery.event_id,
            OutboxDelivery.status != DeliveryStatus.DROPPED.value,
            Submission.identity_id == learner,
        )
        .limit(1)
    )
    return later is not None


def scores_url(lineitem: str) -> str:
    parts = urlsplit(lineitem)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/scores"))


@dataclass(frozen=True, slots=True, kw_only=True)
class AgsWork:
    token_url: str
    client_id: str
    url: str
    body: str
    deployment_id: str | None = None  # the line item's launch deployment: the client assertion names it


class AgsSender:
    kind = "lti"

    def __init__(self, client: httpx.Client, keys: KeyStore) -> None:
        self.client, self.keys = client, keys
        self._tokens: dict[tuple[str, str, str], tuple[str, float]] = {}
        self._lock = threading.Lock()
        self.token_requests = 0

    @classmethod
    def from_settings(cls, settings) -> AgsSender:
        return cls(
            make_client(
                AddressPolicy.from_settings(settings),
                timeout_s=settings.webhook_timeout_s,
                max_connections=settings.webhook_concurrency,
            ),
            key_store(settings),
        )

    def prepare(self, session: Session, delivery: OutboxDelivery) -> AgsWork | Drop | None:
        row = session.execute(
            select(LtiLineItem, LtiPlatform)
            .join(LtiPlatform, LtiPlatform.id == LtiLineItem.platform_id)
            .where(LtiLineItem.id == delivery.target_id)
        ).first()
        if row is None or row[1].removed_at is not None:
            return None
        item, platform = row
        event = session.get(OutboxEvent, delivery.event_id)
        if event is not None and event.kind == RECEIVED and overtaken(session, delivery=delivery, event=event):
            return Drop(reason="not sent: a later score for this learner and line item was sent or is on its way")
        body = json.loads(delivery.body)
        if event is not None:
            comment = feedback_comment(session, submission_id=event.submission_id, payload=event.payload or {})
            body["comment"] = "; ".join(filter(None, (body.get("comment"), comment)))
            sub = session.get(Submission, event.submission_id)
            if sub is not None and "submission" not in body:  # an event from before 0010 names no time
                body["submission"] = {"submittedAt": rfc3339(sub.created_at)}
        return AgsWork(
            token_url=platform.auth_token_url,
            client_id=platform.client_id,
            url=scores_url(item.url),
            body=json.dumps(body, separators=(",", ":"), sort_keys=True),
            deployment_id=item.deployment_id,
        )

    def access_token(self, work: AgsWork) -> str:
        """A cached token for (token URL, client id), or a new one from the client-credentials grant."""
        key = (work.token_url, work.client_id, work.deployment_id or "")
        with self._lock:
            cached = self._tokens.get(key)
        if cached is not None and cached[1] > time.monotonic():
            return cached[0]
        assertion = tokens.client_assertion(
            keys=self.keys, client_id=work.client_id, token_url=work.token_url, deployment_id=work.deployment_id
        )
        resp = self.client.post(
            work.token_url,
            data={
                "grant_type": "client_credentials",
                "client_assertion_type": ASSERTION_TYPE,
                "client_assertion": assertion,
                "scope": SCORE_SCOPE,
            },
        )
        self.token_requests += 1
        if resp.status_code != 200:
            raise TokenRefused(f"token endpoint answered HTTP {resp.status_code}: {resp.text[:200]}")
        data = resp.json()
        if not isinstance(data, dict):
            raise TokenRefused("token endpoint answered JSON that is not an object")
        token, lifetime = data.get("access_token"), float(data.get("expires_in") or 3600)
        if not isinstance(token, str) or not token:
            raise TokenRefused("token endpoint answered without an access_token")
        with self._lock:
            self._tokens[key] = (token, time.monotonic() + max(lifetime - TOKEN_MARGIN_S, 0))
        return token

    def send(self, work: AgsWork) -> DeliveryResult:
        start = time.perf_counter()
        try:
            token = self.access_token(work)
            resp = self.client.post(
                work.url,
                content=work.body.encode(),
                headers={"content-type": SCORE_TYPE, "authorization": f"Bearer {token}"},
            )
        except (httpx.HTTPError, TokenRefused, ValueError, TypeError, RecursionError) as exc:  # what a platform sent
            return DeliveryResult(
                ok=False,
                status_code=None,
                latency_ms=(time.perf_counter() - start) * 1000,
                error=f"{type(exc).__name__}: {exc}",
            )
        latency = (time.perf_counter() - start) * 1000
        excerpt = resp.text[:EXCERPT_BYTES]
        if resp.status_code == 401:  # the token was revoked or expired early: get a new one next time
            with self._lock:
                self._tokens.pop((work.token_url, work.client_id, work.deployment_id or ""), None)
        if 200 <= resp.status_code < 300:
            return DeliveryResult(ok=True, status_code=resp.status_code, latency_ms=latency, excerpt=excerpt)
        return DeliveryResult(
            ok=False,
            status_code=resp.status_code,
            latency_ms=latency,
            error=f"HTTP {resp.status_code}",
            excerpt=excerpt,
        )


class TokenRefused(Exception):
    """The platform's token endpoint did not grant a token (a failed attempt, retried on the schedule)."""
