"""The pages' own words by key (service/messages.py's WEB); feedback itself comes from the grader in the
submission's language."""

from __future__ import annotations

from service.messages import WEB

LANGS = ("en", "zh")


def t(key: str, lang: str, **values: object) -> str:
    """Word `key` in `lang`; an unknown key shows as itself (a template typo is visible, not a 500)."""
    if key not in WEB:
        return key.format(**values) if values else key
    text = WEB[key].text(lang)
    return text.format(**values) if values else text
