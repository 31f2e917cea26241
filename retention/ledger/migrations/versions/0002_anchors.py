"""ledger.keep: where each shard's chain starts once its oldest records were removed.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """The anchors table (empty: nothing was pruned before it existed)."""
    op.create_table(
        "ledger_anchors",
        sa.Column("shard", sa.String(32), primary_key=True),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.Column("pruned_at", sa.String(32)),
    )


def downgrade() -> None:
    """Drop it (a developer's tool)."""
    op.drop_table("ledger_anchors")
