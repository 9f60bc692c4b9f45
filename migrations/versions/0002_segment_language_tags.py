"""segments keep the language tags they came with (de-AT text in a de memory)

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-24
"""
from alembic import op
import sqlalchemy as sa


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('segments') as batch:
        batch.add_column(sa.Column('source_lang', sa.String(length=35), nullable=True))
        batch.add_column(sa.Column('target_lang', sa.String(length=35), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('segments') as batch:
        batch.drop_column('target_lang')
        batch.drop_column('source_lang')
