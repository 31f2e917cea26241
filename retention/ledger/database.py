"""Opening the ledger: the engine for its URL, the schema brought up to this retention's
(Alembic, on first use of an older ledger), and a newer ledger refused before anything is
read or written.

SQLite is opened in WAL mode (readers never wait for the writer) with every write
transaction taken at once (BEGIN IMMEDIATE): two processes that write the same file wait
for each other (``busy_timeout``) instead of one failing on a lock it could not upgrade.
PostgreSQL is reached through psycopg 3; its password comes from the place, never the URL
the configuration or any output shows.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from sqlalchemy import Connection, Engine, Select, create_engine, event, inspect
from sqlalchemy.engine import URL, Dialect
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from retention.config.ledgerplace import LedgerPlace
from retention.errors import ConfigError, LedgerError, LedgerSchemaError
from retention.version import __version__

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

log = logging.getLogger("retention.ledger")

MIGRATIONS = Path(__file__).parent / "migrations"
# PostgreSQL's advisory lock key of the ledger's migrations (any fixed number of our own).
MIGRATION_LOCK = 7_204_040
# How long a writer of a SQLite ledger waits for another one (a shard's batch, a verify).
SQLITE_BUSY_MS = 120_000


@dataclass(frozen=True)
class DriverSQL:
    """A statement as the database's driver takes it: its SQL in the driver's parameter
    style, the order of its parameters (None: the driver takes them by name) and the values
    the statement itself sets."""

    text: str
    order: tuple[str, ...] | None
    fixed: Mapping[str, Any]

    def params(self, row: Mapping[str, Any]) -> Any:
        """One row's parameters, as the driver takes them."""
        if self.order is not None:
            return tuple(row[k] if k in row else self.fixed[k] for k in self.order)
        return {**self.fixed, **row} if self.fixed else row


def driver_sql(name: str, statement: Any, dialect: Dialect, keys: tuple[str, ...]) -> DriverSQL:
    """``statement`` (``name`` tells it apart) compiled once for ``dialect`` and rows with
    ``keys``: the ledger's hot reads and writes go to the driver, past SQLAlchemy's per-row
    work, which cost more of a plan's CPU than the database did."""
    cache = (name, dialect.name, keys)
    found = _DRIVER_SQL.get(cache)
    if found is None:
        compiled = statement.compile(dialect=dialect, column_keys=list(keys))
        order = tuple(compiled.positiontup or ()) if compiled.positional else None
        fixed = {k: v for k, v in compiled.params.items() if k not in keys}
        found = _DRIVER_SQL[cache] = DriverSQL(str(compiled), order, fixed)
    return found


# Every statement driver_sql compiled: (name, dialect, keys) -> its SQL.
_DRIVER_SQL: dict[tuple[str, str, tuple[str, ...]], DriverSQL] = {}
_CURSORS = itertools.count()


def stream_rows(
    conn: Connection,
    name: str,
    statement: Any,
    values: Mapping[str, Any],
    size: int = 5000,
) -> Iterator[Sequence[Any]]:
    """The rows of one SELECT as the driver gives them (tuples), streamed in ``conn``'s
    transaction: on PostgreSQL through a server-side cursor, so that a run of a million
    events is read without holding them (a client-side cursor fetches every row at once).
    ``name`` tells the statement apart (its compiled SQL is kept)."""
    sql = driver_sql(name, statement, conn.dialect, tuple(values))
    raw: Any = conn.connection.dbapi_connection
    if raw is None:
        raise LedgerError("the ledger's connection is closed")
    if conn.dialect.name == "postgresql":
        cursor = raw.cursor(name=f"retention_stream_{next(_CURSORS)}")
        cursor.itersize = size
    else:
        cursor = raw.cursor()
    try:
        cursor.execute(sql.text, sql.params(values))
        while rows := cursor.fetchmany(size):
            yield from rows
    finally:
        cursor.close()


