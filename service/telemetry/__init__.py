"""Telemetry a person can follow: JSON log lines carrying request/submission/job/attempt ids (logs.py),
a span per phase of a grading exported over OTLP when configured (spans.py, from the phases the grading
process records: phases.py), and per-process phase-duration histograms on /metrics (metrics.py)."""
