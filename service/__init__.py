"""titangrade service: HTTP API, database, durable queue, workers, webhooks, LTI, CLI."""