class Ledger:
    """An open ledger: its place and its engine. Close it (or use it in a with block)."""

    def __init__(self, place: LedgerPlace, engine: Engine) -> None:
        self.place = place
        self.engine = engine

    @property
    def sqlite(self) -> bool:
        """Whether it is a SQLite file (one writer at a time)."""
        return self.engine.dialect.name == "sqlite"

    @contextmanager
    def writing(self, what: str) -> Iterator[Connection]:
        """One transaction; a database error leaves it as a LedgerError saying ``what``
        was being done and where, without the password."""
        try:
            with self.engine.begin() as conn:
                yield conn
        except (SQLAlchemyError, self.engine.dialect.loaded_dbapi.Error) as exc:
            raise LedgerError(f"ledger {self.place.shown}: {what}: {_why(exc)}") from None

    @contextmanager
    def reading(self, what: str) -> Iterator[Connection]:
        """One read-only transaction (on SQLite a deferred one: it never waits for a
        writer, nor makes one wait)."""
        # PostgreSQL: one snapshot for the whole read, so that a run finished meanwhile
        # cannot make a verify see a chain half moved on.
        options: dict[str, object] = {"ledger_reading": True}
        if self.engine.dialect.name == "postgresql":
            options["isolation_level"] = "REPEATABLE READ"
        try:
            with self.engine.connect() as conn, conn.execution_options(**options).begin():
                yield conn
        except SQLAlchemyError as exc:
            raise LedgerError(f"ledger {self.place.shown}: {what}: {_why(exc)}") from None

    def fetch(self, what: str, statement: Select[Any], values: Mapping[str, Any]) -> list[Any]:
        """The rows of one read-only SELECT as the driver gives them (tuples, no result
        processing), outside any transaction of ours: for the reads a plan makes once per
        cluster, where building the statement, a transaction and SQLAlchemy's rows cost ten
        times what the database does (a steady plan of the bench fleet reads 600,000)."""
        try:
            raw = self.engine.raw_connection()
            try:
                return _fetch(raw, statement, self.engine.dialect, values)
            finally:
                raw.close()  # back to the pool, a transaction the driver began rolled back
        except (SQLAlchemyError, self.engine.dialect.loaded_dbapi.Error) as exc:
            raise LedgerError(f"ledger {self.place.shown}: {what}: {_why(exc)}") from None

    def reader(self) -> Reader:
        """A connection of its own for one read after another (``Reader``)."""
        return Reader(self)

    def close(self) -> None:
        """Release its connections."""
        self.engine.dispose()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Reader:
    """Ledger.fetch on one connection held from the first read to ``close``: a process
    that reads for every cluster of a plan (a decider) saves the pool's checkout and
    return, a third of a read of 300 rows. It reads in autocommit, so no transaction is
    held between reads (on PostgreSQL one would hold back vacuum and every schema change)
    and each read sees what was committed before it."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._raw: Any = None

    def fetch(self, what: str, statement: Select[Any], values: Mapping[str, Any]) -> list[Any]:
        """The rows of one read-only SELECT, as Ledger.fetch gives them; a connection that
        broke since the last read (a server restarted during a long walk) is replaced once,
        as the pool's pre-ping would have done."""
        engine = self.ledger.engine
        for attempt in (1, 2):
            try:
                if self._raw is None:
                    self._raw = self._connect()
                return _fetch(self._raw, statement, engine.dialect, values)
            except (SQLAlchemyError, engine.dialect.loaded_dbapi.Error) as exc:
                self.close()  # a broken connection is not read from again
                if attempt == 2:
                    shown = self.ledger.place.shown
                    raise LedgerError(f"ledger {shown}: {what}: {_why(exc)}") from None
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _connect(self) -> Any:
        """A connection in autocommit: a read is one statement, no BEGIN and ROLLBACK
        around it (on PostgreSQL each is a round trip, for every cluster of a plan).
        SQLite's connections are opened in autocommit already (_engine)."""
        raw: Any = self.ledger.engine.raw_connection()
        if not self.ledger.sqlite:
            raw.rollback()  # the pool's pre-ping may have begun one
            raw.driver_connection.autocommit = True
        return raw

    def close(self) -> None:
        """Let the connection go (a later read takes another). It is dropped, not pooled:
        in autocommit, a transaction of the engine's on it would not be one."""
        raw, self._raw = self._raw, None
        if raw is not None:
            with suppress(Exception):  # a connection already broken: nothing to give back
                raw.invalidate()


