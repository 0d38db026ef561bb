"""A signed-in browser tab for the page tests: its own context (cookies) in the page language and width,
signed in through the real sign-in form, with every console and page error collected."""

from __future__ import annotations


def signed_in(browser, url: str, token: str, *, lang: str, width: int, height: int = 900):
    """(context, page, errors): the page is on /exercises, where signing in lands."""
    ctx = browser.new_context(viewport={"width": width, "height": height})
    ctx.add_cookies([{"name": "tg_lang", "value": lang, "url": url}])
    page = ctx.new_page()
    errors: list[str] = []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url + "/login")
    page.fill("#token", token)
    page.click("#sign-in")
    page.wait_for_url("**/exercises")
    return ctx, page, errors
