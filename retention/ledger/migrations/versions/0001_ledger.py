"""The ledger's first schema: runs and their chain heads, targets, clusters per run,
snapshots and events.

Revision ID: 0001
Revises:
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

ID = 128
TIME = 32
SEQ = sa.BigInteger().with_variant(sa.Integer, "sqlite")


def upgrade() -> None:
    """Create every table (frozen here: later changes are later revisions)."""
    op.create_table(
        "ledger_runs",
        sa.Column("seq", SEQ, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("shard", sa.String(32), nullable=False),
        sa.Column("mode", sa.String(16), nullable=False),
        sa.Column("started", sa.String(TIME), nullable=False),
        sa.Column("ended", sa.String(TIME)),
        sa.Column("exit_code", sa.Integer),
        sa.Column("signal", sa.String(16)),
        sa.Column("actor", sa.String(256), nullable=False),
        sa.Column("key_name", sa.String(256)),
        sa.Column("base_url", sa.String(1024)),
        sa.Column("service_version", sa.String(64)),
        sa.Column("version", sa.String(64), nullable=False),
        sa.Column("host", sa.String(256), nullable=False),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column("config_sha256", sa.String(64)),
        sa.Column("policies", sa.Text, nullable=False),
        sa.Column("plan_digest", sa.String(64)),
        sa.Column("approvals", sa.Text, nullable=False),
        sa.Column("summary", sa.Text, nullable=False),
        sa.Column("baseline", sa.Boolean, nullable=False),
        sa.Column("position", sa.Integer),
        sa.Column("content_sha256", sa.String(64)),
        sa.Column("prev_hash", sa.String(64)),
        sa.Column("hash", sa.String(64)),
        sa.UniqueConstraint("shard", "position", name="uq_ledger_runs_chain"),
    )
    op.create_table(
        "ledger_heads",
        sa.Column("shard", sa.String(32), primary_key=True),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
    )
    op.create_table(
        "ledger_targets",
        sa.Column("project_id", sa.String(ID), primary_key=True),
        sa.Column("cluster_id", sa.String(ID), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("name", sa.String(512), nullable=False),
        sa.Column("first_run", sa.BigInteger, nullable=False),
        sa.Column("last_run", sa.BigInteger, nullable=False),
        sa.Column("gone_run", sa.BigInteger),
    )
    op.create_table(
        "ledger_cluster_runs",
        sa.Column("run_seq", sa.BigInteger, primary_key=True),
        sa.Column("project_id", sa.String(ID), primary_key=True),
        sa.Column("cluster_id", sa.String(ID), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("name", sa.String(512), nullable=False),
        sa.Column("snapshots", sa.Integer, nullable=False),
        sa.Column("counts", sa.Text, nullable=False),
        sa.Column("holds", sa.Text, nullable=False),
        sa.Column("ladder", sa.Text, nullable=False),
        sa.Column("newest_age_seconds", sa.BigInteger),
        sa.Column("walk_error", sa.Text),
    )
    op.create_table(
        "ledger_snapshots",
        sa.Column("project_id", sa.String(ID), primary_key=True),
        sa.Column("cluster_id", sa.String(ID), primary_key=True),
        sa.Column("snapshot_id", sa.String(ID), primary_key=True),
        sa.Column("created", sa.String(TIME), nullable=False),
        sa.Column("complete", sa.Boolean, nullable=False),
        sa.Column("expires", sa.String(TIME)),
        sa.Column("do_not_delete", sa.Boolean, nullable=False),
        sa.Column("pending", sa.Boolean, nullable=False),
        sa.Column("pending_expires", sa.String(TIME)),
        sa.Column("pending_do_not_delete", sa.Boolean),
        sa.Column("first_run", sa.BigInteger, nullable=False),
        sa.Column("changed_run", sa.BigInteger, nullable=False),
        sa.Column("gone_run", sa.BigInteger),
    )
    op.create_index(
        "ix_ledger_snapshots_listed",
        "ledger_snapshots",
        ["project_id", "cluster_id", "gone_run"],
    )
    op.create_table(
        "ledger_events",
        sa.Column("seq", SEQ, primary_key=True, autoincrement=True),
        sa.Column("run_seq", sa.BigInteger, nullable=False),
        sa.Column("at", sa.String(TIME), nullable=False),
        sa.Column("kind", sa.String(24), nullable=False),
        sa.Column("project_id", sa.String(ID), nullable=False),
        sa.Column("cluster_id", sa.String(ID), nullable=False),
        sa.Column("snapshot_id", sa.String(ID)),
        sa.Column("before", sa.Text),
        sa.Column("after", sa.Text),
        sa.Column("detail", sa.Text),
    )
    op.create_index("ix_ledger_events_run", "ledger_events", ["run_seq"])
    op.create_index(
        "ix_ledger_events_snapshot", "ledger_events", ["project_id", "cluster_id", "snapshot_id"]
    )


def downgrade() -> None:
    """Drop every table (a developer's tool: a ledger is never downgraded in use)."""
    for table in (
        "ledger_events",
        "ledger_snapshots",
        "ledger_cluster_runs",
        "ledger_targets",
        "ledger_heads",
        "ledger_runs",
    ):
        op.drop_table(table)
