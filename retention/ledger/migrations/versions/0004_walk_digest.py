"""A plan that finds a cluster exactly as the last plan walked it reads none of its
snapshots: each target keeps the digest of its last walk, and a version that every write
of what the ledger knows of its snapshots moves on (a plan's walk, an apply's or an
undo's changes), so that a digest is kept only by the write it describes.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """The columns: no digest yet (the next plan compares every cluster in full and keeps
    one), version 0."""
    with op.batch_alter_table("ledger_targets") as table:
        table.add_column(sa.Column("walk_digest", sa.String(64)))
        table.add_column(
            sa.Column("known_version", sa.BigInteger, nullable=False, server_default="0")
        )


def downgrade() -> None:
    """Drop them (a developer's tool)."""
    with op.batch_alter_table("ledger_targets") as table:
        table.drop_column("known_version")
        table.drop_column("walk_digest")
