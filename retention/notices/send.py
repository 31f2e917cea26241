"""Notices: a short message at the end of `run` and `apply`, to the Apprise URLs of ``notify:``.

The library apprise does the sending (Slack, Teams, e-mail, PagerDuty, a JSON webhook ...).
A notice goes out when the run's ending is one of the kinds ``notify.on`` names:

- ``changes``: the run applied at least one change (a dry run: its plan has at least one
  change a real run would send);
- ``holds``: a safety gate held destructive changes that no ``--approve`` let through;
- ``failure``: the run finished with failures (exit 1) or stopped on an error with exit 1
  or 5 (the API unreachable or the keys refused) once the configuration was loaded.
- ``stale-backups``: the run's plan found clusters whose backups stopped (their newest
  restorable snapshot is older than expected: retention.core.freshness).

Its title is the run's exit code and what it means, its body the run's summary in Markdown
(the very text report.md begins with: ``report.render.summary_markdown``), which names the
clusters held and why, those approved, those with the most changes and those with errors,
and the run folder. Each URL gets its own Apprise object, so
each URL's outcome is known; a notice that fails is logged once, redacted, and counted, and
never changes the run's exit code.

A notification URL carries its credentials (a webhook token, a password), so it is shown
only as ``SCHEME://**********`` (``retention.config.notify.redacted_url``). apprise logs hosts,
paths and, at debug level, whole URLs, and urllib3 logs each request's path: both are
silenced while apprise works, and retention logs its own redacted line instead.

apprise takes a fifth of a second to import, so only a run that sends imports this module
(retention.config.notifycheck checks the URLs as the configuration loads).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import SecretStr

from retention.config.notify import NotifyWhen, redacted_url
from retention.config.notifycheck import apprise, asset, silenced
from retention.errors import (
    EXIT_FAILURES,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    EXIT_UNREACHABLE,
    exit_meaning,
)
from retention.report.render import markdown_text, summary_markdown

if TYPE_CHECKING:
    from retention.report.summary import RunSummary

log = logging.getLogger("retention.notify")

# The exit codes of a failure notice: finished with failures, the API unreachable, or
# stopped by a signal (Ctrl-C, SIGTERM) before the end.
FAILURE_EXITS = frozenset({EXIT_FAILURES, EXIT_UNREACHABLE, EXIT_INTERRUPTED, EXIT_TERMINATED})


@dataclass(frozen=True)
class Notice:
    """One message: its title, its Markdown body and its kind (apprise's notify type,
    which sets the colour or icon in most services)."""

    title: str
    body: str
    kind: Literal["info", "success", "warning", "failure"]


@dataclass(frozen=True)
class Delivery:
    """What became of the notice to one URL (the URL redacted, ``setting`` where it was
    given: ``notify.urls[1]``, ``RETENTION_NOTIFY_URLS[0]`` or ``FILE:LINE`` of
    ``notify.urls_file``, since two URLs of one service look alike redacted)."""

    setting: str
    url: str
    sent: bool
    error: str | None = None

    def document(self) -> dict[str, Any]:
        """The delivery in the run's ``--format json`` document."""
        return {"url": self.url, "setting": self.setting, "sent": self.sent, "error": self.error}


def reasons(*, code: int, changed: bool, held: bool, stale: bool = False) -> set[NotifyWhen]:
    """The kinds of ending a run had: ``changed`` (changes applied, or for a dry run
    planned), ``held`` (a gate held changes no --approve let through), ``stale`` (its plan
    found clusters whose backups stopped), ``code`` its exit code (1, 5, 130 and 143 are
    failures)."""
    found: set[NotifyWhen] = set()
    if changed:
        found.add("changes")
    if held:
        found.add("holds")
    if code in FAILURE_EXITS:
        found.add("failure")
    if stale:
        found.add("stale-backups")
    return found


def _kind(why: set[NotifyWhen]) -> Literal["info", "success", "warning", "failure"]:
    if "failure" in why:
        return "failure"
    if "holds" in why or "stale-backups" in why:
        return "warning"
    return "success" if "changes" in why else "info"


def _code_span(text: str) -> str:
    """A path as Markdown code (escaped text in the odd case that it holds a backtick)."""
    if "`" in text:
        return markdown_text(text)
    return f"`{text}`"


