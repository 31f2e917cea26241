"""Where the ledger is (``ledger:`` in retention.yaml, and the environment): its URL, never
with a password, and the password apart, from the environment or a file.

    RETENTION_LEDGER_URL            overrides ledger.url (a Kubernetes Secret may carry it;
                                    a password in it is taken out and used, never shown)
    RETENTION_LEDGER_PASSWORD       the password of a PostgreSQL ledger
    RETENTION_LEDGER_PASSWORD_FILE  a file holding it (or ledger.password_file)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from retention.errors import ConfigError

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

# SQLAlchemy is imported where a URL is read, not here: every command reads the
# configuration, and most never open the ledger (its import is a third of loading it).

ENV_LEDGER_URL = "RETENTION_LEDGER_URL"
ENV_LEDGER_PASSWORD = "RETENTION_LEDGER_PASSWORD"  # noqa: S105 - a variable's name
ENV_LEDGER_PASSWORD_FILE = "RETENTION_LEDGER_PASSWORD_FILE"  # noqa: S105 - a variable's name
LEDGER_FILE = "ledger.db"
BACKENDS = ("sqlite", "postgresql")
# Query parameters of a database URL that carry a secret.
_SECRET_PARAMETERS = frozenset({"password", "sslpassword"})


@dataclass(frozen=True)
class LedgerPlace:
    """Where the ledger is: its URL (no password in it) and the password apart."""

    url: str
    password: str | None = field(default=None, repr=False)

    @property
    def shown(self) -> str:
        """The URL as every output may show it."""
        from sqlalchemy.engine import make_url  # noqa: PLC0415 - see the imports
        from sqlalchemy.exc import ArgumentError  # noqa: PLC0415 - see the imports

        try:
            url = make_url(self.url)
        except ArgumentError:
            return "(an invalid URL)"
        # libpq also takes the password as a query parameter (?password=...): never shown.
        secret = [k for k in url.query if k.lower() in _SECRET_PARAMETERS]
        return url.difference_update_query(secret).render_as_string(hide_password=True)

    @property
    def sqlite_file(self) -> Path | None:
        """The file of a SQLite ledger (None: a server, or SQLite in memory)."""
        from sqlalchemy.engine import make_url  # noqa: PLC0415 - see the imports

        url = make_url(self.url)
        if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
            return None
        return Path(url.database)

    def engine_url(self) -> URL:
        """The URL the engine connects with: psycopg 3 for PostgreSQL, the password set."""
        from sqlalchemy.engine import make_url  # noqa: PLC0415 - see the imports

        url = make_url(self.url)
        if url.get_backend_name() == "postgresql" and url.get_driver_name() != "psycopg":
            url = url.set(drivername="postgresql+psycopg")
        if self.password is not None:
            url = url.set(password=self.password)
        return url


def _parsed(value: str, where: str) -> URL:
    from sqlalchemy.engine import make_url  # noqa: PLC0415 - see the imports
    from sqlalchemy.exc import ArgumentError  # noqa: PLC0415 - see the imports

    try:
        url = make_url(value)
    except ArgumentError:
        raise ValueError(
            f"{where}: not a database URL (e.g. sqlite:///reports/ledger.db or "
            "postgresql://retention@db.example.com:5432/retention)"
        ) from None
    if url.get_backend_name() not in BACKENDS:
        raise ValueError(
            f"{where}: a {url.get_backend_name()} URL; use sqlite:/// or postgresql://"
        )
    if url.get_backend_name() == "sqlite" and (not url.database or url.database == ":memory:"):
        # It would also be a different, empty database on each of a plan's worker processes.
        raise ValueError(
            f"{where}: a SQLite ledger in memory remembers nothing past the run; give it a "
            "file (e.g. sqlite:///reports/ledger.db)"
        )
    return url


def _no_password(url: URL) -> URL:
    from sqlalchemy.engine import URL  # noqa: PLC0415 - see the imports

    # URL.set(password=None) leaves the password as it was: None there means "unchanged".
    return URL.create(
        url.drivername, url.username, None, url.host, url.port, url.database, url.query
    )


def url_without_password(value: str) -> str | None:
    """A ledger URL with any password taken out (None: not a database URL)."""
    from sqlalchemy.engine import make_url  # noqa: PLC0415 - see the imports
    from sqlalchemy.exc import ArgumentError  # noqa: PLC0415 - see the imports

    try:
        return _no_password(make_url(value)).render_as_string(hide_password=False)
    except ArgumentError:
        return None


def checked_ledger_url(value: str, base_dir: Path) -> str:
    """ledger.url as retention.yaml gives it: no password in it (secrets are not read from
    the configuration file), a relative SQLite path made absolute against the file's
    folder."""
    url = _parsed(value, "ledger.url")
    if url.password is not None:
        raise ValueError(
            f"holds a password: take it out and give it in {ENV_LEDGER_PASSWORD} or a file "
            f"({ENV_LEDGER_PASSWORD_FILE}, ledger.password_file): secrets are not read from "
            "the config file"
        )
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        path = Path(url.database).expanduser()
        if not path.is_absolute():
            url = url.set(database=str(base_dir / path))
    return url.render_as_string(hide_password=False)


def ledger_place(
    url: str | None, password_file: Path | None, reports: Path, env: Mapping[str, str]
) -> LedgerPlace:
    """Where the ledger is (ledger.url, else a file in ``reports``, the reports folder;
    RETENTION_LEDGER_URL over both), with its password; ConfigError naming the variable or
    file when one cannot be used."""
    from_env = env.get(ENV_LEDGER_URL, "").strip()
    password: str | None = None
    if from_env:
        try:
            given = _parsed(from_env, ENV_LEDGER_URL)
        except ValueError as exc:
            raise ConfigError(f"environment: {exc}") from None
        if given.password is not None:
            password = str(given.password)
            given = _no_password(given)
        text = given.render_as_string(hide_password=False)
    elif url is not None:
        text = url
    else:
        text = f"sqlite:///{reports / LEDGER_FILE}"
    password = _password(password_file, env) or password
    return LedgerPlace(text, password)


def _password(password_file: Path | None, env: Mapping[str, str]) -> str | None:
    direct = env.get(ENV_LEDGER_PASSWORD, "")
    file = env.get(ENV_LEDGER_PASSWORD_FILE, "").strip() or password_file
    if direct and file:
        raise ConfigError(
            f"environment: both {ENV_LEDGER_PASSWORD} and a password file are set "
            f"({ENV_LEDGER_PASSWORD_FILE} or ledger.password_file): keep one"
        )
    if direct:
        return direct
    if not file:
        return None
    try:
        text = Path(file).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"ledger password file {file}: cannot be read ({exc.strerror or exc})"
        ) from None
    return text.rstrip("\r\n")
