"""schedules: when an exercise opens and is due, its late policy, per-learner extensions, the course's zone

`exercise_schedules` (one row per course and exercise), `extensions` (one per course, learner and exercise),
`course_settings.timezone` (IANA name, UTC by default: how times are shown) and, on `submissions`, the
lateness of each attempt as of its upload (`late_by_s`, `penalty_percent`: 0 for every existing row, which
had no schedule), recomputed when a schedule or an extension changes.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "exercise_schedules",
        sa.Column("course", sa.String(200), primary_key=True),
        sa.Column("exercise_id", sa.String(100), primary_key=True),
        sa.Column("opens_at", sa.DateTime(), nullable=True),
        sa.Column("due_at", sa.DateTime(), nullable=True),
        sa.Column("late_kind", sa.String(10), nullable=False, server_default="none"),
        sa.Column("late_percent", sa.Float(), nullable=False, server_default="0"),
        sa.Column("floor_percent", sa.Float(), nullable=False, server_default="0"),
        sa.Column("updated_by", sa.String(200), nullable=False, server_default=""),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
    )
    op.create_table(
        "extensions",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("course", sa.String(200), nullable=False),
        sa.Column("identity_id", sa.Integer(), sa.ForeignKey("identities.id", ondelete="CASCADE"), nullable=False),
        sa.Column("exercise_id", sa.String(100), nullable=False),
        sa.Column("due_at", sa.DateTime(), nullable=False),
        sa.Column("granted_by", sa.String(200), nullable=False, server_default=""),
        sa.Column("granted_at", sa.DateTime(), nullable=False),
        sa.UniqueConstraint("course", "identity_id", "exercise_id", name="uq_extension"),
    )
    op.create_index("ix_extensions_course", "extensions", ["course"])
    op.create_index("ix_extensions_identity_id", "extensions", ["identity_id"])
    with op.batch_alter_table("course_settings") as batch:
        batch.add_column(sa.Column("timezone", sa.String(64), nullable=False, server_default="UTC"))
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("late_by_s", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("penalty_percent", sa.Float(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("penalty_percent")
        batch.drop_column("late_by_s")
    with op.batch_alter_table("course_settings") as batch:
        batch.drop_column("timezone")
    op.drop_index("ix_extensions_identity_id", table_name="extensions")
    op.drop_index("ix_extensions_course", table_name="extensions")
    op.drop_table("extensions")
    op.drop_table("exercise_schedules")
