"""Typed failures of the grading engine.

`InvalidSubmission` is the learner's (or client's) fault and maps to a 4xx before anything runs.
`GraderFault` is ours: the caller retries it or records the submission as not gradable, never as a 0.
"""
from __future__ import annotations


class InvalidSubmission(ValueError):
    """The submitted notebook cannot be graded as sent. `code` is stable, `message` names the fix."""

    def __init__(self, code: str, message: str, *, status_code: int = 422) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status_code = status_code

    def to_dict(self) -> dict:
        return {"code": self.code, "message": self.message}


class GraderFault(RuntimeError):
    """Something on our side failed (kernel would not start, sandbox setup, internal error).

    `retryable` tells the worker whether another attempt may succeed.
    """

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


class UnknownExercise(InvalidSubmission):
    def __init__(self, exercise_id: str) -> None:
        super().__init__(
            "unknown_exercise",
            f"exercise {exercise_id!r} does not exist; list exercises with `titangrade exercises list`",
            status_code=404,
        )
