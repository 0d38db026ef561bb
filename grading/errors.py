"""Typed failures of the grading engine.

`InvalidSubmission` is the learner's (or client's) fault and is raised before anything runs; its `code` is
stable, and the service maps codes to HTTP statuses (service/errors.py), so the engine knows no HTTP.
`GraderFault` is ours: the caller retries it or records the submission as not gradable, never as a 0.
`HostBusy` is the GraderFault of a host resource that is only taken for now: the run has not started, so a
queue hands the job back without counting an attempt, and a one-shot caller may wait for it.
"""

from __future__ import annotations


class InvalidSubmission(ValueError):
    """The submitted notebook cannot be graded as sent. `code` is stable, `message` names the fix."""

    def __init__(self, code: str, message: str, **_legacy: object) -> None:
        # `**_legacy` swallows the old `status_code=` keyword that grading/steps/validate_upload.py still passes
        # (that file belongs to the engine hardening work); it is ignored. Drop it once no caller sends it.
        super().__init__(message)
        self.code = code
        self.message = message

    def to_dict(self) -> dict:
        return {"code": self.code, "message": self.message}


class GraderFault(RuntimeError):
    """Something on our side failed (kernel would not start, sandbox setup, internal error).

    `retryable` tells the worker whether another attempt may succeed.
    """

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


class HostBusy(GraderFault):
    """A host resource (a sandbox user, a device, a control group) is held by other runs right now: nothing
    of the submission ran. A subclass of GraderFault, so a caller that knows no better still gets "not
    gradable"; the service's executor hands the job back as not started instead (no attempt counted)."""

    def __init__(self, message: str, *, resource: str) -> None:
        super().__init__(message, retryable=True)
        self.resource = resource  # what ran out: "sandbox user", "device", "control group"


class UnknownExercise(InvalidSubmission):
    def __init__(self, exercise_id: str) -> None:
        shown = exercise_id if len(exercise_id) <= 80 else exercise_id[:79] + "…"
        super().__init__(
            "unknown_exercise",
            f"exercise {shown!r} does not exist; see the list of exercises (`titangrade exercises "
            "list` on the command line, GET /api/v1/exercises over HTTP)",
        )
        self.exercise_id = exercise_id
