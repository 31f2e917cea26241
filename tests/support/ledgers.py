"""Ledgers for tests: a SQLite file, or a fresh database of the test PostgreSQL server
(tests/support/postgres.py: skipped where there is none, a failure under CI=true)."""

from __future__ import annotations

from pathlib import Path

import pytest

from retention.config.ledgerplace import LedgerPlace


def ledger_place_for(request: pytest.FixtureRequest, backend: str) -> LedgerPlace:
    """A fresh, empty ledger of ``backend`` (sqlite or postgresql) for the requesting test."""
    if backend == "sqlite":
        folder: Path = request.getfixturevalue("tmp_path")
        return LedgerPlace(f"sqlite:///{folder / 'ledger.db'}")
    database = request.getfixturevalue("postgres_database")
    return LedgerPlace(database.url, password=database.password)
