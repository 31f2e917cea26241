"""The PostgreSQL the ledger's tests run against (tests/support/postgres.py): it answers
through SQLAlchemy and psycopg, each test gets an empty database of its own that is gone
after, it logs in by password only, it never outlives the process that started it, and where
there is none the tests skip, or fail under CI=true. And .ci/run installs it when missing."""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import OperationalError

from tests.support.postgres import (
    ENV_URL,
    INSTALL,
    PostgresDatabase,
    PostgresServer,
    PostgresUnavailableError,
    find_binaries,
    fresh_database,
    named_server,
    server_or_skip,
    unavailable,
)

ROOT = Path(__file__).resolve().parent.parent
USER_TABLES = (
    "SELECT count(*) FROM information_schema.tables "
    "WHERE table_schema NOT IN ('pg_catalog', 'information_schema')"
)


def test_the_server_answers_through_sqlalchemy_and_psycopg(
    postgres_database: PostgresDatabase,
) -> None:
    """A test's database answers select version() through SQLAlchemy and psycopg, logged in
    as the ordinary test role with the password given apart from a URL (and a repr) that has
    none."""
    url = make_url(postgres_database.url)
    assert url.drivername == "postgresql+psycopg"
    assert url.password is None
    assert postgres_database.password not in postgres_database.url
    assert postgres_database.password not in repr(postgres_database)  # a failure's report
    engine = create_engine(postgres_database.engine_url())
    try:
        with engine.connect() as connection:
            version = connection.execute(text("SELECT version()")).scalar_one()
            who, where, superuser = connection.execute(
                text("SELECT current_user, current_database(), current_setting('is_superuser')")
            ).one()
    finally:
        engine.dispose()
    assert str(version).startswith("PostgreSQL ")
    assert (who, where) == (url.username, postgres_database.name)
    if os.environ.get(ENV_URL) is None:  # the throw-away cluster's role; a named one is theirs
        assert superuser == "off"


def test_a_database_made_for_one_test_is_empty_and_gone_after(
    postgres_server: PostgresServer,
) -> None:
    """A fresh database has no table, its user may create one, and it is dropped after the
    test even with a connection the test left open."""
    with fresh_database(postgres_server) as database:
        engine = create_engine(database.engine_url())
        with engine.begin() as connection:
            before = connection.execute(text(USER_TABLES)).scalar_one()
            connection.execute(text("CREATE TABLE runs (id integer PRIMARY KEY)"))
            after = connection.execute(text(USER_TABLES)).scalar_one()
        left_open = psycopg.connect(
            host=postgres_server.host,
            port=postgres_server.port,
            user=postgres_server.user,
            password=postgres_server.password,
            dbname=database.name,
        )
        engine.dispose()
    with postgres_server.admin_connection() as admin:
        found = admin.execute(
            "SELECT count(*) FROM pg_database WHERE datname = %s", (database.name,)
        ).fetchone()
    left_open.close()
    assert (before, after) == (0, 1)
    assert found == (0,)
    with fresh_database(postgres_server) as other:
        engine = create_engine(other.engine_url())
        with engine.connect() as connection:
            assert connection.execute(text(USER_TABLES)).scalar_one() == 0
        engine.dispose()
    assert other.name != database.name


