"""Fair share keys jobs by identity ("identity:<id>"), no longer by display name: rewrite existing jobs

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""
from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A correlated subquery works the same on SQLite and PostgreSQL.
    op.execute(
        "UPDATE jobs SET learner = 'identity:' || "
        "(SELECT CAST(submissions.identity_id AS VARCHAR(20)) FROM submissions WHERE submissions.id = jobs.submission_id) "
        "WHERE EXISTS (SELECT 1 FROM submissions WHERE submissions.id = jobs.submission_id)"
    )


def downgrade() -> None:
    op.execute(
        "UPDATE jobs SET learner = "
        "(SELECT submissions.\"user\" FROM submissions WHERE submissions.id = jobs.submission_id) "
        "WHERE EXISTS (SELECT 1 FROM submissions WHERE submissions.id = jobs.submission_id)"
    )
