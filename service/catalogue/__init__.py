"""The exercise catalogue over HTTP (`/api/v1/exercises`): views, statistics, bulk regrade.

Named apart from `exercises/` (the learner notebooks and the course runtime) and from the `titangrade exercises`
authoring commands; the URLs keep the learner's word, exercises."""
