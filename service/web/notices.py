"""The messages a page shows from its `?error=` query: a code from a fixed catalogue, never the text itself.

Anyone can send a learner or instructor a link, so a page that printed `?error=...` as its own message would
show whatever the sender wrote (phishing text under the site's name). Unknown codes show nothing.
"""

from __future__ import annotations

from service.web.i18n import t

# code -> the i18n key of its message; the pages' own redirects use only these codes
PAGE_ERRORS = {
    "bad_form": "bad_form",
    "bad_token": "bad_token",
    "too_large": "upload_too_large",
}


def page_error(code: str, lang: str) -> str:
    """The catalogued message for `code` in `lang`, or "" for any other value."""
    key = PAGE_ERRORS.get(code)
    return t(key, lang) if key else ""
