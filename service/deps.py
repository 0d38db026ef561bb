"""FastAPI dependencies as `Annotated` aliases: settings, a DB session, the catalogue, the caller.

They are `async def` because they do no I/O (the session connects lazily, in the route's thread): FastAPI
runs a plain `def` dependency in the thread pool, and on a busy machine each such hop costs more than
the dependency itself (an intake request made eight of them).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Header, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from grading.exercise import Catalogue
from service.auth.principal import Principal
from service.config import Settings
from service.errors import Forbidden, NotAuthenticated, preferred_lang

# Declares the bearer scheme in OpenAPI (so /docs has "Authorize"); the check itself ran in RequestGuard.
bearer_scheme = HTTPBearer(
    auto_error=False, scheme_name="bearer", description="an API token: `Authorization: Bearer tg_...`"
)


async def get_settings(request: Request) -> Settings:
    return request.app.state.settings


async def get_catalogue(request: Request) -> Catalogue:
    return request.app.state.catalogue


async def get_session(request: Request) -> AsyncIterator[Session]:
    session = request.app.state.sessions()  # no connection yet: the route's first query (in its thread) makes it
    try:
        yield session
    finally:
        await run_in_threadpool(session.close)  # may roll back over the network: never on the event loop


async def get_lang(accept_language: Annotated[str | None, Header(include_in_schema=False)] = None) -> str:
    return preferred_lang(accept_language)


SettingsDep = Annotated[Settings, Depends(get_settings)]
CatalogueDep = Annotated[Catalogue, Depends(get_catalogue)]
SessionDep = Annotated[Session, Depends(get_session)]
LangDep = Annotated[str, Depends(get_lang)]


async def get_principal(
    request: Request, _: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)] = None
) -> Principal:
    """The caller that RequestGuard authenticated (it answers 401 itself before a route runs)."""
    principal = getattr(request.state, "principal", None)
    if principal is None:
        raise NotAuthenticated("send `Authorization: Bearer <token>`", zh="请发送 `Authorization: Bearer <令牌>`")
    return principal


CurrentUser = Annotated[Principal, Depends(get_principal)]


async def require_staff(user: CurrentUser) -> Principal:
    if not user.is_staff:
        raise Forbidden(
            "this endpoint is for instructors and admins; learners can only read their own submissions",
            zh="该接口仅供教师和管理员使用；学员只能查看自己的提交",
        )
    return user


async def require_admin(user: CurrentUser) -> Principal:
    if not user.is_admin:
        raise Forbidden("this endpoint is for administrators (global role admin)", zh="该接口仅供管理员使用")
    return user


StaffUser = Annotated[Principal, Depends(require_staff)]
AdminUser = Annotated[Principal, Depends(require_admin)]
