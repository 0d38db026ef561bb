"""intake: a covering index for the per-learner rate and attempt limits

The limit check runs in every intake's write transaction (on SQLite under the single writer lock). Without
this index it read each of the learner's submission rows, whose notebook blobs sit before `created_at` and
`status` (overflow pages); with it the check reads the index alone.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30
"""

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_submissions_learner_limits", "submissions", ["identity_id", "exercise_id", "status", "created_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_submissions_learner_limits", table_name="submissions")
