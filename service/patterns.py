"""Regular expressions that text fields of the API share.

No control characters anywhere a learner, an LMS or an instructor names something: PostgreSQL refuses
NUL (a 500 that schemathesis found once), and CR/LF would break headers and logs.
"""

PRINTABLE = r"^[^\x00-\x1f\x7f]*$"  # may be empty
PRINTABLE_NAME = r"^[^\x00-\x1f\x7f]+$"  # at least one character
