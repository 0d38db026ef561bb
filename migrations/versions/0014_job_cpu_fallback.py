"""jobs: cpu_fallback, a device job that runs on CPU ranks where a worker has too few accelerators

An exercise whose manifest lists "cpu" last in `device_kinds` (e.g. 2 NPUs with hccl, else 2 GPUs with
nccl, else 2 CPU ranks with gloo) files jobs with `cpu_fallback` true: a worker with fewer than `devices`
accelerators of one kind claims them and runs them on its CPU; a worker that has the devices waits for them.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("cpu_fallback", sa.Boolean, nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("cpu_fallback")
