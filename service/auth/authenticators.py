"""Authenticators: each turns a request's credentials into a Principal.

The API asks them in order. One answers None when its kind of credential is absent (the next one is
asked), a Principal when the credential is good, or raises `CredentialRejected` when it is present but bad.
Bearer tokens are the first kind; an LTI launch or a web session cookie are later ones, added to the list
given to `create_app` without touching the routes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from sqlalchemy.orm import Session

from grading.messages import Message
from service.auth.principal import Principal
from service.auth.service import principal_for_token
from service.messages import error

REALM = "titangrade"


class CredentialRejected(Exception):
    """A credential was sent but is unknown, revoked or expired; `challenge` becomes WWW-Authenticate."""

    def __init__(self, message: Message, *, challenge: str) -> None:
        super().__init__(message.en)
        self.message, self.zh, self.challenge = message.en, message.zh, challenge


class Authenticator(Protocol):
    name: str
    challenge: str  # the WWW-Authenticate challenge (RFC 9110 11.6.1) offered when nobody authenticated
    # The request headers (lower-case) its answer depends on: RequestGuard's CredentialCache keys on them.
    credential_headers: tuple[str, ...]

    def authenticate(self, session: Session, headers: Mapping[str, str]) -> Principal | None:
        """Read-only: `session` is a read session (service.db.read_sessions), so it must write nothing."""
        ...


class BearerTokenAuthenticator:
    """`Authorization: Bearer <token>` (RFC 6750), looked up by hash."""

    name = "token"
    challenge = f'Bearer realm="{REALM}"'
    credential_headers: tuple[str, ...] = ("authorization",)

    def authenticate(self, session: Session, headers: Mapping[str, str]) -> Principal | None:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            return None
        token = token.strip()
        principal = principal_for_token(session, token=token) if 0 < len(token) <= 200 else None
        if principal is None:
            raise CredentialRejected(
                error("token_rejected"),
                challenge=f'{self.challenge}, error="invalid_token"',
            )
        return principal


def authenticate(
    session: Session, headers: Mapping[str, str], authenticators: Sequence[Authenticator]
) -> Principal | None:
    """The first authenticator's answer; None when the request carries no credential at all."""
    for authenticator in authenticators:
        principal = authenticator.authenticate(session, headers)
        if principal is not None:
            return principal
    return None


def default_authenticators() -> list[Authenticator]:
    return [BearerTokenAuthenticator()]
