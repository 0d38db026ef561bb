"""lti: resource links bound to exercises, and the deployment a line item was launched from

`lti_resource_links` maps a platform's resource link (platform, deployment, context, link id) to one
exercise: bound at the link's first launch that carries the deep-linking pick's custom `exercise_id`, from
the line item's `resourceId`, or by an instructor in the picker when the platform sent neither. A launch
without a custom `exercise_id` is resolved through it, so its grades still go back.
`lti_line_items.deployment_id` is the deployment the AGS client assertion names (NULL: made before this
revision; the assertion then names none).

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-03
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lti_resource_links",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column(
            "platform_id", sa.Integer, sa.ForeignKey("lti_platforms.id", ondelete="CASCADE"), nullable=False, index=True
        ),
        sa.Column("deployment_id", sa.String(255), nullable=False),
        sa.Column("context_id", sa.String(255), nullable=False),
        sa.Column("resource_link_id", sa.String(255), nullable=False),
        sa.Column("course", sa.String(200), nullable=False, index=True),
        sa.Column("exercise_id", sa.String(200), nullable=False),
        sa.Column("bound_by", sa.String(20), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=False),
        sa.UniqueConstraint(
            "platform_id", "deployment_id", "context_id", "resource_link_id", name="uq_lti_resource_link"
        ),
    )
    with op.batch_alter_table("lti_line_items") as batch:
        batch.add_column(sa.Column("deployment_id", sa.String(255), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("lti_line_items") as batch:
        batch.drop_column("deployment_id")
    op.drop_table("lti_resource_links")
