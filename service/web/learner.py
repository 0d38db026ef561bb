"""Learner pages: sign in with a token, exercises, template download, upload, a live submission page."""

from __future__ import annotations

import secrets
from typing import Annotated

from fastapi import APIRouter, File, Form, Header, Query, Request, UploadFile
from fastapi.responses import FileResponse, RedirectResponse, Response
from fastapi.sse import EventSourceResponse
from sqlalchemy import select
from sqlalchemy.orm import Session

from grading.errors import InvalidSubmission
from grading.exercise import Catalogue
from grading.pipeline import load_submission
from grading.text import clean_value
from service.catalogue import service as catalogue_service
from service.config import Settings
from service.deps import (
    CatalogueDep,
    MaxDevicesDep,
    SessionFactory,
    SessionFactoryDep,
    SettingsDep,
    StreamSlotsDep,
    WebSecretDep,
)
from service.errors import NotFound, ServiceError, TooMany, clip, from_engine
from service.grades.faults import message_key
from service.messages import error
from service.requests import service as requests
from service.states import SubmissionStatus
from service.submissions import batch, events, notebook_view, stream_slots
from service.submissions import service as submissions
from service.submissions.models import Submission
from service.submissions.notebook_view import NOTEBOOK_MEDIA_TYPE, notebook_disposition
from service.web import charts, schedule_pages, sessions
from service.web.core import LANG_COOKIE, BadForm, ViewerDep, local_path, page_lang, render
from service.web.i18n import LANGS
from service.web.notices import page_error

router = APIRouter(include_in_schema=False)
MAX_ATTEMPTS_OFFERED = 50  # other attempts the compare form lists, newest first
PRE_CSRF = "tg_login_csrf"  # login CSRF: a double-submit cookie, since there is no session yet


def _cookie_flags(settings: Settings) -> dict:
    return {"httponly": True, "samesite": "lax", "secure": settings.mode == "prod", "path": "/"}


@router.get("/")
def home(request: Request) -> Response:
    return RedirectResponse("/exercises", status_code=303)


@router.get("/login")
def login_page(request: Request, settings: SettingsDep, error: str = "", next: str = "/exercises") -> Response:
    nonce = request.cookies.get(PRE_CSRF) or secrets.token_urlsafe(24)
    resp = render(
        request,
        "login.html",
        pre_csrf=nonce,
        next_path=local_path(next, "/exercises"),
        error=page_error(error, page_lang(request)),
    )
    resp.set_cookie(PRE_CSRF, nonce, max_age=3600, **_cookie_flags(settings))
    return resp


@router.post("/login")
def login(
    request: Request,
    settings: SettingsDep,
    secret: WebSecretDep,
    open_session: SessionFactoryDep,
    token: Annotated[str, Form(max_length=300)] = "",
    csrf: Annotated[str, Form(max_length=200)] = "",
    next: Annotated[str, Form(max_length=500)] = "/exercises",
) -> Response:
    expected = request.cookies.get(PRE_CSRF)
    if not expected or csrf != expected:
        return RedirectResponse("/login?error=bad_form", status_code=303)
    with open_session() as session:
        signed = sessions.sign_in_with_token(session, secret=secret, token=token)
        session.commit()
    if signed is None:
        return RedirectResponse("/login?error=bad_token", status_code=303)
    resp = RedirectResponse(local_path(next, "/exercises"), status_code=303)
    start_session(resp, settings, cookie=signed[0])
    resp.delete_cookie(PRE_CSRF, path="/")
    return resp


def start_session(resp: Response, settings: Settings, *, cookie: str) -> None:
    """Set the session cookie on `resp` (LTI's launch calls this with `sessions.create_web_session`)."""
    resp.set_cookie(sessions.COOKIE, cookie, max_age=sessions.SESSION_TTL_S, **_cookie_flags(settings))


