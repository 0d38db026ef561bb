"""FastAPI dependencies as `Annotated` aliases: settings, a DB session, the catalogue, the caller."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from grading.exercise import Catalogue
from service.auth.service import Principal, authenticate
from service.config import Settings
from service.errors import Forbidden, NotAuthenticated


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_catalogue(request: Request) -> Catalogue:
    return request.app.state.catalogue


def get_session(request: Request) -> Iterator[Session]:
    with request.app.state.sessions() as session:
        yield session


SettingsDep = Annotated[Settings, Depends(get_settings)]
CatalogueDep = Annotated[Catalogue, Depends(get_catalogue)]
SessionDep = Annotated[Session, Depends(get_session)]


def get_principal(request: Request, session: SessionDep) -> Principal:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise NotAuthenticated("send `Authorization: Bearer <token>`; get a token from an instructor or "
                               "`titangrade tokens create`")
    principal = authenticate(session, token=token.strip())
    session.commit()  # end the read transaction (SQLite holds the writer lock until then)
    return principal


CurrentUser = Annotated[Principal, Depends(get_principal)]


def require_staff(user: CurrentUser) -> Principal:
    if not user.is_staff:
        raise Forbidden("this endpoint is for instructors and admins; learners can only read their own submissions")
    return user


StaffUser = Annotated[Principal, Depends(require_staff)]
