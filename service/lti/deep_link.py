"""Deep linking (LTI Deep Linking 2.0): an instructor picks exercises in the LMS's "select content" screen and
the tool answers a signed LtiDeepLinkingResponse, auto-posted to the platform's return URL.

The platform's `deep_linking_settings` are honoured: `accept_types` must include `ltiResourceLink` (else a
clear refusal: the other types carry no grades), `accept_multiple` (several items or exactly one),
`accept_lineitem` (false: no `lineItem`), `accept_presentation_document_targets` (`window`/`iframe`
offered only when accepted). They travel in the pick token, signed by the tool, so the answer is checked
against what the platform asked for, not against what the form claims. The pick is single use, lives
`ttl_s` and is spent only in the browser that launched (its row's `browser_hash`): it is also the picker
form's CSRF token, bound to the LTI session.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import html
import math
import secrets
import time
from dataclasses import dataclass

from sqlalchemy.orm import Session

from grading.exercise import Catalogue
from service.db import utcnow
from service.errors import clip
from service.lti import service as lti_service
from service.lti import tokens, urls
from service.lti.errors import LtiError
from service.lti.keys import KeyStore
from service.lti.launch import role_of
from service.lti.models import LtiLoginState, PlatformRef
from service.lti.tokens import LTI
from service.messages import error
from service.web.i18n import LANGS

DL = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
CONTENT_ITEMS = "https://purl.imsglobal.org/spec/lti-dl/claim/content_items"
PICK_AUDIENCE = "titangrade-deep-link"
RESOURCE_LINK = "ltiResourceLink"
TARGETS = ("window", "iframe")  # the presentation targets a resource link can say (embed is for HTML items)
MAX_POINTS = 10_000.0
TAG = "titangrade"


@dataclass(frozen=True, slots=True)
class DeepLinkSettings:
    return_url: str
    data: object
    multiple: bool  # accept_multiple is true
    lineitem: bool  # accept_lineitem is not false (absent: the platform may create one)
    targets: tuple[str, ...]  # of TARGETS, those the platform accepts


def settings_of(claims: dict, *, allow_http: bool) -> DeepLinkSettings:
    """The platform's deep-linking settings, checked: the return URL first (it becomes a form action)."""
    found = claims.get(DL)
    if not isinstance(found, dict) or not isinstance(found.get("deep_link_return_url"), str):
        raise LtiError("lti_deep_linking", "the deep-linking request has no deep_link_return_url")
    return_url = urls.return_url(found["deep_link_return_url"], allow_http=allow_http)
    types = found.get("accept_types")
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        raise LtiError("lti_deep_linking", "the deep-linking request has no accept_types list")
    if RESOURCE_LINK not in types:
        raise LtiError("lti_accept_types", error("lti_accept_types", types=clip(", ".join(types)) or "no"))
    targets = found.get("accept_presentation_document_targets")
    accepted = tuple(t for t in TARGETS if isinstance(targets, list) and t in targets)
    return DeepLinkSettings(
        return_url=return_url,
        data=found.get("data"),
        multiple=found.get("accept_multiple") is True,
        lineitem=found.get("accept_lineitem") is not False,
        targets=accepted,
    )


def deep_link_request(
    session: Session,
    *,
    platform: PlatformRef,
    claims: dict,
    catalogue: Catalogue,
    keys: KeyStore,
    ttl_s: float,
    browser_hash: str,
    allow_http: bool,
) -> dict:
    """An instructor picks exercises: the catalogue with a pick token that carries the platform's settings."""
    if role_of(claims.get(LTI + "roles")) != "instructor":
        raise LtiError("lti_forbidden", "only instructors can add titangrade exercises to a course", status_code=403)
    dl = settings_of(claims, allow_http=allow_http)
    key = "pick-" + secrets.token_urlsafe(24)
    session.add(
        LtiLoginState(
            state=key,
            nonce=key,
            platform_id=platform.id,
            expires_at=utcnow() + dt.timedelta(seconds=ttl_s),
            browser_hash=browser_hash,
        )
    )
    context = claims.get(LTI + "context")
    title = str(context.get("title") or context.get("id") or "") if isinstance(context, dict) else ""
    pick = tokens.sign(
        {
            "aud": PICK_AUDIENCE,
            "k": key,
            "platform_id": platform.id,
            "deployment_id": claims[LTI + "deployment_id"],
            "return_url": dl.return_url,
            "data": dl.data,
            "multiple": dl.multiple,
            "lineitem": dl.lineitem,
            "targets": list(dl.targets),
        },
        keys=keys,
        lifetime_s=ttl_s,
    )
    return {
        "message_type": "LtiDeepLinkingRequest",
        "pick_token": pick,
        "respond": "/lti/deep-link",
        "course_title": title[:200],
        "accept": {"multiple": dl.multiple, "lineitem": dl.lineitem, "targets": list(dl.targets)},
        "exercises": [
            {
                "id": e.id,
                "chapter": e.manifest.chapter,
                "title": e.manifest.title.en,
                "title_zh": e.manifest.title.zh,
                "max_score": e.manifest.max_score,
            }
            for e in catalogue
        ],
    }


@dataclass(frozen=True, slots=True)
class Choice:
    exercise_id: str
    points: float | None  # None: the exercise's max score
    lang: str | None  # None: not chosen (the link then says none; titles in English)


