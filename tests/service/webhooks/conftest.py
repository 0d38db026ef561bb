"""Fixtures for the webhook tests: a receiver process and grades stored as a worker stores them
(shared with tests/service/outbox, defined in tests/service/delivery_support.py)."""

from __future__ import annotations

from delivery_support import receivers, store_grade, wait_for  # noqa: F401  (fixtures)
