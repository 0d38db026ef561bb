"""lti: login states, sign-in tickets and deep-linking picks are bound to the browser that started them

`lti_login_states.browser_hash` is the sha256 of the random cookie `/lti/login` sets; `/lti/launch`,
`/lti/enter` and `/lti/deep-link` spend a row only for a request carrying that cookie (login CSRF).
Rows made before this revision have no hash and can no longer be spent; they expire within
`LTI_STATE_TTL_S` and are deleted by the next login.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("lti_login_states") as batch:
        batch.add_column(sa.Column("browser_hash", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("lti_login_states") as batch:
        batch.drop_column("browser_hash")