def _fetch(
    raw: Any, statement: Select[Any], dialect: Dialect, values: Mapping[str, Any]
) -> list[Any]:
    sql = driver_sql(f"select {id(statement)}", statement, dialect, tuple(values))
    cursor = raw.cursor()
    try:
        cursor.execute(sql.text, sql.params(values))
        return list(cursor.fetchall())
    finally:
        cursor.close()


def open_ledger(place: LedgerPlace) -> Ledger:
    """The ledger at ``place``, its schema this retention's (a SQLite file and its folder
    are made when missing). A ledger newer than this retention raises LedgerSchemaError
    before anything is written; one that cannot be reached, LedgerError."""
    ledger = _open(place)
    try:
        _migrate(ledger)
    except BaseException:
        ledger.close()
        raise
    return ledger


def open_reader(place: LedgerPlace) -> Ledger:
    """The ledger at ``place``, for a process that only reads it while another one has it
    open with ``open_ledger`` (a plan's deciders): its schema already checked there."""
    return _open(place)


def open_to_read(place: LedgerPlace) -> Ledger:
    """The ledger at ``place`` for a job that only reads it, perhaps as a database user
    that may only read (``retention evidence``): nothing made, migrated or written. A
    SQLite file is opened read-only (``mode=ro``, no pragma that would write: a copy of a
    backup stays byte for byte what it was). No ledger there, or one at another schema
    revision, raises ConfigError (exit 2); one that cannot be reached, LedgerError."""
    file = place.sqlite_file
    if file is not None and not file.exists():
        raise ConfigError(
            f"ledger {place.shown}: no ledger there (nothing was recorded at this path): "
            "check ledger.url, reports.dir or RETENTION_LEDGER_URL"
        )
    ledger = _open(place) if file is None else Ledger(place, _read_only_sqlite(file))
    try:
        _check_revision(ledger)
    except BaseException:
        ledger.close()
        raise
    return ledger


def _read_only_sqlite(file: Path) -> Engine:
    """An engine that reads a SQLite file and cannot write it."""
    uri = f"file:{quote(str(file.resolve()))}?mode=ro&uri=true"
    engine = create_engine(
        "sqlite+pysqlite:///" + uri, connect_args={"timeout": SQLITE_BUSY_MS / 1000}
    )

    @event.listens_for(engine, "connect")
    def _sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we begin the transaction: one snapshot
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA query_only=1")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _sqlite_begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN")

    return engine


def _check_revision(ledger: Ledger) -> None:
    shown = ledger.place.shown
    # A ledger that cannot be reached (a server down, a password refused, a file that
    # cannot be read) is a LedgerError from reading(), said as it is, not "not a ledger".
    with ledger.reading("reading its schema version") as conn:
        tables = set(inspect(conn).get_table_names())
        found = (
            conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()
            if "alembic_version" in tables
            else None
        )
    if found is None:
        raise ConfigError(f"ledger {shown}: not a ledger (no schema revision in it)")
    found = str(found)
    if found > HEAD_REVISION:
        raise LedgerSchemaError(
            f"ledger {shown} has schema revision {found}, newer than retention "
            f"{__version__} knows ({HEAD_REVISION}): run a retention at least as new as the "
            "one that wrote it"
        )
    if found != HEAD_REVISION:
        raise ConfigError(
            f"ledger {shown} has schema revision {found}, older than this retention's "
            f"{HEAD_REVISION}: a plan by this retention (as a user that may write) brings it "
            "up to date"
        )


