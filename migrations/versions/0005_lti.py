"""LTI 1.3: platform registrations, login states, context -> course, AGS line items

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""
import sqlalchemy as sa
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'lti_platforms',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('name', sa.String(length=200), nullable=False),
        sa.Column('issuer', sa.String(length=500), nullable=False),
        sa.Column('client_id', sa.String(length=200), nullable=False),
        sa.Column('auth_login_url', sa.String(length=2000), nullable=False),
        sa.Column('auth_token_url', sa.String(length=2000), nullable=False),
        sa.Column('keyset_url', sa.String(length=2000), nullable=False),
        sa.Column('deployment_ids', sa.JSON(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('removed_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('issuer', 'client_id', name='uq_lti_platform_issuer_client'))
    op.create_table(
        'lti_login_states',
        sa.Column('state', sa.String(length=64), nullable=False),
        sa.Column('nonce', sa.String(length=64), nullable=False),
        sa.Column('platform_id', sa.Integer(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('expires_at', sa.DateTime(), nullable=False),
        sa.Column('used_at', sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(['platform_id'], ['lti_platforms.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('state'),
        sa.UniqueConstraint('nonce'))
    op.create_index('ix_lti_login_states_platform_id', 'lti_login_states', ['platform_id'])
    op.create_index('ix_lti_login_states_expires_at', 'lti_login_states', ['expires_at'])
    op.create_table(
        'lti_contexts',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('platform_id', sa.Integer(), nullable=False),
        sa.Column('context_id', sa.String(length=255), nullable=False),
        sa.Column('course', sa.String(length=200), nullable=False),
        sa.Column('title', sa.String(length=500), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(['platform_id'], ['lti_platforms.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('platform_id', 'context_id', name='uq_lti_context'))
    op.create_index('ix_lti_contexts_platform_id', 'lti_contexts', ['platform_id'])
    op.create_index('ix_lti_contexts_course', 'lti_contexts', ['course'])
    op.create_table(
        'lti_line_items',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('platform_id', sa.Integer(), nullable=False),
        sa.Column('url', sa.String(length=2000), nullable=False),
        sa.Column('course', sa.String(length=200), nullable=False),
        sa.Column('exercise_id', sa.String(length=200), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(['platform_id'], ['lti_platforms.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('platform_id', 'url', name='uq_lti_line_item'))
    op.create_index('ix_lti_line_items_platform_id', 'lti_line_items', ['platform_id'])
    op.create_index('ix_lti_line_items_course', 'lti_line_items', ['course'])


def downgrade() -> None:
    op.drop_table('lti_line_items')
    op.drop_table('lti_contexts')
    op.drop_table('lti_login_states')
    op.drop_table('lti_platforms')
