"""identities (issuer + subject) with course memberships; expiring, revocable tokens; idempotency
request hashes; progress events numbered by grading run

Existing users become identities of issuer 'titangrade' with their name as subject. A token's old
(role, course) becomes a membership: admin -> global_role admin; instructor or learner with a course ->
that course; a learner without a course -> course 'default' (where its submissions were filed); an
instructor without a course (which used to mean every course) -> an instructor membership in every
course that has submissions. Every submission's (user, course) becomes a learner membership if the
user has none there. Migrated tokens keep working and never expire (`titangrade tokens list` shows them).

Revision ID: 0002
Revises: 0003
Create Date: 2026-11-30
"""
import datetime as dt

import sqlalchemy as sa
from alembic import op

revision = '0002'
down_revision = '0003'  # main's 0003 (fair share) landed first; the lead may re-chain
branch_labels = None
depends_on = None

ISSUER = 'titangrade'


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def upgrade() -> None:
    op.create_table(
        'identities',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('issuer', sa.String(length=200), nullable=False),
        sa.Column('subject', sa.String(length=200), nullable=False),
        sa.Column('name', sa.String(length=200), nullable=False),
        sa.Column('global_role', sa.String(length=20), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('issuer', 'subject', name='uq_identity_issuer_subject'))
    op.create_table(
        'memberships',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('identity_id', sa.Integer(), nullable=False),
        sa.Column('course', sa.String(length=200), nullable=False),
        sa.Column('role', sa.String(length=20), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(['identity_id'], ['identities.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('identity_id', 'course', name='uq_membership_identity_course'))
    with op.batch_alter_table('memberships', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_memberships_identity_id'), ['identity_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_memberships_course'), ['course'], unique=False)

    conn = op.get_bind()
    ids = _migrate_people(conn)

    with op.batch_alter_table('tokens', schema=None) as batch_op:
        batch_op.add_column(sa.Column('identity_id', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('label', sa.String(length=200), nullable=False, server_default=''))
        batch_op.add_column(sa.Column('expires_at', sa.DateTime(), nullable=True))
        batch_op.add_column(sa.Column('revoked_at', sa.DateTime(), nullable=True))
    tokens = sa.table('tokens', sa.column('id', sa.Integer), sa.column('user', sa.String),
                      sa.column('revoked', sa.Boolean), sa.column('identity_id', sa.Integer),
                      sa.column('revoked_at', sa.DateTime), sa.column('label', sa.String),
                      sa.column('role', sa.String), sa.column('course', sa.String))
    now = _now()
    for row in conn.execute(sa.select(tokens.c.id, tokens.c.user, tokens.c.revoked, tokens.c.role,
                                      tokens.c.course)).all():
        conn.execute(tokens.update().where(tokens.c.id == row.id).values(
            identity_id=ids[row.user], revoked_at=now if row.revoked else None,
            # an admin is global, and a course-less instructor token used to mean every course
            course=None if row.role == 'admin' or not row.course else row.course,
            label=f'migrated {row.role} token'))
    with op.batch_alter_table('tokens', schema=None) as batch_op:
        batch_op.alter_column('identity_id', existing_type=sa.Integer(), nullable=False)
        batch_op.create_foreign_key('fk_tokens_identity_id', 'identities', ['identity_id'], ['id'],
                                    ondelete='CASCADE')
        batch_op.create_index(batch_op.f('ix_tokens_identity_id'), ['identity_id'], unique=False)
        batch_op.drop_column('user')
        batch_op.drop_column('role')
        batch_op.drop_column('revoked')

    with op.batch_alter_table('submissions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('identity_id', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('request_hash', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('run', sa.Integer(), nullable=False, server_default='1'))
    subs = sa.table('submissions', sa.column('user', sa.String), sa.column('identity_id', sa.Integer))
    for user, identity_id in ids.items():
        conn.execute(subs.update().where(subs.c.user == user).values(identity_id=identity_id))
    with op.batch_alter_table('submissions', schema=None) as batch_op:
        batch_op.alter_column('identity_id', existing_type=sa.Integer(), nullable=False)
        batch_op.drop_constraint('uq_submission_idempotency', type_='unique')
        batch_op.create_unique_constraint('uq_submission_idempotency', ['identity_id', 'idempotency_key'])
        batch_op.create_foreign_key('fk_submissions_identity_id', 'identities', ['identity_id'], ['id'])
        batch_op.create_index(batch_op.f('ix_submissions_identity_id'), ['identity_id'], unique=False)

    with op.batch_alter_table('progress_events', schema=None) as batch_op:
        batch_op.add_column(sa.Column('run', sa.Integer(), nullable=False, server_default='1'))


def _migrate_people(conn) -> dict[str, int]:
    """Identities for every user name in tokens and submissions, and memberships; returns name -> id."""
    tokens = sa.table('tokens', sa.column('user', sa.String), sa.column('role', sa.String),
                      sa.column('course', sa.String), sa.column('revoked', sa.Boolean))
    subs = sa.table('submissions', sa.column('user', sa.String), sa.column('course', sa.String))
    identities = sa.table('identities', sa.column('id', sa.Integer), sa.column('issuer', sa.String),
                          sa.column('subject', sa.String), sa.column('name', sa.String),
                          sa.column('global_role', sa.String), sa.column('created_at', sa.DateTime))
    members = sa.table('memberships', sa.column('identity_id', sa.Integer), sa.column('course', sa.String),
                       sa.column('role', sa.String), sa.column('created_at', sa.DateTime))
    token_rows = conn.execute(sa.select(tokens.c.user, tokens.c.role, tokens.c.course)).all()
    sub_rows = conn.execute(sa.select(subs.c.user, subs.c.course).distinct()).all()
    all_courses = sorted({r.course for r in sub_rows})
    names = sorted({r.user for r in token_rows} | {r.user for r in sub_rows})
    admins = {r.user for r in token_rows if r.role == 'admin'}
    now = _now()
    ids: dict[str, int] = {}
    for name in names:
        conn.execute(identities.insert().values(issuer=ISSUER, subject=name, name=name,
                                                global_role='admin' if name in admins else None, created_at=now))
        ids[name] = conn.execute(sa.select(identities.c.id).where(identities.c.issuer == ISSUER,
                                                                  identities.c.subject == name)).scalar_one()
    wanted: dict[tuple[str, str], str] = {}
    for r in token_rows:
        if r.role == 'instructor':
            for course in ([r.course] if r.course else all_courses):
                wanted[(r.user, course)] = 'instructor'
        elif r.role == 'learner':
            wanted.setdefault((r.user, r.course or 'default'), 'learner')
    for r in sub_rows:
        wanted.setdefault((r.user, r.course), 'learner')
    for (name, course), role in sorted(wanted.items()):
        conn.execute(members.insert().values(identity_id=ids[name], course=course, role=role, created_at=now))
    return ids


def downgrade() -> None:
    """Back to name-keyed tokens: each token takes its identity's name and its highest role."""
    conn = op.get_bind()
    with op.batch_alter_table('progress_events', schema=None) as batch_op:
        batch_op.drop_column('run')
    with op.batch_alter_table('submissions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_submissions_identity_id'))
        batch_op.drop_constraint('fk_submissions_identity_id', type_='foreignkey')
        batch_op.drop_constraint('uq_submission_idempotency', type_='unique')
        batch_op.create_unique_constraint('uq_submission_idempotency', ['user', 'idempotency_key'])
        batch_op.drop_column('run')
        batch_op.drop_column('request_hash')
        batch_op.drop_column('identity_id')
    with op.batch_alter_table('tokens', schema=None) as batch_op:
        batch_op.add_column(sa.Column('user', sa.String(length=200), nullable=False, server_default=''))
        batch_op.add_column(sa.Column('role', sa.String(length=20), nullable=False, server_default='learner'))
        batch_op.add_column(sa.Column('revoked', sa.Boolean(), nullable=False, server_default=sa.false()))
    conn.execute(sa.text(
        'UPDATE tokens SET "user" = (SELECT name FROM identities WHERE identities.id = tokens.identity_id), '
        "revoked = (revoked_at IS NOT NULL), role = CASE "
        "WHEN EXISTS (SELECT 1 FROM identities i WHERE i.id = tokens.identity_id AND i.global_role = 'admin') "
        "THEN 'admin' WHEN EXISTS (SELECT 1 FROM memberships m WHERE m.identity_id = tokens.identity_id "
        "AND m.role = 'instructor' AND (tokens.course IS NULL OR m.course = tokens.course)) THEN 'instructor' "
        "ELSE 'learner' END"))
    with op.batch_alter_table('tokens', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_tokens_identity_id'))
        batch_op.drop_constraint('fk_tokens_identity_id', type_='foreignkey')
        batch_op.drop_column('revoked_at')
        batch_op.drop_column('expires_at')
        batch_op.drop_column('label')
        batch_op.drop_column('identity_id')
    op.drop_table('memberships')
    op.drop_table('identities')
