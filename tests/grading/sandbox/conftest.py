"""Fixtures for the sandbox tests; the helpers live in sandbox_helpers.py (imported by name)."""
from sandbox_helpers import bwrap_sandbox  # noqa: F401  (fixture)
