"""The cookie-less browser binding: 1EdTech's LTI client-side storage (`lti_storage_target`, postMessage to
the platform's frame), for a framed launch in a browser that keeps no cookie of the tool's frame.

At /lti/login, when the platform names a storage target, the answer is a page whose script stores the
binding value (the one the cookie carries too) in the platform's storage, then goes on to the platform.
A launch that arrives without the cookie gets a page whose script reads the value back and posts the
launch again with it as `tg_bind`. The platform keeps its storage per tool origin, in the browser that
made the login, so an attacker's state completed in a victim's browser finds no value there: the login
state stays bound to the browser. A `tg_bind` field is taken only from a POST whose `Origin` is the
tool's own (a cross-site form could carry any value; it cannot claim our origin), and the picker form
carries it on (same rule). The scripts are constant (allowed by hash); the values are in data attributes.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re

from starlette.requests import Request

from service.lti import binding
from service.lti.urls import origin

FIELD = "tg_bind"
TARGET = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
STORE_SCRIPT = (
    "(function(){var d=document.getElementById('tg').dataset;"
    "var t=d.target==='_parent'?window.parent:window.parent.frames[d.target];"
    "var id='tg'+Math.random().toString(36).slice(2);var done=false;"
    "var go=function(){if(!done){done=true;location.replace(d.next)}};"
    "window.addEventListener('message',function(e){if(e.origin===d.origin&&e.data&&e.data.message_id===id)go()});"
    "try{t.postMessage({subject:'lti.put_data',message_id:id,key:d.key,value:d.value},d.origin)}catch(x){go()}"
    "setTimeout(go,3000)})()"
)
FETCH_SCRIPT = (
    "(function(){var d=document.getElementById('tg').dataset;"
    "var t=d.target==='_parent'?window.parent:window.parent.frames[d.target];"
    "var id='tg'+Math.random().toString(36).slice(2);var sent=false;"
    "var none=function(){if(!sent)document.getElementById('tg-none').hidden=false};"
    "window.addEventListener('message',function(e){if(e.origin!==d.origin||!e.data||e.data.message_id!==id)return;"
    "if(typeof e.data.value!=='string'){none();return}"
    "sent=true;var f=document.forms[0];f.elements['" + FIELD + "'].value=e.data.value;f.submit()});"
    "try{t.postMessage({subject:'lti.get_data',message_id:id,key:d.key},d.origin)}catch(x){none()}"
    "setTimeout(none,3000)})()"
)


def target(params: dict[str, str]) -> str | None:
    """The platform's storage target (`_parent` or a frame name), when it sent a well-formed one."""
    value = params.get("lti_storage_target", "")
    return value if TARGET.match(value) else None


def key_for(state: str) -> str:
    return "tg_bind_" + hashlib.sha256(state.encode()).hexdigest()[:32]


def _csp(script: str, frame_origins: str) -> dict[str, str]:
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    csp = (
        f"default-src 'none'; script-src 'sha256-{digest}'; form-action 'self'; "
        f"frame-ancestors {frame_origins}; base-uri 'none'"
    )
    # same-origin: the launch's second POST carries our Origin, which is what lets it carry tg_bind
    return {"Content-Security-Policy": csp, "Cache-Control": "no-store", "Referrer-Policy": "same-origin"}


def login_page(*, store: str, platform_origin: str, state: str, value: str, next_url: str, frame_origins: str):
    """The login's answer when the platform offers storage: store the binding value, then go to `next_url`."""
    e = html.escape
    page = (
        '<!doctype html><meta charset="utf-8"><title>titangrade</title>'
        f'<div id="tg" data-target="{e(store)}" data-origin="{e(platform_origin)}" data-key="{e(key_for(state))}" '
        f'data-value="{e(value)}" data-next="{e(next_url)}"></div>'
        f'<noscript><a href="{e(next_url)}">Continue</a></noscript><script>{STORE_SCRIPT}</script>'
    )
    return page, _csp(STORE_SCRIPT, frame_origins)


def fetch_page(*, store: str, platform_origin: str, params: dict[str, str], frame_origins: str):
    """A launch without the cookie: read the binding value back from the platform and post the launch again."""
    e = html.escape
    fields = "".join(
        f'<input type="hidden" name="{name}" value="{e(params.get(name, ""))}">'
        for name in ("id_token", "state", "lti_storage_target", FIELD)
    )
    page = (
        '<!doctype html><html lang="en"><meta charset="utf-8"><title>titangrade</title>'
        f'<form method="post" action="/lti/launch">{fields}</form>'
        f'<div id="tg" data-target="{e(store)}" data-origin="{e(platform_origin)}" '
        f'data-key="{e(key_for(params.get("state", "")))}"></div>'
        '<p id="tg-none" hidden>This browser keeps no sign-in for titangrade inside the LMS page. '
        "Set the link to open in a new window, then launch it again.</p>"
        f"<script>{FETCH_SCRIPT}</script>"
    )
    return page, _csp(FETCH_SCRIPT, frame_origins)


def sent_digest(request: Request, params: dict[str, str], *, tool_url: str) -> str | None:
    """The binding digest from the cookie, else from a `tg_bind` field posted by the tool's own page."""
    found = binding.sent_digest(request)
    if found is not None:
        return found
    value = params.get(FIELD, "")
    if len(value) != binding.VALUE_CHARS or not value.replace("-", "").replace("_", "").isalnum():
        return None
    sent = (request.headers.get("origin") or "").rstrip("/").lower()
    own = {origin(str(request.base_url))} | ({origin(tool_url)} if tool_url else set())
    return binding.digest(value) if sent in own else None
