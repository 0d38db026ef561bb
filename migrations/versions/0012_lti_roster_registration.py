"""lti: rosters (NRPS), the tool's own line items, dynamically registered platforms awaiting approval

- `memberships.inactive_at`: a member the platform's roster no longer lists (or lists as Inactive) is kept
  but marked inactive, so the gradebook's missing-work rows and their token access drop them; a launch or a
  later sync that lists them again clears it.
- `lti_platforms.status`: `active` (every platform made before this revision) or `pending`, a platform that
  registered itself with LTI Dynamic Registration and awaits an admin's approval; launches from a pending
  platform are refused.
- `lti_contexts`: the roster service URL a launch carried and the state of its last sync (throttle, error).
- `lti_line_items`: the resource link and whether the tool made the line item itself (`origin`).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-03
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("memberships") as batch:
        batch.add_column(sa.Column("inactive_at", sa.DateTime(), nullable=True))
    with op.batch_alter_table("lti_platforms") as batch:
        batch.add_column(sa.Column("status", sa.String(20), nullable=False, server_default="active"))
    with op.batch_alter_table("lti_contexts") as batch:
        batch.add_column(sa.Column("memberships_url", sa.String(2000), nullable=True))
        batch.add_column(sa.Column("roster_requested_at", sa.DateTime(), nullable=True))
        batch.add_column(sa.Column("roster_synced_at", sa.DateTime(), nullable=True))
        batch.add_column(sa.Column("roster_members", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("roster_error", sa.String(1000), nullable=False, server_default=""))
    with op.batch_alter_table("lti_line_items") as batch:
        batch.add_column(sa.Column("resource_link_id", sa.String(255), nullable=True))
        batch.add_column(sa.Column("origin", sa.String(20), nullable=False, server_default="platform"))


def downgrade() -> None:
    with op.batch_alter_table("lti_line_items") as batch:
        batch.drop_column("origin")
        batch.drop_column("resource_link_id")
    with op.batch_alter_table("lti_contexts") as batch:
        for column in ("roster_error", "roster_members", "roster_synced_at", "roster_requested_at", "memberships_url"):
            batch.drop_column(column)
    op.execute("DELETE FROM lti_platforms WHERE status <> 'active'")  # unapproved registrations cannot be kept
    with op.batch_alter_table("lti_platforms") as batch:
        batch.drop_column("status")
    with op.batch_alter_table("memberships") as batch:
        batch.drop_column("inactive_at")
