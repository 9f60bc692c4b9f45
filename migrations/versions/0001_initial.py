"""initial schema: memories, segments, api keys

Revision ID: 0001
Revises: 
Create Date: 2026-11-22
"""
from alembic import op
import sqlalchemy as sa


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('api_keys',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('key_hash', sa.String(length=64), nullable=False),
    sa.Column('scopes', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_api_keys')),
    sa.UniqueConstraint('key_hash', name=op.f('uq_api_keys_key_hash')),
    sa.UniqueConstraint('name', name=op.f('uq_api_keys_name'))
    )
    op.create_table('memories',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('uuid', sa.String(length=32), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('source_lang', sa.String(length=35), nullable=False),
    sa.Column('target_lang', sa.String(length=35), nullable=False),
    sa.Column('description', sa.Text(), nullable=False),
    sa.Column('revision', sa.BigInteger(), nullable=False),
    sa.Column('segment_count', sa.BigInteger(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_memories')),
    sa.UniqueConstraint('name', name=op.f('uq_memories_name')),
    sa.UniqueConstraint('uuid', name=op.f('uq_memories_uuid'))
    )
    op.create_table('segments',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('memory_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('source', sa.Text(), nullable=False),
    sa.Column('target', sa.Text(), nullable=False),
    sa.Column('tuid', sa.String(length=255), nullable=True),
    sa.Column('context', sa.Text(), nullable=True),
    sa.Column('source_markup', sa.Text(), nullable=True),
    sa.Column('target_markup', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('created_by', sa.String(length=255), nullable=True),
    sa.Column('changed_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('changed_by', sa.String(length=255), nullable=True),
    sa.Column('usage_count', sa.Integer(), nullable=False),
    sa.Column('props', sa.JSON(), nullable=False),
    sa.Column('pair_hash', sa.String(length=32), nullable=False),
    sa.Column('revision', sa.BigInteger(), nullable=False),
    sa.Column('source_tokens', sa.JSON(), nullable=True),
    sa.Column('target_tokens', sa.JSON(), nullable=True),
    sa.Column('alignment', sa.JSON(), nullable=True),
    sa.Column('tokenizer_id', sa.String(length=64), nullable=True),
    sa.Column('aligner_id', sa.String(length=64), nullable=True),
    sa.ForeignKeyConstraint(['memory_id'], ['memories.id'], name=op.f('fk_segments_memory_id_memories'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_segments')),
    sa.UniqueConstraint('memory_id', 'pair_hash', name=op.f('uq_segments_memory_id_pair_hash')),
    sa.UniqueConstraint('memory_id', 'tuid', name=op.f('uq_segments_memory_id_tuid'))
    )
    with op.batch_alter_table('segments', schema=None) as batch_op:
        batch_op.create_index('ix_segments_memory_id_revision', ['memory_id', 'revision'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('segments', schema=None) as batch_op:
        batch_op.drop_index('ix_segments_memory_id_revision')

    op.drop_table('segments')
    op.drop_table('memories')
    op.drop_table('api_keys')
