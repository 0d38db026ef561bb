"""Fixtures for the LTI tests: the tool (the real app under uvicorn, its keys in a temp directory) with the
platform harness (lti_support.Platform, its own process) registered with it."""
from __future__ import annotations

import pytest
from lti_support import Browser, Platform


@pytest.fixture(scope="module")
def lti(module_db_url, test_catalogue, svc, tmp_path_factory):
    """The tool (live server) with a registered platform harness: .url, .platform, .browser, .app, .tokens,
    .platform_id."""
    from service.app import create_app
    from service.db import transaction
    from service.lti import service as lti_service

    keys = tmp_path_factory.mktemp("lti") / "keys"
    app = create_app(svc.settings(module_db_url, lti_key_dir=keys), catalogue=test_catalogue)
    live = svc.live_server(app)
    app.state.settings = app.state.settings.model_copy(update={"lti_tool_url": live.url})
    live.tokens = svc.tokens(app.state.sessions)
    with live:
        platform = Platform(tool_url=live.url)
        try:
            with transaction(app.state.sessions) as s:
                live.platform_id = lti_service.create(s, **platform.registration()).id
            live.platform, live.browser, live.keys = platform, Browser(live.url, platform), keys
            yield live
        finally:
            platform.stop()
    app.state.engine.dispose()


@pytest.fixture
def counts(lti):
    """Rows a bad launch must not add: identities, memberships, tokens, contexts, line items."""
    from sqlalchemy import func, select

    from service.auth.models import Identity, Membership, Token
    from service.lti.models import LtiContext, LtiLineItem

    def count() -> dict[str, int]:
        with lti.app.state.sessions() as s:
            return {m.__tablename__: s.scalar(select(func.count()).select_from(m))
                    for m in (Identity, Membership, Token, LtiContext, LtiLineItem)}

    return count
