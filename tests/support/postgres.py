"""A real PostgreSQL for the tests of the ledger: the server a developer names in
RETENTION_TEST_POSTGRES_URL, or else a throw-away cluster of the installed PostgreSQL, made
with initdb in a temporary folder and started on 127.0.0.1, and a fresh database per test.

The throw-away cluster logs in by password (scram-sha-256) only, as a team's server does, so
the ledger's password from the environment or a file is tested for real: the superuser
``postgres`` (ADMIN_PASSWORD) makes and drops the databases, and each one is owned by the
ordinary role ``retention`` (PASSWORD), what the ledger logs in as. initdb and postgres refuse
to run as root; as root (CI runs as root) they run as ``nobody``, through setpriv.

The server runs under tests/support/pgguard.py, which stops it and removes its folder when
the tests close a pipe to it or their process dies, so no postmaster outlives a session, even
one killed by SIGKILL or a pytest-timeout.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import psycopg
import pytest
from psycopg import sql
from psycopg.rows import TupleRow
from sqlalchemy.engine import URL, make_url

ENV_URL = "RETENTION_TEST_POSTGRES_URL"
LIB = Path("/usr/lib/postgresql")  # Debian's and Ubuntu's versions, one folder each
INSTALL = "apt-get install postgresql"
DRIVER = "postgresql+psycopg"
GUARD = Path(__file__).with_name("pgguard.py")
HOST = "127.0.0.1"
# The user initdb and postgres run as when the tests run as root: every Unix has it.
RUN_AS = "nobody"

ADMIN = "postgres"
ADMIN_PASSWORD = "retention-test-admin"
USER = "retention"
# What the ledger's tests log in with. It holds the characters that break a URL built by
# pasting (@ : / and a %-escape): a password that reaches the server only when passed apart
# from the URL, or quoted, as RETENTION_LEDGER_PASSWORD's must be.
PASSWORD = "ledger p@ss:w/rd%2F"

# Under load (two cores shared by the suite's workers) initdb has taken 4 s; a start that
# takes longer than this is stuck.
START_WITHIN = 60.0
PORT_TRIES = 3


class PostgresUnavailableError(Exception):
    """No PostgreSQL could be found or started; the message says why."""


@dataclass(frozen=True)
class PostgresServer:
    """A running server: who makes the test databases, and who owns them."""

    host: str
    port: int
    admin_user: str
    admin_password: str = field(repr=False)  # a failing test's report shows the rest
    admin_database: str
    user: str
    password: str = field(repr=False)

    def admin_connection(self) -> psycopg.Connection[TupleRow]:
        """A connection of the administrator, each statement its own transaction (CREATE
        DATABASE and DROP DATABASE run in none)."""
        return psycopg.connect(
            host=self.host,
            port=self.port,
            user=self.admin_user,
            password=self.admin_password,
            dbname=self.admin_database,
            autocommit=True,
            connect_timeout=10,
        )


@dataclass(frozen=True)
class PostgresDatabase:
    """A database made for one test. ``url`` is what a user writes in ``ledger.url``, without
    the password; ``password`` is what they put in the environment or a file."""

    url: str
    password: str = field(repr=False)
    name: str
    server: PostgresServer

    def engine_url(self) -> URL:
        """The URL with the password, for a test that reads the database itself
        (SQLAlchemy's URL: its str() hides the password)."""
        return make_url(self.url).set(password=self.password)


@dataclass(frozen=True)
class Binaries:
    """The folder of one PostgreSQL version's initdb and postgres."""

    folder: Path

    @property
    def initdb(self) -> Path:
        return self.folder / "initdb"

    @property
    def postgres(self) -> Path:
        return self.folder / "postgres"


def find_binaries(path: str | None = None, lib: Path = LIB) -> Binaries | None:
    """initdb and postgres from one folder: the folder of the initdb on ``path`` (PATH when
    None), else the newest version under ``lib``; None when neither has both."""
    folders: list[Path] = []
    on_path = shutil.which("initdb", path=path)
    if on_path:
        folders.append(Path(on_path).resolve().parent)  # Homebrew's and /usr/local's links
    versions = [
        (tuple(int(part) for part in folder.parent.name.split(".")), folder)
        for folder in lib.glob("*/bin")
        if re.fullmatch(r"\d+(\.\d+)*", folder.parent.name)
    ]
    folders += [folder for _, folder in sorted(versions, reverse=True)]
    for folder in folders:
        found = Binaries(folder)
        if all(os.access(tool, os.X_OK) for tool in (found.initdb, found.postgres)):
            return found
    return None


def unavailable(reason: str, environ: Mapping[str, str]) -> NoReturn:
    """Skip the test, saying why and how to get PostgreSQL; fail it under CI=true, where
    .ci/run installs PostgreSQL and a check that skips checks nothing."""
    if environ.get(ENV_URL):
        remedy = f"correct {ENV_URL}, or unset it to use an installed PostgreSQL"
    else:
        remedy = f"install PostgreSQL ({INSTALL}) or set {ENV_URL} to a server's URL"
    said = " ".join(reason.split()).rstrip(".")  # a log's lines, one line of the message
    message = f"PostgreSQL unavailable: {said}; {remedy} to run the PostgreSQL tests"
    if environ.get("CI") == "true":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


@contextlib.contextmanager
def server_or_skip(
    environ: Mapping[str, str], path: str | None = None, lib: Path = LIB
) -> Iterator[PostgresServer]:
    """The server the tests use (``serving``), or ``unavailable``'s skip (a failure under
    CI=true) when there is none."""
    with contextlib.ExitStack() as stack:
        try:
            server = stack.enter_context(serving(environ, path, lib))
        except PostgresUnavailableError as error:
            unavailable(str(error), environ)
        yield server


@contextlib.contextmanager
def serving(
    environ: Mapping[str, str], path: str | None = None, lib: Path = LIB
) -> Iterator[PostgresServer]:
    """The server ENV_URL names when it is set, else a throw-away cluster of the PostgreSQL
    ``find_binaries`` finds; PostgresUnavailableError when neither answers."""
    named = environ.get(ENV_URL)
    if named:
        yield named_server(named)
        return
    binaries = find_binaries(path, lib)
    if binaries is None:
        searched = "PATH" if path is None else path
        raise PostgresUnavailableError(f"no initdb and postgres on {searched} or under {lib}/*/bin")
    with throwaway_cluster(binaries) as server:
        yield server


def named_server(url: str) -> PostgresServer:
    """A developer's server from its URL (``postgresql://user:password@host:port/db``): that
    role makes the test databases (it needs CREATEDB) and owns them."""
    try:
        parsed = make_url(url)
    except Exception as error:  # noqa: BLE001 - SQLAlchemy's ArgumentError and ValueError
        raise PostgresUnavailableError(f"{ENV_URL} is not a database URL: {error}") from None
    if parsed.get_backend_name() != "postgresql" or not parsed.username or not parsed.password:
        raise PostgresUnavailableError(
            f"{ENV_URL} must be postgresql://USER:PASSWORD@HOST:PORT/DATABASE "
            "(a password: the tests log in by password, as the ledger does)"
        )
    server = PostgresServer(
        host=parsed.host or HOST,
        port=parsed.port or 5432,
        admin_user=parsed.username,
        admin_password=parsed.password,
        admin_database=parsed.database or "postgres",
        user=parsed.username,
        password=parsed.password,
    )
    try:
        server.admin_connection().close()
    except psycopg.Error as error:
        said = str(error).strip().splitlines()[0]  # the rest is libpq's hint on servers
        raise PostgresUnavailableError(f"{ENV_URL} does not answer: {said}") from None
    return server


@contextlib.contextmanager
def throwaway_cluster(binaries: Binaries) -> Iterator[PostgresServer]:
    """A new cluster of ``binaries`` in a temporary folder, running on 127.0.0.1 and a free
    port until the block ends; then stopped and its folder removed."""
    runner = _unprivileged_prefix()
    folder = Path(tempfile.mkdtemp(prefix="retention-postgres-"))
    try:
        if runner:
            owner = pwd.getpwnam(RUN_AS)
            os.chown(folder, owner.pw_uid, owner.pw_gid)
        _initdb(binaries, folder, runner)
        with _running(binaries, folder, runner) as server:
            yield server
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _unprivileged_prefix() -> list[str]:
    """What runs a command as RUN_AS when the tests run as root (setpriv execs it, so the
    process started is the server itself), else nothing."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    try:
        owner = pwd.getpwnam(RUN_AS)
    except KeyError:
        raise PostgresUnavailableError(
            f"running as root, and there is no user {RUN_AS} to run PostgreSQL as"
        ) from None
    if setpriv is None:
        raise PostgresUnavailableError(
            "running as root, and no setpriv (util-linux) to run PostgreSQL as another user"
        )
    return [
        setpriv,
        f"--reuid={owner.pw_uid}",
        f"--regid={owner.pw_gid}",
        "--clear-groups",
        "--",
    ]


def _environment() -> dict[str, str]:
    """The tests' environment without the PG* variables a developer's shell may hold
    (PGDATA, PGPORT, PGPASSWORD...), which would point initdb and the server elsewhere."""
    return {name: value for name, value in os.environ.items() if not name.startswith("PG")}


def _initdb(binaries: Binaries, folder: Path, runner: list[str]) -> None:
    """Make the cluster in ``folder``/data: password logins only, the superuser's password
    ADMIN_PASSWORD, no fsync (a cluster that lives for one session)."""
    password_file = folder / "admin-password"
    password_file.write_text(ADMIN_PASSWORD)
    if runner:
        owner = pwd.getpwnam(RUN_AS)
        os.chown(password_file, owner.pw_uid, owner.pw_gid)
    command = [
        *runner,
        str(binaries.initdb),
        f"--pgdata={folder / 'data'}",
        f"--username={ADMIN}",
        f"--pwfile={password_file}",
        "--auth=scram-sha-256",
        "--encoding=UTF8",
        "--locale=C",
        "--no-sync",
    ]
    try:
        done = subprocess.run(
            command,
            cwd=folder,
            env=_environment(),
            capture_output=True,
            text=True,
            timeout=START_WITHIN,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise PostgresUnavailableError(f"{binaries.initdb} did not run: {error}") from None
    finally:
        password_file.unlink()
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise PostgresUnavailableError(f"{binaries.initdb} failed: {' '.join(said)}")


@contextlib.contextmanager
def _running(binaries: Binaries, folder: Path, runner: list[str]) -> Iterator[PostgresServer]:
    """The cluster in ``folder`` running under the guard until the block ends. A port taken
    between choosing it and the server's bind is tried again with another."""
    for _ in range(PORT_TRIES):
        port = _free_port()
        (folder / "postgres.log").unlink(missing_ok=True)  # a try's own log says why it ended
        command = [
            *runner,
            str(binaries.postgres),
            "-D",
            str(folder / "data"),
            "-p",
            str(port),
            "-k",
            str(folder),  # the socket in the folder: /var/run/postgresql is not ours
            "-c",
            f"listen_addresses={HOST}",
            # Speed over durability: the cluster ends with the session.
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
            "-c",
            "shared_buffers=32MB",
        ]
        guard = subprocess.Popen(
            [sys.executable, str(GUARD), str(folder), "--", *command],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=folder,
            env=_environment(),
            start_new_session=True,  # a Ctrl-C at the terminal is the tests' to handle
        )
        try:
            ready = _wait_ready(guard, folder, port)
            if ready:
                _create_user(ready)
                yield ready
                return
        finally:
            assert guard.stdin is not None
            guard.stdin.close()
            guard.wait(60)
    raise PostgresUnavailableError(f"no free port for postgres after {PORT_TRIES} tries")


def _free_port() -> int:
    """A TCP port on HOST nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


def _wait_ready(guard: subprocess.Popen[bytes], folder: Path, port: int) -> PostgresServer | None:
    """The server once it takes logins, None when another process took its port first;
    PostgresUnavailableError when it ended for another reason or did not start in time."""
    server = PostgresServer(HOST, port, ADMIN, ADMIN_PASSWORD, "postgres", USER, PASSWORD)
    deadline = time.monotonic() + START_WITHIN
    while True:
        if guard.poll() is not None:
            log = (folder / "postgres.log").read_text(errors="replace")
            if "could not bind" in log or "could not create any TCP/IP sockets" in log:
                return None
            said = " ".join(log.strip().splitlines()[-3:])
            raise PostgresUnavailableError(f"postgres ended at start: {said}")
        # Through the socket in our own folder: a server answering on the port could be
        # another cluster (the suite's other worker), and ours has it only once it answers.
        try:
            psycopg.connect(
                host=str(folder),
                port=port,
                user=ADMIN,
                password=ADMIN_PASSWORD,
                dbname="postgres",
                connect_timeout=5,
            ).close()
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise PostgresUnavailableError(
                    f"postgres did not take logins within {START_WITHIN:.0f} s"
                ) from None
            time.sleep(0.05)
        else:
            return server


def _create_user(server: PostgresServer) -> None:
    """The ordinary role the test databases belong to: it logs in and owns its database,
    and is no superuser, so the ledger is tested with no more rights than a team gives it."""
    with server.admin_connection() as admin:
        admin.execute(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(server.user), sql.Literal(server.password)
            )
        )


@contextlib.contextmanager
def fresh_database(server: PostgresServer) -> Iterator[PostgresDatabase]:
    """A new, empty database owned by the server's user for the block, then dropped (with
    any connection the block left open)."""
    name = f"retention_test_{uuid.uuid4().hex[:16]}"
    # One administrator's connection for both ends of the test. FILE_COPY copies template1's
    # files, sooner here than 15's default, which writes them through the WAL (0.08 against
    # 0.15 s on a quiet machine, 0.26 against 0.32 s on a busy one); its checkpoints cost
    # little with fsync off.
    with server.admin_connection() as admin:
        copy = sql.SQL(" STRATEGY FILE_COPY" if admin.info.server_version >= 150000 else "")
        admin.execute(
            sql.SQL("CREATE DATABASE {} OWNER {}{}").format(
                sql.Identifier(name), sql.Identifier(server.user), copy
            )
        )
        url = URL.create(DRIVER, server.user, None, server.host, server.port, name)
        try:
            yield PostgresDatabase(
                url.render_as_string(hide_password=False), server.password, name, server
            )
        finally:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
