"""The content picker as a page inside the LMS's frame: the catalogue grouped by chapter, with per-exercise
points (default the exercise's max score) and language, checkboxes when the platform accepts several items
and radio buttons when it accepts one, and where to open the link among the targets it accepts. The same
page in "bind" mode chooses the exercise of an unbound link (service/lti/unbound.py).

The page runs no script, takes only our stylesheet, posts only to the tool (`form-action 'self'`) and may be
framed only by the launching platform. Every platform string on it (the course title) is autoescaped; the
pick or bind token in its form is the CSRF token, bound to the launching browser.
"""

from __future__ import annotations

from itertools import groupby
from urllib.parse import quote

from fastapi.encoders import jsonable_encoder
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from service.lti import framing
from service.web.core import env
from service.web.i18n import LANGS, t

LOCALE = "https://purl.imsglobal.org/spec/lti/claim/launch_presentation"


def launch_lang(claims: dict, fallback: str) -> str:
    """The page language: the launch's `launch_presentation.locale` (zh-*: zh) if sent, else `fallback`."""
    presentation = claims.get(LOCALE)
    locale = presentation.get("locale") if isinstance(presentation, dict) else None
    if isinstance(locale, str) and locale:
        return "zh" if locale.lower().startswith("zh") else "en"
    return fallback


def chapters(exercises: list[dict], lang: str) -> list[dict]:
    """Exercises (as the launch answer lists them) grouped by chapter, in catalogue order."""
    rows = sorted(exercises, key=lambda e: (e["chapter"], e["id"]))
    return [
        {
            "number": number,
            "exercises": [{**e, "label": (e.get("title_zh") if lang == "zh" else None) or e["title"]} for e in group],
        }
        for number, group in groupby(rows, key=lambda e: e["chapter"])
    ]


def page(answer: dict, *, lang: str, frame_origins: str) -> HTMLResponse:
    """The picker for a deep-linking launch's answer, or the bind picker for an unbound link's."""
    bind = bool(answer.get("unbound"))
    accept = answer.get("accept") or {}
    html = env.get_template("lti_picker.html").render(
        lang=lang,
        T=lambda key, **kw: t(key, lang, **kw),
        bind=bind,
        action=answer["respond"],
        token_name="bind_token" if bind else "pick_token",
        token=answer["bind_token" if bind else "pick_token"],
        course_title=answer.get("course_title") or "",
        multiple=bool(accept.get("multiple")) and not bind,
        lineitem=accept.get("lineitem", True),
        targets=list(accept.get("targets") or []),
        chapters=chapters(answer["exercises"], lang),
        langs=LANGS,
        tg_bind=answer.get("tg_bind") or "",
    )
    headers = framing.page_headers(frame_origins)
    headers["Referrer-Policy"] = "same-origin"  # the form's POST carries our Origin (checked there)
    return HTMLResponse(html, headers=headers)


def launch_answer(done: dict, *, browser: bool) -> Response:
    """A launch's (or a bind's) answer: the sign-in redirect, the picker page for a browser, else JSON."""
    if "ticket" in done:  # no cookie here: see service/lti/enter.py for why the session starts at /lti/enter
        return RedirectResponse("/lti/enter?ticket=" + quote(done["ticket"], safe=""), status_code=303)
    lang, frame = done.pop("lang", "en"), done.pop("frame", "'none'")
    if not browser:
        done.pop("tg_bind", None)
    if browser and ("pick_token" in done or "bind_token" in done):
        return page(done, lang=lang, frame_origins=frame)
    return JSONResponse(jsonable_encoder(done), headers={"Cache-Control": "no-store"})  # a bearer token inside
