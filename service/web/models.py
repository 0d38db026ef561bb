"""Revoked web sessions: the cookie is signed and stateless, so signing out records its nonce here and
every request checks it; a row is kept only until the session it names would have expired anyway."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import DateTime, String
from sqlalchemy.orm import Mapped, mapped_column

from service.db import Base, utcnow


class RevokedWebSession(Base):
    __tablename__ = "web_session_revocations"

    nonce: Mapped[str] = mapped_column(String(64), primary_key=True)  # the session cookie's nonce
    expires_at: Mapped[dt.datetime] = mapped_column(DateTime, index=True)  # the session's own expiry
    revoked_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
