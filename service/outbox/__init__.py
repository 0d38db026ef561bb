"""The outbox: grade events written with the grade, fanned out to targets, delivered with retries.

`models` (events, deliveries, attempts), `protocol` (what a kind of target plugs in), `targets` (fan-out),
`delivery` (the loop: claim, send, record) and `ssrf` (the address-checking HTTP client). Webhooks and LTI
grade passback are two kinds of target; service/wiring.py registers them. The outbox imports neither.
"""
