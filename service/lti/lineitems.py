"""The tool's own AGS line items, and the results a platform holds for them.

A launch whose AGS claim names the line-item container (`lineitems`) but no `lineitem` (the platform made
no gradebook column for the link) gets one: after the launch was answered, the tool looks for its line item
in the container (`resource_link_id` and `resource_id` = the exercise id) and creates it when there is none
(`scoreMaximum` = the exercise's points, `label`, `resourceId`, `tag`, `resourceLinkId`), then remembers it
as a passback target (`lti_line_items.origin = "tool"`). Results (`{lineitem}/results`) are read for the
instructor's API and CLI. No transaction is open while the platform is called.
"""

from __future__ import annotations

import logging
import math
import threading
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from grading.exercise import Catalogue
from grading.text import clean_text
from service.db import transaction
from service.errors import NotFound, ServiceError, clip
from service.lti.calls import (
    SCOPE_LINEITEM,
    SCOPE_LINEITEM_READ,
    SCOPE_RESULT_READ,
    SCOPE_SCORE,
    Grant,
    PlatformCalls,
    PlatformError,
    origin_of,
)
from service.lti.models import LtiLineItem, LtiPlatform, PlatformRef
from service.lti.tokens import LTI

log = logging.getLogger("titangrade.lti")
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
CONTAINER_TYPE = "application/vnd.ims.lis.v2.lineitemcontainer+json"
LINEITEM_TYPE = "application/vnd.ims.lis.v2.lineitem+json"
RESULTS_TYPE = "application/vnd.ims.lis.v2.resultcontainer+json"
TAG = "titangrade"
MAX_RESULTS = 20000
_ENSURE = threading.Lock()  # one find-or-create at a time in this process (no duplicate columns from a class)


@dataclass(frozen=True, slots=True, kw_only=True)
class LineItemJob:
    """What a launch leaves for after its answer: find or create this link's line item."""

    platform_id: int
    grant: Grant
    container: str
    course: str
    exercise_id: str
    resource_link_id: str
    label: str
    score_maximum: float
    may_create: bool


def note_launch(
    session: Session,
    *,
    platform: PlatformRef,
    token_url: str,
    claims: dict,
    course: str,
    exercise_id: str | None,
    catalogue: Catalogue,
) -> LineItemJob | None:
    """In the launch's transaction: a job when the claim has a container but no line item, the tool may
    read (and, with the `lineitem` scope, create) line items and send scores, and none is remembered yet."""
    ags = claims.get(AGS_CLAIM)
    link = claims.get(LTI + "resource_link")
    if not exercise_id or exercise_id not in catalogue or not isinstance(ags, dict) or not isinstance(link, dict):
        return None
    container, scopes, rlid = ags.get("lineitems"), ags.get("scope"), link.get("id")
    if ags.get("lineitem") or not isinstance(container, str) or not isinstance(scopes, list):
        return None
    if not container.startswith(("https://", "http://")) or len(container) > 2000:
        return None
    if not isinstance(rlid, str) or not rlid or SCOPE_SCORE not in scopes:
        return None
    if SCOPE_LINEITEM not in scopes and SCOPE_LINEITEM_READ not in scopes:
        return None
    known = session.scalar(
        select(LtiLineItem.id).where(
            LtiLineItem.platform_id == platform.id,
            LtiLineItem.course == course,
            LtiLineItem.exercise_id == exercise_id,
            LtiLineItem.resource_link_id == rlid[:255],
        )
    )
    if known is not None:
        return None
    exercise = catalogue.get(exercise_id)
    return LineItemJob(
        platform_id=platform.id,
        grant=Grant(
            token_url=token_url, client_id=platform.client_id, deployment_id=_text(claims.get(LTI + "deployment_id"))
        ),
        container=container,
        course=course,
        exercise_id=exercise_id,
        resource_link_id=rlid[:255],
        label=exercise.manifest.title.en[:200],
        score_maximum=float(exercise.manifest.max_score),
        may_create=SCOPE_LINEITEM in scopes,
    )


def _item_url(value: object, *, container: str) -> str | None:
    """A line item's id as the tool will POST scores under it: an http(s) URL on the container's origin."""
    if not isinstance(value, str) or not value.startswith(("https://", "http://")) or len(value) > 2000:
        return None
    try:
        return value if origin_of(value) == origin_of(container) else None
    except ValueError:
        return None


