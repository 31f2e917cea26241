"""What apprise makes of a notification URL: whether it can use it (checked as the
configuration loads), and the quiet, file-less setting it works in (for sending too).

apprise takes a fifth of a second to import, so only a configuration with ``notify:``
imports this module, and the run when it sends.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

# apprise logs as it loads and as it works (hosts, paths, at debug level whole URLs): none
# of its records reach retention's logs, which say what became of each notice, redacted.
logging.getLogger("apprise").propagate = False

# After its logger is cut off (it logs as it loads); re-exported (the alias) for notices.send,
# which would otherwise import it before this module.
import apprise as apprise  # noqa: E402, PLC0414
from apprise.manager_plugins import NotificationManager  # noqa: E402

# Loggers that would write a notification URL, or a part of it, while apprise works.
_QUIET = ("apprise", "urllib3.connectionpool")


@contextmanager
def silenced() -> Iterator[None]:
    """apprise's and urllib3's logging off while apprise works (they would log the host,
    the path or the whole URL of a notice); as it was afterwards. Nothing else speaks HTTP
    then: the API client is closed before a notice is sent."""
    loggers = [logging.getLogger(name) for name in _QUIET]
    before = [each.disabled for each in loggers]
    for each in loggers:
        each.disabled = True
    try:
        with warnings.catch_warnings():
            # apprise loads its services on first use; its e-mail one imports imghdr,
            # deprecated since Python 3.11: not the operator's concern.
            warnings.filterwarnings("ignore", "'imghdr' is deprecated", DeprecationWarning)
            yield
    finally:
        for each, was in zip(loggers, before, strict=True):
            each.disabled = was


def asset() -> apprise.AppriseAsset:
    """retention's name on the notices, and apprise's persistent store in memory only: a
    pod's root file system is read-only, and a run must not leave files of apprise's."""
    return apprise.AppriseAsset(
        app_id="retention",
        app_desc="retention: snapshot retention policies",
        storage_mode="memory",
    )


def apprise_problem(url: str, scheme: str) -> str | None:
    """Why apprise cannot use ``url``, whose scheme is ``scheme``, in words that never quote
    it (only its scheme), or None when it can."""
    with silenced():
        # apprise's registry of services by scheme (a singleton); its constructor is untyped.
        plugins = NotificationManager()  # type: ignore[no-untyped-call]
        if scheme not in plugins:
            return (
                f"{scheme}:// is not a service apprise knows (slack://, workflows:// for Teams, "
                "mailto://, json:// and about 180 more)"
            )
        if not plugins[scheme].enabled:
            return f"{scheme}:// cannot be used on this system (apprise disabled it)"
        if apprise.Apprise.instantiate(url.strip(), asset=asset()) is None:
            return (
                f"not a valid {scheme}:// URL: apprise cannot use it; check its parts against "
                f"apprise's page for {scheme}://"
            )
    return None
