"""Learners and instructors talk about a submission: regrade requests and problem reports, answered by staff."""
