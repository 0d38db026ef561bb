"""The grading steps, in order: validate the upload -> sanitize -> execute (limit output) -> extract -> check
-> score.

Each step is a small function of explicit arguments; `grading.pipeline` chains them.
"""