def _open(place: LedgerPlace) -> Ledger:
    try:
        url = place.engine_url()
    except ArgumentError as exc:
        raise LedgerError(f"ledger.url: not a database URL ({exc})") from None
    if url.get_backend_name() not in ("sqlite", "postgresql"):
        raise LedgerError(
            f"ledger.url {place.shown}: only sqlite:/// and postgresql:// ledgers are supported"
        )
    file = place.sqlite_file
    if file is not None:
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LedgerError(f"ledger {place.shown}: cannot make its folder: {exc}") from None
    try:
        return Ledger(place, _engine(url))
    except (SQLAlchemyError, ImportError) as exc:
        raise LedgerError(f"ledger {place.shown}: {_why(exc)}") from None


def _engine(url: URL) -> Engine:
    if url.get_backend_name() != "sqlite":
        # pool_pre_ping: a CronJob's connection may meet a server restarted since the pool
        # opened it (a long plan between two batches).
        return create_engine(url, pool_pre_ping=True, connect_args={"connect_timeout": 15})
    engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_MS / 1000})

    @event.listens_for(engine, "connect")
    def _sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
        # Python's sqlite3 begins transactions itself, lazily and deferred; we begin them.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")  # an audit record survives a power cut
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_MS}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _sqlite_begin(conn: Connection) -> None:
        reading = conn.get_execution_options().get("ledger_reading", False)
        conn.exec_driver_sql("BEGIN" if reading else "BEGIN IMMEDIATE")

    return engine


def alembic_config(conn: Connection) -> Config:
    """Alembic's configuration for the ledger's migrations, on ``conn``."""
    from alembic.config import Config  # noqa: PLC0415 - Alembic only when migrating

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = conn
    return config


# The newest revision of migrations/versions: a ledger already there is opened without
# Alembic, whose import costs every command a fifth of a second (test_ledger holds this to
# Alembic's own head).
HEAD_REVISION = "0005"


def _revision(ledger: Ledger) -> str | None:
    """The ledger's schema revision, read without Alembic (None: none, or unreadable: the
    migration then says why)."""
    try:
        with ledger.reading("reading its schema version") as conn:
            found = conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()
    except LedgerError:
        return None
    return None if found is None else str(found)


def _migrate(ledger: Ledger) -> None:
    """Bring the schema up to this retention's head, or refuse a newer one."""
    if _revision(ledger) == HEAD_REVISION:
        return
    from alembic import command  # noqa: PLC0415 - Alembic only when migrating
    from alembic.runtime.migration import MigrationContext  # noqa: PLC0415 - Alembic only when migrating
    from alembic.script import ScriptDirectory  # noqa: PLC0415 - Alembic only when migrating

    with ledger.writing("reading its schema version") as conn:
        if conn.dialect.name == "postgresql":
            # Shards that start at once on a new (or older) ledger: one migrates, the others
            # wait here and then find it done (SQLite's write transaction already excludes).
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
        config = alembic_config(conn)
        script = ScriptDirectory.from_config(config)
        head = script.get_current_head()
        current = MigrationContext.configure(conn).get_current_revision()
        if current == head:
            return
        if current is not None and not _known(script, current):
            raise LedgerSchemaError(
                f"ledger {ledger.place.shown} has schema revision {current}, newer than "
                f"retention {__version__} knows (its newest is {head}): run a retention at "
                "least as new as the one that wrote it; nothing was read or written"
            )
        log.info(
            "ledger %s: schema %s -> %s",
            ledger.place.shown,
            current or "(new)",
            head,
            extra={"fields": {"event": "ledger-migrated", "from": current, "to": head}},
        )
        command.upgrade(config, "head")


def _known(script: ScriptDirectory, revision: str) -> bool:
    from alembic.util.exc import CommandError  # noqa: PLC0415 - Alembic only when migrating

    try:
        return script.get_revision(revision) is not None
    except CommandError:
        return False


def _why(exc: BaseException) -> str:
    """A database error in one line, without the SQL or its parameters (they may hold a
    snapshot's data, never a password, but a line is what a log wants)."""
    orig = getattr(exc, "orig", None)
    text = str(orig if orig is not None else exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
