"""webhook endpoints, per-target outbox deliveries with an attempt log, signed-intake integrations

grade_outbox.delivered_at now means "fanned out into outbox_deliveries" (one row per target).
Rows already in the outbox when this runs are marked fanned out, so registering the first endpoint
never floods it with history (replay a time range to send them).

Revision ID: 0004
Revises: 0002
Create Date: 2026-11-30
"""
import datetime as dt

import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'webhook_endpoints',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('course', sa.String(length=200), nullable=False),
        sa.Column('url', sa.String(length=2000), nullable=False),
        sa.Column('event_types', sa.JSON(), nullable=False),
        sa.Column('description', sa.String(length=500), nullable=False),
        sa.Column('secret', sa.String(length=200), nullable=False),
        sa.Column('previous_secret', sa.String(length=200), nullable=True),
        sa.Column('previous_expires_at', sa.DateTime(), nullable=True),
        sa.Column('created_by', sa.String(length=200), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('removed_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id'))
    op.create_index('ix_webhook_endpoints_course', 'webhook_endpoints', ['course'])
    op.create_table(
        'outbox_deliveries',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('event_id', sa.Integer(), nullable=False),
        sa.Column('target_kind', sa.String(length=20), nullable=False),
        sa.Column('target_id', sa.Integer(), nullable=False),
        sa.Column('course', sa.String(length=200), nullable=False),
        sa.Column('event_type', sa.String(length=60), nullable=False),
        sa.Column('message_id', sa.String(length=64), nullable=False),
        sa.Column('body', sa.Text(), nullable=False),
        sa.Column('status', sa.String(length=20), nullable=False),
        sa.Column('attempts', sa.Integer(), nullable=False),
        sa.Column('next_attempt_at', sa.DateTime(), nullable=False),
        sa.Column('window_started_at', sa.DateTime(), nullable=True),
        sa.Column('lease_token', sa.String(length=32), nullable=True),
        sa.Column('lease_expires_at', sa.DateTime(), nullable=True),
        sa.Column('last_error', sa.Text(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('delivered_at', sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(['event_id'], ['grade_outbox.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('event_id', 'target_kind', 'target_id', name='uq_delivery_event_target'))
    for column in ('event_id', 'target_id', 'course', 'message_id', 'status', 'next_attempt_at'):
        op.create_index(f'ix_outbox_deliveries_{column}', 'outbox_deliveries', [column])
    op.create_table(
        'delivery_attempts',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('delivery_id', sa.Integer(), nullable=False),
        sa.Column('attempt', sa.Integer(), nullable=False),
        sa.Column('started_at', sa.DateTime(), nullable=False),
        sa.Column('status_code', sa.Integer(), nullable=True),
        sa.Column('latency_ms', sa.Float(), nullable=False),
        sa.Column('ok', sa.Boolean(), nullable=False),
        sa.Column('error', sa.Text(), nullable=False),
        sa.Column('response_excerpt', sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(['delivery_id'], ['outbox_deliveries.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'))
    op.create_index('ix_delivery_attempts_delivery_id', 'delivery_attempts', ['delivery_id'])
    op.create_table(
        'intake_integrations',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('name', sa.String(length=100), nullable=False),
        sa.Column('course', sa.String(length=200), nullable=False),
        sa.Column('issuer', sa.String(length=200), nullable=False),
        sa.Column('secret', sa.String(length=200), nullable=False),
        sa.Column('previous_secret', sa.String(length=200), nullable=True),
        sa.Column('previous_expires_at', sa.DateTime(), nullable=True),
        sa.Column('created_by', sa.String(length=200), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('removed_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('name', name='uq_intake_integrations_name'))
    op.create_index('ix_intake_integrations_course', 'intake_integrations', ['course'])
    outbox = sa.table('grade_outbox', sa.column('delivered_at', sa.DateTime))
    op.get_bind().execute(outbox.update().where(outbox.c.delivered_at.is_(None))
                          .values(delivered_at=dt.datetime.now(dt.UTC).replace(tzinfo=None)))


def downgrade() -> None:
    op.drop_table('intake_integrations')
    op.drop_table('delivery_attempts')
    op.drop_table('outbox_deliveries')
    op.drop_table('webhook_endpoints')
