"""safety.hold_on_outside_change until a person looks: each target's first change made
outside retention that nobody has acknowledged yet (``retention ledger ack``).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """The column, empty: changes found before it existed were held for one plan then."""
    with op.batch_alter_table("ledger_targets") as table:
        table.add_column(sa.Column("attention_run", sa.BigInteger))


def downgrade() -> None:
    """Drop it (a developer's tool)."""
    with op.batch_alter_table("ledger_targets") as table:
        table.drop_column("attention_run")