def find_or_create(calls: PlatformCalls, job: LineItemJob) -> str | None:
    """The URL of this link's line item on the platform (found, or created when allowed); None if there
    is none and the tool may not create one."""
    scopes = (SCOPE_LINEITEM,) if job.may_create else (SCOPE_LINEITEM_READ,)
    params = {"resource_link_id": job.resource_link_id, "resource_id": job.exercise_id}
    for page in calls.pages(
        job.container, grant=job.grant, scopes=scopes, accept=CONTAINER_TYPE, what="line-item container", params=params
    ):
        if not isinstance(page.data, list):
            raise PlatformError("the platform's line-item container did not answer a JSON array")
        for item in page.data:  # the platform may ignore the filters: check them here
            if (
                isinstance(item, dict)
                and item.get("resourceId") == job.exercise_id
                and item.get("resourceLinkId") in (None, job.resource_link_id)
                and (url := _item_url(item.get("id"), container=job.container))
            ):
                return url
    if not job.may_create:
        return None
    body = {
        "scoreMaximum": job.score_maximum,
        "label": job.label,
        "resourceId": job.exercise_id,
        "resourceLinkId": job.resource_link_id,
        "tag": TAG,
    }
    made = calls.request(
        "POST", job.container, grant=job.grant, scopes=scopes, accept=LINEITEM_TYPE, what="line-item container",
        body=body, content_type=LINEITEM_TYPE,
    )  # fmt: skip
    url = _item_url(made.data.get("id") if isinstance(made.data, dict) else None, container=job.container)
    if url is None:
        raise PlatformError("the platform created the line item but answered no usable id (a URL on its origin)")
    return url


def remember(session: Session, *, job: LineItemJob, url: str) -> LtiLineItem:
    row = session.scalar(select(LtiLineItem).where(LtiLineItem.platform_id == job.platform_id, LtiLineItem.url == url))
    if row is None:
        row = LtiLineItem(
            platform_id=job.platform_id,
            url=url,
            course=job.course,
            exercise_id=job.exercise_id,
            resource_link_id=job.resource_link_id,
            origin="tool",
        )
        session.add(row)
        session.flush()
    return row


def ensure_in_background(sessions: sessionmaker[Session], *, calls: PlatformCalls, job: LineItemJob) -> None:
    """After a launch was answered: find or create the line item and remember it; failures are logged."""
    try:
        with _ENSURE:
            url = find_or_create(calls, job)
            if url is not None:
                with transaction(sessions) as session:
                    remember(session, job=job, url=url)
    except ServiceError as exc:
        log.warning("lti line item for %s not made: %s", job.exercise_id, exc.message)
    except Exception:  # a background task must not take the server's thread down with it
        log.exception("lti line item for %s not made", job.exercise_id)


def results_url(lineitem: str) -> str:
    parts = urlsplit(lineitem)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/results"))


def _number(value: object) -> float | None:
    """A finite number (JSON from a platform may carry NaN or Infinity, which no answer can hold), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def parse_result(raw: object) -> dict | None:
    """One AGS result, its fields checked and cleaned (anything else in it is dropped); None if invalid."""
    if not isinstance(raw, dict) or not isinstance(raw.get("userId"), str) or not raw["userId"]:
        return None
    comment = raw.get("comment")
    return {
        "user_id": clean_text(raw["userId"])[:200],
        "result_score": _number(raw.get("resultScore")),
        "result_maximum": _number(raw.get("resultMaximum")),
        "comment": clean_text(comment)[:1000] if isinstance(comment, str) else None,
    }


def line_items(session: Session, *, course: str) -> list[LtiLineItem]:
    return list(session.scalars(select(LtiLineItem).where(LtiLineItem.course == course).order_by(LtiLineItem.id)))


def read_results(sessions: sessionmaker[Session], *, calls: PlatformCalls, course: str, line_item_id: int) -> dict:
    """The platform's results for one of the course's line items (every page, bounded)."""
    with sessions() as session:
        row = session.execute(
            select(LtiLineItem, LtiPlatform)
            .join(LtiPlatform, LtiPlatform.id == LtiLineItem.platform_id)
            .where(LtiLineItem.id == line_item_id, LtiLineItem.course == course)
        ).first()
        if row is None:
            raise NotFound(f"course {clip(course)!r} has no LTI line item {line_item_id}", code="line_item_not_found")
        item, platform = row
        grant = Grant(token_url=platform.auth_token_url, client_id=platform.client_id, deployment_id=item.deployment_id)
        url, exercise_id = item.url, item.exercise_id
    results, invalid = [], 0
    for page in calls.pages(
        results_url(url), grant=grant, scopes=(SCOPE_RESULT_READ,), accept=RESULTS_TYPE, what="results service"
    ):
        if not isinstance(page.data, list):
            raise PlatformError("the platform's results service did not answer a JSON array")
        for raw in page.data:
            parsed = parse_result(raw)
            invalid += parsed is None
            if parsed is not None:
                results.append(parsed)
        if len(results) > MAX_RESULTS:
            raise PlatformError(f"the platform's results service lists more than {MAX_RESULTS} results")
    return {"line_item": line_item_id, "exercise_id": exercise_id, "results": results, "invalid": invalid}


def _text(value: object) -> str | None:
    """A claim's string (bounded) or None: the launch was validated, but its values stay untrusted."""
    return value[:255] if isinstance(value, str) and value else None
