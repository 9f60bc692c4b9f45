"""memories have a kind: a translation memory, or a glossary (DeepL's glossaries are memories)

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-26
"""
from alembic import op
import sqlalchemy as sa


revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None

# how a DeepL glossary was marked before the column existed
DEEPL_GLOSSARY_DESCRIPTION = "DeepL glossary (created through /deepl/v2/glossaries)"


def upgrade() -> None:
    with op.batch_alter_table('memories') as batch:
        batch.add_column(
            sa.Column('kind', sa.String(length=16), nullable=False, server_default='memory')
        )
    memories = sa.table('memories', sa.column('kind', sa.String), sa.column('description', sa.Text))
    op.execute(
        memories.update()
        .where(memories.c.description == DEEPL_GLOSSARY_DESCRIPTION)
        .values(kind='glossary')
    )


def downgrade() -> None:
    memories = sa.table('memories', sa.column('kind', sa.String), sa.column('description', sa.Text))
    op.execute(
        memories.update()
        .where(memories.c.kind == 'glossary')
        .values(description=DEEPL_GLOSSARY_DESCRIPTION)
    )
    with op.batch_alter_table('memories') as batch:
        batch.drop_column('kind')