def run_notice(
    *,
    mode: str,
    run_id: str,
    code: int,
    why: set[NotifyWhen],
    summary: RunSummary,
    run_dir: Path,
) -> Notice:
    """The notice of a run that finished: the exit code in the title; the run's summary (as
    report.md begins: what it did, and the clusters held, approved, changed most and with
    errors, by name) and the run folder in the body."""
    title = f"retention {mode} {run_id}: exit {code}, {exit_meaning(code)}"
    text = summary_markdown(summary)
    if "holds" in why:
        text += f"\n\nHeld changes wait for a human: read the report, then {_next_steps(summary)}."
    if "stale-backups" in why:
        text += (
            "\n\nBackups stopped: check the backup of the clusters named above in the "
            "service; the snapshots they have are kept as the policies say."
        )
    body = f"{text}\n\nRun folder: {_code_span(str(run_dir))}"
    kind = _kind(why)
    # A dry run changed nothing, so its planned changes are news, not a success.
    return Notice(title, body, "info" if kind == "success" and mode == "dry-run" else kind)


def _next_steps(summary: RunSummary) -> str:
    """What ends the holds of the run's held clusters, in words."""
    steps = []
    if summary.approvable:
        steps.append("send what max_expire_fraction holds with the command above")
    if any(h["kind"] == "alert" for c in summary.held for h in c.holds):
        steps.append("resolve the alerts")
    steps.append("change the policy")
    return ", ".join(steps[:-1]) + f"{', or ' if len(steps) > 1 else ''}{steps[-1]}"


def error_notice(*, mode: str, code: int, error: str) -> Notice:
    """The notice of a run that stopped on an error (exit 1 or 5) or a signal (130, 143)
    before it could finish."""
    title = f"retention {mode}: exit {code}, {exit_meaning(code)}"
    body = (
        f"**retention {mode} stopped: exit {code}, {exit_meaning(code)}.**\n\n"
        f"{markdown_text(error)}\n\nNo run folder was finished; the job's log says more."
    )
    return Notice(title, body, "failure")


def send(destinations: Sequence[tuple[str, SecretStr]], notice: Notice) -> list[Delivery]:
    """Send ``notice`` to each URL, one Apprise object per URL; never raises. Each URL comes
    with its place (``notify.urls[0]``, ``RETENTION_NOTIFY_URLS[1]``, ``FILE:LINE``). A URL
    that fails is logged as one warning (redacted, with its place) and reported in its
    Delivery."""
    deliveries = []
    for setting, secret in destinations:
        url = redacted_url(secret.get_secret_value())
        error = _send_one(secret.get_secret_value(), notice)
        deliveries.append(Delivery(setting, url, error is None, error))
        fields = {"url": url, "setting": setting}
        if error is None:
            fields["event"] = "notice-sent"
            log.info("notice sent to %s (%s)", url, setting, extra={"fields": fields})
            continue
        text = f"warning: could not send the notice to {url} ({setting}): {error}"
        fields.update(event="notice-failed", error=error)
        log.warning(
            "could not send the notice to %s (%s): %s",
            url,
            setting,
            error,
            extra={"text": text, "fields": fields},
        )
    return deliveries


def _send_one(url: str, notice: Notice) -> str | None:
    """None when the service took the notice, else why not, in words that hold nothing of
    the URL (apprise's own messages name hosts and paths, so they are not passed on)."""
    try:
        with silenced():
            service = apprise.Apprise.instantiate(url.strip(), asset=asset())
            if service is None:
                return "apprise cannot use this URL"
            sender = apprise.Apprise(asset=asset())
            sender.add(service)
            result = sender.notify(
                body=notice.body,
                title=notice.title,
                notify_type=apprise.NotifyType(notice.kind),
                body_format=apprise.NotifyFormat.MARKDOWN,
            )
    except Exception as exc:  # noqa: BLE001 - a notice must never end the run
        return f"apprise failed: {type(exc).__name__}"
    if result:
        return None
    if result.status == apprise.AppriseResultStatus.TIMEOUT:
        return "timed out"
    return "not delivered: the service could not be reached or refused the notice"
