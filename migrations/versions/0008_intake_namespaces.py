"""intake namespaces, per-course integration names, limits per learner+course+exercise, revoked web sessions

An intake integration's issuer was free text, so an instructor could name the local issuer (or an LMS's)
and act for its learners. From here on an integration's issuer is its own namespace (intake:<course>:<name>)
unless an admin links it; rows made before keep their issuer but are `unconfirmed` (refused at intake)
until an admin confirms them. Integration names become unique per course. The limits index gains the
course, since the limits now count per identity, course and exercise. Signing out records the session's
nonce in web_session_revocations, checked on every request.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("intake_integrations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("issuer_kind", sa.String(length=20), nullable=False, server_default="own"))
        batch_op.add_column(sa.Column("linked_by", sa.String(length=200), nullable=True))
        batch_op.drop_constraint("uq_intake_integrations_name", type_="unique")
        batch_op.create_unique_constraint("uq_intake_integrations_course_name", ["course", "name"])
        batch_op.create_index("ix_intake_integrations_name", ["name"])
    # an issuer chosen freely before this revision is not trusted until an admin confirms it
    op.execute(
        "UPDATE intake_integrations SET issuer_kind = 'unconfirmed' WHERE issuer <> 'intake:' || course || ':' || name"
    )
    op.drop_index("ix_submissions_learner_limits", table_name="submissions")
    op.create_index(
        "ix_submissions_learner_limits", "submissions", ["identity_id", "course", "exercise_id", "status", "created_at"]
    )
    op.create_table(
        "web_session_revocations",
        sa.Column("nonce", sa.String(length=64), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("revoked_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("nonce"),
    )
    op.create_index("ix_web_session_revocations_expires_at", "web_session_revocations", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_web_session_revocations_expires_at", table_name="web_session_revocations")
    op.drop_table("web_session_revocations")
    op.drop_index("ix_submissions_learner_limits", table_name="submissions")
    op.create_index(
        "ix_submissions_learner_limits", "submissions", ["identity_id", "exercise_id", "status", "created_at"]
    )
    # names unique again across courses: a name two courses share keeps its oldest row, the others get the
    # suffix remove() gives
    op.execute(
        "UPDATE intake_integrations SET name = substr(name, 1, 60) || '~dup-' || CAST(id AS VARCHAR(20)) "
        "WHERE id NOT IN (SELECT min(id) FROM intake_integrations GROUP BY name)"
    )
    with op.batch_alter_table("intake_integrations", schema=None) as batch_op:
        batch_op.drop_index("ix_intake_integrations_name")
        batch_op.drop_constraint("uq_intake_integrations_course_name", type_="unique")
        batch_op.create_unique_constraint("uq_intake_integrations_name", ["name"])
        batch_op.drop_column("linked_by")
        batch_op.drop_column("issuer_kind")
