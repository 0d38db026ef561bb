"""Who am I, and the token API: admins create and revoke tokens; everyone lists and revokes their own."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from service.auth import service
from service.auth.models import Identity, Token
from service.auth.schemas import IdentityPublic, Me, TokenCreate, TokenCreated, TokenList, TokenPublic
from service.deps import AdminUser, CurrentUser, SessionDep
from service.errors import NotFound, ServiceError, clip
from service.messages import error
from service.openapi import errors

router = APIRouter(tags=["identity"])


def _identity(identity: Identity) -> IdentityPublic:
    return IdentityPublic(
        issuer=identity.issuer, subject=identity.subject, name=identity.name, global_role=identity.global_role
    )


def _token(token: Token, identity: Identity) -> TokenPublic:
    return TokenPublic(
        id=token.id,
        identity=_identity(identity),
        course=token.course,
        label=token.label,
        state=service.token_state(token),
        created_at=token.created_at,
        expires_at=token.expires_at,
        revoked_at=token.revoked_at,
    )


@router.get("/me", response_model=Me)
def me(user: CurrentUser) -> Me:
    """The caller's identity, course memberships and credential scope."""
    return Me(
        identity=IdentityPublic(issuer=user.issuer, subject=user.subject, name=user.name, global_role=user.global_role),
        memberships=dict(user.memberships),
        scope=user.scope,
    )


@router.get("/tokens", response_model=TokenList)
def list_tokens(user: CurrentUser, session: SessionDep, include_inactive: bool = False) -> TokenList:
    """Admins see every token, others their own; never the token itself (only its hash is stored)."""
    rows = service.list_tokens(
        session, identity_id=None if user.is_admin else user.identity_id, include_inactive=include_inactive
    )
    return TokenList(items=[_token(t, i) for t, i in rows])


@router.post("/tokens", status_code=201, response_model=TokenCreated, responses=errors(403))
def create_token(body: TokenCreate, _: AdminUser, session: SessionDep) -> TokenCreated:
    """Create a token for (issuer, subject), enrolling it in `course` as `role` (admin: the global role)."""
    try:
        token, row, identity = service.issue_token(
            session,
            user=body.subject,
            role=body.role,
            course=body.course,
            issuer=body.issuer,
            expires_in_days=body.expires_in_days,
            label=body.label,
        )
    except ValueError as exc:
        raise ServiceError(str(exc), code="invalid_token_request", status_code=422) from None
    if body.name:
        identity.name = body.name
    session.commit()
    return TokenCreated(**_token(row, identity).model_dump(), token=token)


@router.delete("/tokens/{token_id}", response_model=TokenPublic, responses=errors(404))
def revoke_token(
    token_id: Annotated[int, Path(ge=1, le=2**31 - 1)], user: CurrentUser, session: SessionDep
) -> TokenPublic:
    """Revoke a token (admins: any; others: their own). Revoking twice is harmless."""
    token = session.get(Token, token_id)
    if token is None or not (user.is_admin or token.identity_id == user.identity_id):
        raise NotFound(
            error("token_not_found", token=clip(token_id)),
        )
    service.revoke_token(session, token_id=token_id)
    session.commit()
    identity = session.get(Identity, token.identity_id)
    assert identity is not None  # tokens.identity_id is a non-null foreign key
    return _token(token, identity)
