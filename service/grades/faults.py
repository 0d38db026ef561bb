"""Grader faults as a learner reads them: the stored message keeps the technical detail (English, for logs,
the API's `message` and the operator's queue page); pages show the catalogue's text for its kind
(service/messages.py WEB `fault_*`) in the page's language, never a host's set-up instructions.

The stored texts start with the fixed words below, written only here, so a stored row (old ones included)
tells its kind without a column of its own.
"""

from __future__ import annotations

from service.states import SubmissionStatus

NOT_GRADABLE = "the grader failed on its side, so this attempt was not scored (it does not count against you): "
UNSTORABLE = "the result could not be stored: "
REGRADE_FAILED = "a regrade could not run, the previous grade stands: "
REASON_CHARS = 300  # of the database's own words kept in the unstorable message


def not_gradable_message(error: str) -> str:
    return f"{NOT_GRADABLE}{error[:500]}. Resubmit later or ask an instructor to regrade."


def unstorable_message(reason: str) -> str:
    return (
        f"{UNSTORABLE}{reason[:REASON_CHARS]}. The checks' feedback is left out; change what your code prints or "
        "returns (very long or unusual text), then resubmit, or ask an instructor."
    )


def regrade_failed_message(message: str) -> str:
    return f"{REGRADE_FAILED}{message}"


def message_key(status: str, message: str | None) -> str | None:
    """The catalogue key (WEB) of the learner's text for a stored grader fault, or None for any other message
    (the engine's feedback, already in the submission's language)."""
    text = message or ""
    if text.startswith(REGRADE_FAILED):
        return "fault_regrade_failed"
    if status == SubmissionStatus.NOT_GRADABLE:
        return "fault_not_gradable"
    if status == SubmissionStatus.ERROR and text.startswith(UNSTORABLE):
        return "fault_unstorable"
    return None