@router.post("/logout")
def logout(
    viewer: ViewerDep,
    secret: WebSecretDep,
    open_session: SessionFactoryDep,
    csrf: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    if not sessions.csrf_ok(secret=secret, ws=viewer.ws, sent=csrf):
        raise BadForm()
    with open_session() as session:  # on the server: a copy of the cookie stops working too
        sessions.revoke_web_session(session, ws=viewer.ws)
        session.commit()
    resp = RedirectResponse("/login", status_code=303)
    resp.delete_cookie(sessions.COOKIE, path="/")
    return resp


@router.get("/lang/{lang}")
def switch_lang(request: Request, lang: str, next: str = "/exercises") -> Response:
    resp = RedirectResponse(local_path(next, "/exercises"), status_code=303)
    if lang in LANGS:
        resp.set_cookie(LANG_COOKIE, lang, max_age=365 * 86400, httponly=True, samesite="lax", path="/")
    return resp


def _exercise_rows(
    viewer, *, open_session: SessionFactory, settings: Settings, catalogue: Catalogue
) -> tuple[list[dict], list]:
    with open_session() as session:
        subs = [
            s
            for s in submissions.list_visible(session, user=viewer.principal, limit=1000)
            if s.identity_id == viewer.principal.identity_id
        ]
        counts = batch.limit_counts(session, identity_ids={viewer.principal.identity_id})
        offered = [viewer.principal.scope] if viewer.principal.scope else sorted(viewer.principal.memberships)
        deadlines = schedule_pages.learner_deadlines(
            session, courses=offered, identity_id=viewer.principal.identity_id, lang=viewer.lang
        )
        session.expunge_all()
        session.commit()
    rows = []
    for ex in catalogue_service.list_all(catalogue):
        mine = [s for s in subs if s.exercise_id == ex.id]
        scores = [s.final_score for s in mine if s.final_score is not None]  # after any late penalty
        rows.append(
            {
                "ex": ex,
                "title": ex.title_zh if viewer.lang == "zh" and ex.title_zh else ex.title,
                "best": max(scores) if scores else None,
                "attempts": len(mine),
                "deadlines": deadlines.get(ex.id, []),
                "left": _attempts_left(counts, viewer.principal, ex.id, settings.max_attempts_per_exercise),
            }
        )
    return rows, subs[:20]


def _attempts_left(counts, user, exercise_id: str, limit: int) -> list[tuple[str, int | None]] | None:
    """What the intake's limit leaves in each course the upload form offers, counted as the intake counts
    (service/submissions/batch.py:attempts_left, None = unlimited there); None when unlimited in all."""
    offered = [user.scope] if user.scope else sorted(user.memberships)
    left = [
        (c, batch.attempts_left(counts, user=user, course=c, exercise_id=exercise_id, limit=limit)) for c in offered
    ]
    return None if all(n is None for _, n in left) else left


@router.get("/exercises")
def exercises_page(
    request: Request,
    viewer: ViewerDep,
    settings: SettingsDep,
    catalogue: CatalogueDep,
    open_session: SessionFactoryDep,
    error: str = "",
) -> Response:
    rows, recent = _exercise_rows(viewer, open_session=open_session, settings=settings, catalogue=catalogue)
    return render(
        request, "exercises.html", viewer=viewer, rows=rows, recent=recent, error=page_error(error, viewer.lang)
    )


@router.get("/exercises/{exercise_id}/notebook")
def download_template(exercise_id: str, viewer: ViewerDep, catalogue: CatalogueDep) -> Response:
    exercise = catalogue.get(exercise_id)
    return FileResponse(
        exercise.notebook_path, media_type="application/x-ipynb+json", filename=exercise.notebook_path.name
    )


@router.get("/submit", include_in_schema=False)
def upload_form() -> Response:
    """A browser that reloads the page a rejected upload showed, or switches its language, asks for GET
    /submit: it gets the exercises page with the upload forms, never an API error body."""
    return RedirectResponse("/exercises", status_code=303)


@router.post("/submit")
def upload(
    request: Request,
    viewer: ViewerDep,
    settings: SettingsDep,
    catalogue: CatalogueDep,
    secret: WebSecretDep,
    open_session: SessionFactoryDep,
    max_devices: MaxDevicesDep,
    notebook: Annotated[UploadFile | None, File()] = None,
    exercise_id: Annotated[str, Form(max_length=200)] = "",
    csrf: Annotated[str, Form(max_length=200)] = "",
    course: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    """The API's upload, from a form: the same validation and service calls, errors shown on the page."""
    if not sessions.csrf_ok(secret=secret, ws=viewer.ws, sent=csrf):
        raise BadForm()
    user = viewer.principal
    try:
        if notebook is None or not notebook.filename:
            raise ServiceError(error("choose_file"), status_code=422)
        raw = notebook.file.read(settings.max_upload_bytes + 1)
        try:
            _, exercise = load_submission(
                raw, exercise_id=exercise_id or None, catalogue=catalogue, max_bytes=settings.max_upload_bytes
            )
        except InvalidSubmission as exc:
            raise from_engine(exc) from None
        with open_session() as session:
            chosen = submissions.choose_course(user, course or None)
            submissions.check_capacity(
                exercise=exercise,
                max_devices=max_devices,
                max_world_size=settings.worker_max_world_size,
            )
            fingerprint = submissions.request_hash(notebook=raw, exercise_id=exercise_id, course=course)
            sub, _ = submissions.create(
                session,
                user=user,
                exercise=exercise,
                course=chosen,
                notebook=raw,
                lang=viewer.lang,
                idempotency_key=None,
                fingerprint=fingerprint,
                settings=settings,
            )
            sid = sub.id
    except ServiceError as exc:
        rows, recent = _exercise_rows(viewer, open_session=open_session, settings=settings, catalogue=catalogue)
        message = exc.zh if viewer.lang == "zh" and exc.zh else exc.message
        return render(
            request,
            "exercises.html",
            viewer=viewer,
            rows=rows,
            recent=recent,
            error=message,
            status_code=exc.status_code,
        )
    return RedirectResponse(f"/submissions/{sid}", status_code=303)


def submission_context(viewer, sub, *, catalogue: Catalogue, session: Session) -> dict:
    """What the learner's and the instructor's submission pages both show (checks, plots, the notebook)."""
    exercise = catalogue.get(sub.exercise_id)
    manifest = exercise.manifest
    titles = {
        c.name: (c.title.zh if viewer.lang == "zh" else c.title.en) if c.title else c.name for c in manifest.checks
    }
    result = clean_value(sub.result or {})  # a row stored before the result boundary may hold raw kernel text
    checks = [{**c, "title": titles.get(c.get("name"), c.get("name"))} for c in result.get("checks", [])]
    plots = None
    if manifest.kernel_family == "training" or any(c.kind == "metric_trace" for c in manifest.checks):
        profile = str(result.get("profile") or "cpu-tiny")[:40]
        kind, dtype = str(result.get("device") or "cpu")[:20], result.get("dtype") or "float32"
        band = charts.load_band(catalogue.reference_root, profile, kind=kind, dtype=str(dtype)[:40])
        plots = charts.run_plots(result.get("trace") or [], band)
    return {
        "sub": sub,
        "checks": checks,
        "plots": plots,
        "public": submissions.to_public(sub),
        "ex_title": manifest.title.zh if viewer.lang == "zh" else manifest.title.en,
        "live": sub.status in (SubmissionStatus.QUEUED, SubmissionStatus.RUNNING),
        "notebook": notebook_view.render_notebook(raw=sub.notebook, result=result),
        "attempts": other_attempts(session, user=viewer.principal, sub=sub),
        "override": submissions.current_overrides(session, subs=[sub]).get(sub.id),  # the reason behind a manual score
        "fault": message_key(sub.status, sub.message),  # a grader fault: the catalogue's text, not the stored detail
        "requests": requests.for_submission(session, submission_id=sub.id),  # the thread (_requests.html)
        "stamp": schedule_pages.submission_stamp(session, sub=sub, lang=viewer.lang),
    }


def other_attempts(session: Session, *, user, sub) -> list:
    """The same learner's other attempts at this exercise in this course that `user` may read (the compare
    form's choices): ids, attempts and times only, never the notebooks."""
    stmt = (
        select(Submission.id, Submission.attempt, Submission.created_at)
        .where(
            submissions.visible(user),
            Submission.identity_id == sub.identity_id,
            Submission.exercise_id == sub.exercise_id,
            Submission.course == sub.course,
            Submission.id != sub.id,
        )
        .order_by(Submission.created_at.desc(), Submission.id)
        .limit(MAX_ATTEMPTS_OFFERED)
    )
    return list(session.execute(stmt))


@router.get("/submissions/{submission_id}")
def submission_page(
    request: Request, submission_id: str, viewer: ViewerDep, catalogue: CatalogueDep, open_session: SessionFactoryDep
) -> Response:
    with open_session() as session:
        sub = submissions.get(session, user=viewer.principal, submission_id=submission_id)
        context = submission_context(viewer, sub, catalogue=catalogue, session=session)
        session.commit()
        return render(request, "submission.html", viewer=viewer, **context)


@router.get("/submissions/{submission_id}/notebook")
def download_submitted(submission_id: str, viewer: ViewerDep, open_session: SessionFactoryDep) -> Response:
    """The API's notebook download (GET /api/v1/submissions/{id}/notebook), for the page's link."""
    with open_session() as session:
        sub = submissions.get(session, user=viewer.principal, submission_id=submission_id)
        raw, disposition = bytes(sub.notebook), notebook_disposition(sub)
        session.commit()
    return Response(
        raw,
        media_type=NOTEBOOK_MEDIA_TYPE,
        headers={"Content-Disposition": disposition, "Cache-Control": "private, no-store"},
    )


@router.get("/submissions/{submission_id}/compare")
def compare_page(
    request: Request,
    submission_id: str,
    viewer: ViewerDep,
    open_session: SessionFactoryDep,
    other: Annotated[str, Query(max_length=64)] = "",
) -> Response:
    """Two attempts of one learner at one exercise, cell by cell; anything else (someone else's, another
    exercise) looks like a missing submission."""
    with open_session() as session:
        sub = submissions.get(session, user=viewer.principal, submission_id=submission_id)
        peer = submissions.get(session, user=viewer.principal, submission_id=other)
        if (peer.identity_id, peer.exercise_id, peer.course) != (sub.identity_id, sub.exercise_id, sub.course):
            raise NotFound(error("submission_not_found", submission=clip(other)))
        old, new = sorted((sub, peer), key=lambda s: (s.created_at, s.attempt))
        changes = notebook_view.compare_notebooks(old_raw=old.notebook, new_raw=new.notebook)
        page = render(
            request,
            "compare.html",
            viewer=viewer,
            old=old,
            new=new,
            back=sub.id,
            changes=changes,
            counts=notebook_view.changed_count(changes or []),
        )
        session.commit()
    return page


@router.get("/submissions/{submission_id}/events")
def submission_events(
    submission_id: str,
    viewer: ViewerDep,
    settings: SettingsDep,
    open_session: SessionFactoryDep,
    slots: StreamSlotsDep,
    last_event_id: Annotated[str | None, Header(max_length=40)] = None,
) -> Response:
    """The API's event stream, for the page's EventSource (authenticated by the session cookie)."""
    with open_session() as session:
        sub = submissions.get(session, user=viewer.principal, submission_id=submission_id)
        sent = (last_event_id or "").strip()
        after = int(sent) if sent.isdigit() else None
        start = events.plan(session, sub=sub, last_event_id=after)
        sid = sub.id
        session.commit()
    if start is None:
        return Response(status_code=204)
    try:
        release = slots.take(viewer.principal.identity_id)  # the API's cap: one count per identity
    except TooMany as exc:  # for EventSource, not a page: the status and Retry-After are what count
        return Response(exc.text(viewer.lang), status_code=429, headers=exc.headers, media_type="text/plain")
    frames = events.stream(
        open_session,
        submission_id=sid,
        start=start,
        poll_s=settings.events_poll_s,
        max_s=settings.events_max_s,
        estimate=events.estimator(open_session, submission_id=sid, settings=settings),  # position while queued
    )
    return EventSourceResponse(
        stream_slots.Held(events.encoded(frames), release), headers={"Cache-Control": "no-store"}
    )
