"""What evidence for an auditor needs that the ledger did not keep: the text of each policy
file a run was made with (by its sha256, which the run's record already carries, so the
text proves itself), and per cluster and run what was expected of it (its policies and
its freshness check: how old its newest restorable snapshot may be, and whether it was).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """The table and the column (runs recorded before them have neither: evidence says so)."""
    op.create_table(
        "ledger_policies",
        sa.Column("sha256", sa.String(64), primary_key=True),
        sa.Column("path", sa.String(1024), nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("first_run", sa.BigInteger, nullable=False),
    )
    with op.batch_alter_table("ledger_cluster_runs") as table:
        table.add_column(sa.Column("expected", sa.Text))


def downgrade() -> None:
    """Drop them (a developer's tool)."""
    with op.batch_alter_table("ledger_cluster_runs") as table:
        table.drop_column("expected")
    op.drop_table("ledger_policies")