def test_a_wrong_or_missing_password_is_refused(
    postgres_database: PostgresDatabase, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The server asks for the password: a wrong one is refused, and so is none at all
    (with no PGPASSWORD or password file for libpq to fall back on)."""
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "no-pgpass"))
    user = make_url(postgres_database.url).username
    refusals = {}
    for case, url in (
        ("wrong", make_url(postgres_database.url).set(password="not-the-password")),
        ("none", make_url(postgres_database.url)),
    ):
        engine = create_engine(url)
        with pytest.raises(OperationalError) as refused:
            engine.connect().close()
        engine.dispose()
        refusals[case] = str(refused.value.orig)
    assert f'password authentication failed for user "{user}"' in refusals["wrong"]
    assert "no password supplied" in refusals["none"]


def test_no_postgresql_skips_saying_how_to_get_one(tmp_path: Path) -> None:
    """With no initdb on PATH and no version under the library folder, the PostgreSQL tests
    skip, naming the package and RETENTION_TEST_POSTGRES_URL, and start nothing."""
    path, lib = str(tmp_path / "bin"), tmp_path / "lib"
    assert find_binaries(path, lib) is None
    with pytest.raises(pytest.skip.Exception) as skipped, server_or_skip({}, path, lib):
        pytest.fail("a server was started")
    assert "PostgreSQL unavailable: no initdb and postgres" in str(skipped.value)
    assert INSTALL in str(skipped.value)
    assert ENV_URL in str(skipped.value)


def test_no_postgresql_under_ci_fails_the_test(tmp_path: Path) -> None:
    """Under CI=true, where .ci/run installs PostgreSQL, the same missing server fails the
    test instead of skipping it."""
    path, lib = str(tmp_path / "bin"), tmp_path / "lib"
    with pytest.raises(pytest.fail.Exception) as failed, server_or_skip({"CI": "true"}, path, lib):
        pytest.fail("a server was started")
    assert "PostgreSQL unavailable: no initdb and postgres" in str(failed.value)
    with pytest.raises(pytest.skip.Exception):
        unavailable("a reason", {"CI": "1"})  # CI=true only, as for Chromium


def test_a_named_server_that_fails_is_named_as_the_cause() -> None:
    """With RETENTION_TEST_POSTGRES_URL set, the skip says, on one line, to correct or unset
    it rather than to install PostgreSQL."""
    with pytest.raises(pytest.skip.Exception) as named:
        unavailable("the server\n\tdoes not answer.", {ENV_URL: "postgresql://u:p@h/d"})
    assert str(named.value) == (
        f"PostgreSQL unavailable: the server does not answer; correct {ENV_URL}, or unset it "
        "to use an installed PostgreSQL to run the PostgreSQL tests"
    )


def _tool(path: Path) -> Path:
    """An executable file at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_the_binaries_are_found_on_path_first_then_the_newest_version(tmp_path: Path) -> None:
    """initdb on PATH wins (through its link, with the postgres beside it); else the newest
    version under the library folder that has both initdb and postgres."""
    lib = tmp_path / "lib"
    for version in ("9.6", "15", "16"):
        _tool(lib / version / "bin" / "initdb")
    for version in ("9.6", "15"):
        _tool(lib / version / "bin" / "postgres")
    _tool(lib / "main" / "bin" / "initdb")  # not a version
    (tmp_path / "empty").mkdir()
    on_path = tmp_path / "path"
    on_path.mkdir()
    (on_path / "initdb").symlink_to(lib / "9.6" / "bin" / "initdb")

    newest = find_binaries(str(tmp_path / "empty"), lib)
    linked = find_binaries(str(on_path), lib)

    assert newest is not None
    assert newest.initdb == lib / "15" / "bin" / "initdb"
    assert linked is not None
    assert linked.postgres == lib / "9.6" / "bin" / "postgres"


def test_a_named_server_is_used_as_given(postgres_server: PostgresServer) -> None:
    """RETENTION_TEST_POSTGRES_URL's server and role make and own the test databases; a URL
    without a password, or a server that does not answer, is a reason to skip."""
    server = postgres_server

    def url(password: str | None, port: int = server.port) -> str:
        """The administrator's URL, as a developer sets it."""
        return URL.create(
            "postgresql", server.admin_user, password, server.host, port, server.admin_database
        ).render_as_string(hide_password=False)

    named = named_server(url(server.admin_password))

    with fresh_database(named) as database:
        engine = create_engine(database.engine_url())
        with engine.connect() as connection:
            who = connection.execute(text("SELECT current_user")).scalar_one()
        engine.dispose()
    assert who == server.admin_user
    assert (named.user, named.password) == (server.admin_user, server.admin_password)
    with pytest.raises(PostgresUnavailableError, match="must be postgresql://USER:PASSWORD@"):
        named_server(url(None))
    with pytest.raises(PostgresUnavailableError, match="does not answer"):
        named_server(url(server.admin_password, port=1))


# The child owns a throw-away cluster and prints where it is; then it waits to be killed.
OWNER = """
import json, sys, time
from pathlib import Path
from tests.support.postgres import serving
with serving({}) as server, server.admin_connection() as admin:
    data = admin.execute("SHOW data_directory").fetchone()[0]
    print(json.dumps({"port": server.port, "folder": str(Path(data).parent)}), flush=True)
    time.sleep(300)
"""


def test_the_server_ends_with_the_process_that_started_it_even_killed(tmp_path: Path) -> None:
    """A process holding a throw-away cluster is killed with SIGKILL (no teardown runs): its
    server stops and its folder is removed all the same."""
    if find_binaries() is None:
        unavailable("no initdb and postgres to start a cluster with", os.environ)
    env = {name: value for name, value in os.environ.items() if name != ENV_URL}
    with subprocess.Popen(
        [sys.executable, "-c", OWNER], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
    ) as owner:
        try:
            assert owner.stdout is not None
            with selectors.DefaultSelector() as waiting:
                waiting.register(owner.stdout, selectors.EVENT_READ)
                assert waiting.select(timeout=120), "the cluster did not start in 120 s"
            where = json.loads(owner.stdout.readline())
            folder = Path(where["folder"])
            assert (folder / "data" / "PG_VERSION").is_file()
        finally:
            owner.send_signal(signal.SIGKILL)
            owner.wait()
    deadline = time.monotonic() + 30
    while folder.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not folder.exists(), f"{folder} left behind"
    with pytest.raises(psycopg.OperationalError, match="refused"):
        psycopg.connect(host="127.0.0.1", port=where["port"], connect_timeout=5).close()


class CiMachine:
    """.ci/run copied into ``folder`` and run on a PATH of stand-ins only: root's id, a
    python3 that finds the Python headers, chromium, gcc, and an apt-get and a make that
    write what they are asked to a log; Debian's PostgreSQL library folder is
    ``folder``/lib, empty."""

    def __init__(self, folder: Path) -> None:
        self.lib = folder / "lib"
        self.bin = folder / "bin"
        self._log = folder / "log"
        self._script = folder / "repo" / ".ci" / "run"
        script = (ROOT / ".ci" / "run").read_text()
        assert "/usr/lib/postgresql" in script
        _tool(self._script).write_text(script.replace("/usr/lib/postgresql", str(self.lib)))
        stand_ins = {
            "id": "echo 0",
            "apt-get": f'echo "apt-get $*" >> {self._log}',
            "make": f'echo "make $*" >> {self._log}',
            "python3": "echo True",
            "gcc": "true",
            "chromium": "true",
        }
        for name, body in stand_ins.items():
            _tool(self.bin / name).write_text(f"#!/bin/sh\n{body}\n")
        dirname = shutil.which("dirname")
        assert dirname is not None
        (self.bin / "dirname").symlink_to(dirname)

    def run(self) -> list[str]:
        """Run .ci/run; the apt-get and make commands it ran, in order."""
        self._log.unlink(missing_ok=True)
        subprocess.run(
            ["/bin/bash", str(self._script)],
            env={"PATH": str(self.bin)},
            check=True,
            capture_output=True,
        )
        return self._log.read_text().splitlines()


def test_ci_run_installs_postgresql_only_where_initdb_is_missing(tmp_path: Path) -> None:
    """.ci/run installs Debian's postgresql when no initdb is on PATH or under the library
    folder, and not otherwise."""
    machine = CiMachine(tmp_path)

    nowhere = machine.run()
    _tool(machine.lib / "15" / "bin" / "initdb")
    under_lib = machine.run()
    shutil.rmtree(machine.lib)
    _tool(machine.bin / "initdb")
    on_path = machine.run()

    assert nowhere == ["apt-get update -qq", "apt-get install -y -qq postgresql", "make test"]
    assert under_lib == on_path == ["make test"]


def test_ci_run_updates_the_package_lists_once_for_every_install(tmp_path: Path) -> None:
    """On a machine without Chromium, PostgreSQL and gcc, .ci/run updates the package lists
    once, installs all three, then runs make test."""
    machine = CiMachine(tmp_path)
    (machine.bin / "chromium").unlink()
    (machine.bin / "gcc").unlink()

    assert machine.run() == [
        "apt-get update -qq",
        "apt-get install -y -qq chromium",
        "apt-get install -y -qq postgresql",
        "apt-get install -y -qq gcc libc6-dev python3-dev",
        "make test",
    ]
