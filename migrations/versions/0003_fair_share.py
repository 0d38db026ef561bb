"""fair share, superseded attempts, waiting-time estimates

jobs.learner and jobs.claimed_at let the claim give the next job to the learner with the least work
running or recently granted; submissions.superseded_by records which later attempt replaced a queued one;
course_settings holds the per-course supersede policy; worker_heartbeats.long_slots tells the waiting-time
estimate how many slots take long-lane jobs.

Revision ID: 0003
Revises: 0001
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("learner", sa.String(length=200), nullable=False, server_default=""))
        batch_op.add_column(sa.Column("claimed_at", sa.DateTime(), nullable=True))
    # Existing jobs take their submission's learner (quoted: "user" is reserved in PostgreSQL).
    op.execute(
        'UPDATE jobs SET learner = (SELECT submissions."user" FROM submissions '
        "WHERE submissions.id = jobs.submission_id)"
    )
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.create_index("ix_jobs_learner_status", ["learner", "status"], unique=False)
        batch_op.create_index("ix_jobs_recent_grants", ["claimed_at", "learner", "lane"], unique=False)

    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("superseded_by", sa.String(length=32), nullable=True))

    with op.batch_alter_table("worker_heartbeats", schema=None) as batch_op:
        batch_op.add_column(sa.Column("long_slots", sa.Integer(), nullable=True))

    op.create_table(
        "course_settings",
        sa.Column("course", sa.String(length=200), nullable=False),
        sa.Column("supersede", sa.String(length=10), nullable=True),
        sa.Column("updated_by", sa.String(length=200), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("course"),
    )


def downgrade() -> None:
    # Plain ALTER TABLE ... DROP COLUMN (SQLite >= 3.35 and PostgreSQL): a batch rebuild of `submissions` on
    # SQLite would drop the table, and foreign-key cascades would then delete every job and event row.
    op.drop_table("course_settings")
    op.execute("ALTER TABLE worker_heartbeats DROP COLUMN long_slots")
    op.execute("ALTER TABLE submissions DROP COLUMN superseded_by")
    op.drop_index("ix_jobs_recent_grants", table_name="jobs")
    op.drop_index("ix_jobs_learner_status", table_name="jobs")
    op.execute("ALTER TABLE jobs DROP COLUMN claimed_at")
    op.execute("ALTER TABLE jobs DROP COLUMN learner")
