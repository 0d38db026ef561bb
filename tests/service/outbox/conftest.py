"""Fixtures for the outbox tests (the delivery loop): a receiver process and grades stored as a worker stores them
(shared with tests/service/webhooks, defined in tests/service/delivery_support.py)."""

from __future__ import annotations

from delivery_support import receivers, store_grade, wait_for  # noqa: F401  (fixtures)
