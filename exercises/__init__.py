"""Learner notebooks with their manifests, and `exercises.lab`, the course runtime they import."""
