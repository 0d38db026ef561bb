"""The states a submission and a job move through: one name for each, used everywhere in the service.

`StrEnum`s, so each member is the very string the database, the JSON API, webhooks and templates carry
("queued", "graded", ...): a row read back holds a plain str and still compares equal. It imports nothing,
so the models, the queue, the routes and the client can all use it without an import cycle.
tests/service/test_states.py keeps bare status strings out of service/.
"""

from __future__ import annotations

import enum


class SubmissionStatus(enum.StrEnum):
    """Where a submission stands (its `status` column). The last three are the engine's own verdicts
    (grading.result.Status); a grader fault is not_gradable, never a learner's zero."""

    QUEUED = "queued"  # waiting for a worker (again, after a retry or a regrade)
    RUNNING = "running"  # a worker holds its job's lease
    SUPERSEDED = "superseded"  # a later attempt replaced it before it started; never graded
    GRADED = "graded"
    ERROR = "error"  # the learner's code failed; the score counts what could still be checked
    NOT_GRADABLE = "not_gradable"


class JobStatus(enum.StrEnum):
    """Where a queue row stands (its `status` column); only `queued` can be claimed."""

    QUEUED = "queued"
    RUNNING = "running"  # leased by a worker; every write is fenced by the lease token
    DONE = "done"  # the grade was stored
    FAILED = "failed"  # attempts spent: the submission is recorded not_gradable
    CANCELLED = "cancelled"  # superseded before a worker claimed it