def read_choices(form: list[tuple[str, str]]) -> tuple[list[Choice], str | None]:
    """The picker form's choices (`exercise_id` repeated; `points.<id>`, `lang.<id>`) and its `target`."""
    fields = dict(form)
    chosen = list(dict.fromkeys(v for k, v in form if k == "exercise_id" and v))
    choices = []
    for exercise_id in chosen:
        raw = fields.get(f"points.{exercise_id}", "").strip()
        points = None
        if raw:
            try:
                points = float(raw)
            except ValueError:
                points = math.nan
            if not (math.isfinite(points) and 0 < points <= MAX_POINTS):
                raise LtiError(
                    "lti_points_invalid",
                    error("lti_points_invalid", exercise=clip(exercise_id), most=int(MAX_POINTS), value=clip(raw)),
                )
        lang = fields.get(f"lang.{exercise_id}") or None
        if lang is not None and lang not in LANGS:
            raise LtiError("lti_lang_invalid", error("lti_lang_invalid", exercise=clip(exercise_id), value=clip(lang)))
        choices.append(Choice(exercise_id, points, lang))
    return choices, fields.get("target") or None


@dataclass(frozen=True, slots=True)
class DeepLinkAnswer:
    return_url: str
    jwt: str
    frame_origins: str  # who may frame the auto-posting page: the platform's own origins


def content_item(exercise, choice: Choice, *, launch_url: str, lineitem: bool, target: str | None) -> dict:
    """One ltiResourceLink: custom exercise_id (and lang), and a lineItem unless the platform refused them."""
    title = exercise.manifest.title.zh if choice.lang == "zh" else exercise.manifest.title.en
    custom = {"exercise_id": exercise.id} | ({"lang": choice.lang} if choice.lang else {})
    item: dict = {"type": RESOURCE_LINK, "title": title, "url": launch_url, "custom": custom}
    if lineitem:
        item["lineItem"] = {
            "scoreMaximum": choice.points if choice.points is not None else exercise.manifest.max_score,
            "label": title,
            "resourceId": exercise.id,
            "tag": TAG,
        }
    if target == "window":
        item["window"] = {"targetName": "titangrade"}
    elif target == "iframe":
        item["iframe"] = {"width": 1024, "height": 768}
    return item


def _check(choices: list[Choice], target: str | None, pick: dict, catalogue: Catalogue) -> str | None:
    if not choices:
        raise LtiError("lti_pick_none", error("lti_pick_none"))
    if len(choices) > 1 and not pick.get("multiple"):
        raise LtiError("lti_pick_one_only", error("lti_pick_one_only"))
    for choice in choices:
        if choice.exercise_id not in catalogue:
            raise LtiError("lti_unknown_exercise", f"no exercise {clip(choice.exercise_id)!r}", status_code=404)
    targets = list(pick.get("targets") or [])
    if target is not None and target not in targets:
        raise LtiError(
            "lti_target_invalid",
            error("lti_target_invalid", target=clip(target), targets=", ".join(targets) or "(none)"),
        )
    return target or (targets[0] if targets else None)


def deep_link_response(
    session: Session,
    *,
    pick_token: str,
    choices: list[Choice],
    target: str | None,
    catalogue: Catalogue,
    keys: KeyStore,
    launch_url: str,
    browser_hash: str,
    allow_http: bool,
    frame_ancestors: str = "",
) -> DeepLinkAnswer:
    """The signed LtiDeepLinkingResponse for the picked exercises; spends the pick (once, this browser)."""
    pick = tokens.verify_own(pick_token, keys=keys, audience=PICK_AUDIENCE)
    target = _check(choices, target, pick, catalogue)
    return_url = urls.return_url(pick["return_url"], allow_http=allow_http)
    platform = lti_service.spend_offer(
        session,
        signed=pick,
        browser_hash=browser_hash,
        spent="the pick token was already used or has expired; open the picker again",
        removed="the platform of this picker was removed",
    )
    lineitem = pick.get("lineitem") is not False
    items = [
        content_item(catalogue.get(c.exercise_id), c, launch_url=launch_url, lineitem=lineitem, target=target)
        for c in choices
    ]
    claims = {
        "iss": platform.client_id,
        "aud": platform.issuer,
        "azp": platform.client_id,
        "nonce": f"{time.time_ns():x}",
        LTI + "message_type": "LtiDeepLinkingResponse",
        LTI + "version": "1.3.0",
        LTI + "deployment_id": pick["deployment_id"],
        CONTENT_ITEMS: items,
    }
    if pick.get("data") is not None:
        claims["https://purl.imsglobal.org/spec/lti-dl/claim/data"] = pick["data"]
    return DeepLinkAnswer(
        return_url,
        tokens.sign(claims, keys=keys),
        urls.frame_origins(PlatformRef.of(platform), allow_http=allow_http, extra=frame_ancestors),
    )


AUTOPOST_SCRIPT = "document.forms[0].submit()"


def autopost(answer: DeepLinkAnswer) -> tuple[str, dict[str, str]]:
    """The page that posts the deep-linking response back to the platform (the browser submits it), and its
    headers: only this inline script runs, the form may post only to the return URL's origin, and only
    the platform may frame it."""
    page = (
        f'<!doctype html><form method="post" action="{html.escape(answer.return_url)}">'
        f'<input type="hidden" name="JWT" value="{html.escape(answer.jwt)}"><noscript><button>Continue</button>'
        f"</noscript></form><script>{AUTOPOST_SCRIPT}</script>"
    )
    digest = base64.b64encode(hashlib.sha256(AUTOPOST_SCRIPT.encode()).digest()).decode()
    csp = (
        f"default-src 'none'; script-src 'sha256-{digest}'; form-action {urls.origin(answer.return_url)}; "
        f"frame-ancestors {answer.frame_origins}; base-uri 'none'"
    )
    return page, {"Content-Security-Policy": csp, "Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
