"""FastAPI dependencies as `Annotated` aliases: settings, a DB session, the catalogue, the caller."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Header, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from grading.exercise import Catalogue
from service.auth.principal import Principal
from service.config import Settings
from service.errors import Forbidden, NotAuthenticated, preferred_lang

# Declares the bearer scheme in OpenAPI (so /docs has "Authorize"); the check itself ran in RequestGuard.
bearer_scheme = HTTPBearer(
    auto_error=False, scheme_name="bearer", description="an API token: `Authorization: Bearer tg_...`"
)


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_catalogue(request: Request) -> Catalogue:
    return request.app.state.catalogue


def get_session(request: Request) -> Iterator[Session]:
    with request.app.state.sessions() as session:
        yield session


def get_lang(accept_language: Annotated[str | None, Header(include_in_schema=False)] = None) -> str:
    return preferred_lang(accept_language)


SettingsDep = Annotated[Settings, Depends(get_settings)]
CatalogueDep = Annotated[Catalogue, Depends(get_catalogue)]
SessionDep = Annotated[Session, Depends(get_session)]
LangDep = Annotated[str, Depends(get_lang)]


def get_principal(
    request: Request, _: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)] = None
) -> Principal:
    """The caller that RequestGuard authenticated (it answers 401 itself before a route runs)."""
    principal = getattr(request.state, "principal", None)
    if principal is None:
        raise NotAuthenticated("send `Authorization: Bearer <token>`", zh="请发送 `Authorization: Bearer <令牌>`")
    return principal


CurrentUser = Annotated[Principal, Depends(get_principal)]


def require_staff(user: CurrentUser) -> Principal:
    if not user.is_staff:
        raise Forbidden(
            "this endpoint is for instructors and admins; learners can only read their own submissions",
            zh="该接口仅供教师和管理员使用；学员只能查看自己的提交",
        )
    return user


def require_admin(user: CurrentUser) -> Principal:
    if not user.is_admin:
        raise Forbidden("this endpoint is for administrators (global role admin)", zh="该接口仅供管理员使用")
    return user


StaffUser = Annotated[Principal, Depends(require_staff)]
AdminUser = Annotated[Principal, Depends(require_admin)]
