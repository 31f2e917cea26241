"""Alembic's environment for the ledger: run programmatically (retention.ledger.database)
on the connection it passes in ``config.attributes``, never from an alembic.ini."""

from __future__ import annotations

from alembic import context

from retention.ledger.tables import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
