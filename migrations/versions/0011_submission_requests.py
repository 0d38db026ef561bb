"""submission requests: a learner's regrade request or problem report on a submission, and staff's answer

One row per request (kind regrade | problem, status open | answered | closed). A partial unique index holds
at most one open request per submission; the course index serves the staff's list (open first).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-03
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

OPEN = sa.text("status = 'open'")


def upgrade() -> None:
    op.create_table(
        "submission_requests",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("submission_id", sa.String(length=32), nullable=False),
        sa.Column("course", sa.String(length=200), nullable=False),
        sa.Column("exercise_id", sa.String(length=100), nullable=False),
        sa.Column("identity_id", sa.Integer(), nullable=False),
        sa.Column("author", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("answer", sa.Text(), nullable=True),
        sa.Column("answered_by", sa.String(length=200), nullable=True),
        sa.Column("answered_at", sa.DateTime(), nullable=True),
        sa.Column("closed_by", sa.String(length=200), nullable=True),
        sa.Column("closed_at", sa.DateTime(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["submission_id"], ["submissions.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["identity_id"], ["identities.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_submission_requests_submission_id", "submission_requests", ["submission_id"])
    op.create_index("ix_submission_requests_identity_id", "submission_requests", ["identity_id"])
    op.create_index("ix_submission_requests_course_status", "submission_requests", ["course", "status", "created_at"])
    op.create_index(
        "uq_submission_requests_one_open",
        "submission_requests",
        ["submission_id"],
        unique=True,
        sqlite_where=OPEN,
        postgresql_where=OPEN,
    )


def downgrade() -> None:
    op.drop_index("uq_submission_requests_one_open", table_name="submission_requests")
    op.drop_index("ix_submission_requests_course_status", table_name="submission_requests")
    op.drop_index("ix_submission_requests_identity_id", table_name="submission_requests")
    op.drop_index("ix_submission_requests_submission_id", table_name="submission_requests")
    op.drop_table("submission_requests")
