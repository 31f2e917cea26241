"""The ledger's tables, as SQLAlchemy Core sees them (the migrations in migrations/versions
made them; a test holds the two equal).

Times are text, ``YYYY-MM-DDTHH:MM:SSZ`` in UTC (core.timestamps): the same in SQLite and
PostgreSQL, ordered as text, and hashed as written. Structured values (counts, holds,
ladders, a change's before and after) are JSON text, canonical (sorted keys), for the same
reason.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

metadata = MetaData()

# Ids of the API are 24 hex digits; a plan carries ids up to 128 characters (core.ids).
ID = 128
TIME = 32

# One row a run: inserted when it starts (unfinished: ``ended`` null), completed when it
# ends, in the transaction that appends it to its shard's chain (``position``, ``hash``).
runs = Table(
    "ledger_runs",
    metadata,
    Column(
        "seq", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    ),
    Column("run_id", String(64), nullable=False),
    Column("shard", String(32), nullable=False),
    Column("mode", String(16), nullable=False),
    Column("started", String(TIME), nullable=False),
    Column("ended", String(TIME)),
    Column("exit_code", Integer),
    Column("signal", String(16)),
    Column("actor", String(256), nullable=False),
    Column("key_name", String(256)),
    Column("base_url", String(1024)),
    Column("service_version", String(64)),
    Column("version", String(64), nullable=False),
    Column("host", String(256), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("config_sha256", String(64)),
    Column("policies", Text, nullable=False),  # JSON: [{name, path, sha256}]
    Column("plan_digest", String(64)),
    Column("approvals", Text, nullable=False),  # JSON: {clusters: [...], by: actor}
    Column("summary", Text, nullable=False),  # JSON: the run's counts
    Column("baseline", Boolean, nullable=False),
    Column("position", Integer),
    Column("content_sha256", String(64)),
    Column("prev_hash", String(64)),
    Column("hash", String(64)),
    UniqueConstraint("shard", "position", name="uq_ledger_runs_chain"),
)

# The head of each shard's chain: locked (SELECT ... FOR UPDATE) while a run is appended, so
# that shards append side by side and two runs of one shard never take the same position.
heads = Table(
    "ledger_heads",
    metadata,
    Column("shard", String(32), primary_key=True),
    Column("position", Integer, nullable=False),
    Column("hash", String(64), nullable=False),
)

# Where each shard's chain starts once ledger.keep removed its oldest records: the position
# and hash of the last record removed (verify starts after it instead of the genesis).
anchors = Table(
    "ledger_anchors",
    metadata,
    Column("shard", String(32), primary_key=True),
    Column("position", Integer, nullable=False),
    Column("hash", String(64), nullable=False),
    Column("pruned_at", String(TIME)),
)

# The clusters and config servers the ledger has seen, the run that last walked each, and
# the run that first found a change made outside retention nobody has acknowledged since
# (``retention ledger ack``): safety.hold_on_outside_change holds the cluster until then.
targets = Table(
    "ledger_targets",
    metadata,
    Column("project_id", String(ID), primary_key=True),
    Column("cluster_id", String(ID), primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("name", String(512), nullable=False),
    Column("first_run", BigInteger, nullable=False),
    Column("last_run", BigInteger, nullable=False),
    Column("gone_run", BigInteger),
    Column("attention_run", BigInteger),
    # The digest of its last walk (ledger.sight.walk_digest), kept only by a write made at
    # the known_version its plan read: a plan whose walk has it reads none of its snapshots.
    Column("walk_digest", String(64)),
    # Moved on by every write of what the ledger knows of its snapshots (a plan's walk
    # recorded, an apply's or an undo's changes).
    Column("known_version", BigInteger, nullable=False, server_default="0"),
)

# Per cluster and run: what the plan made of it.
cluster_runs = Table(
    "ledger_cluster_runs",
    metadata,
    Column("run_seq", BigInteger, primary_key=True),
    Column("project_id", String(ID), primary_key=True),
    Column("cluster_id", String(ID), primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("name", String(512), nullable=False),
    Column("snapshots", Integer, nullable=False),
    Column("counts", Text, nullable=False),  # JSON: by action
    Column("holds", Text, nullable=False),  # JSON: [{kind, reason}]
    Column("ladder", Text, nullable=False),  # JSON: the restore-point ladder
    Column("newest_age_seconds", BigInteger),
    Column("walk_error", Text),
    # JSON: its policies and freshness check ({policies, withinSeconds, stale, newest,
    # expectedFrom}); null in runs recorded before schema 0005, and left out of the chain's
    # line then, so that their hashes still hold.
    Column("expected", Text),
)

# What the ledger knows of each snapshot now: its fields when last seen, a change of ours
# sent and not yet seen (pending_*), and the runs that first saw it and saw it go.
snapshots = Table(
    "ledger_snapshots",
    metadata,
    Column("project_id", String(ID), primary_key=True),
    Column("cluster_id", String(ID), primary_key=True),
    Column("snapshot_id", String(ID), primary_key=True),
    Column("created", String(TIME), nullable=False),
    Column("complete", Boolean, nullable=False),
    Column("expires", String(TIME)),
    Column("do_not_delete", Boolean, nullable=False),
    Column("pending", Boolean, nullable=False),
    Column("pending_expires", String(TIME)),
    Column("pending_do_not_delete", Boolean),
    Column("first_run", BigInteger, nullable=False),
    Column("changed_run", BigInteger, nullable=False),
    Column("gone_run", BigInteger),
)
Index(
    "ix_ledger_snapshots_listed",
    snapshots.c.project_id,
    snapshots.c.cluster_id,
    snapshots.c.gone_run,
)

# The text of each policy file a run was made with, by the sha256 of its bytes (the runs'
# ``policies`` name it): evidence reads what a policy promised from it, and a text whose
# sha256 is not its key was edited.
policies = Table(
    "ledger_policies",
    metadata,
    Column("sha256", String(64), primary_key=True),
    Column("path", String(1024), nullable=False),
    Column("text", Text, nullable=False),
    Column("first_run", BigInteger, nullable=False),
)

# Append-only: everything a run saw or did to a snapshot or a cluster.
events = Table(
    "ledger_events",
    metadata,
    Column(
        "seq", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    ),
    Column("run_seq", BigInteger, nullable=False),
    Column("at", String(TIME), nullable=False),
    Column("kind", String(24), nullable=False),
    Column("project_id", String(ID), nullable=False),
    Column("cluster_id", String(ID), nullable=False),
    Column("snapshot_id", String(ID)),
    Column("before", Text),  # JSON
    Column("after", Text),  # JSON
    Column("detail", Text),  # JSON: alertId, approval, status...
)
Index("ix_ledger_events_run", events.c.run_seq)
Index("ix_ledger_events_snapshot", events.c.project_id, events.c.cluster_id, events.c.snapshot_id)
