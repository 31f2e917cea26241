"""The checks apply makes before it trusts a plan file, and the last one before each PATCH.

A plan file is reviewed, copied, edited, kept for hours: by the time it is applied it is
data from outside, like an API answer. Three layers, all pure (the executor does the I/O),
the first two made at once by ``trust``:

- ``plan_refusal``: the head. A what-if plan (``plan --at``), a plan evaluated at another
  time than it was made, one made against another API, or an old one is refused whole.
- ``EntryCheck``: every entry of ``changes``, before the first request. Ids, actions and
  bodies that match their action, ``destructive`` as the one definition says, a cluster the
  plan knows, no snapshot twice. One bad entry refuses the plan: nothing is sent.
- ``check_send``: right before each PATCH, against the state just re-read and the clock at
  that moment, the plan's rules once more (docs/plan-file.md, "Right before each PATCH"):
  a body the API accepts, no change to a snapshot that moved on, no kept snapshot
  shortened, no expiry earlier than now + grace. A destructive expiry is sent as
  max(planned, now + grace), so a plan reviewed for hours still gives every snapshot its
  full grace on the service. A snapshot that already holds what the change writes (the
  plan was applied before) is ``unchanged``: nothing is sent, and it is not called stale.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal, TypedDict

from retention.core.model import SnapshotView, is_destructive
from retention.core.planfile import AnyId, Change, ClusterEntry, HoldEntry, Id, ListName, PlanHead
from retention.core.snapshot import Kind, SnapshotPatch, json_text, state_document
from retention.core.timestamps import add_seconds, ceil_to_second, format_timestamp
from retention.core.wording import printable

# A plan is evaluated at the time it is made; more apart than this, it was made with --at
# (or edited) and answers a question about another time.
MAX_EVALUATION_SKEW = timedelta(minutes=5)
# Where the base URL a plan is checked against was set, unless the caller says more (the
# client knows when RETENTION_BASE_URL overrides api.base_url).
URL_FROM = "api.base_url"

# Which members each action's body has: a protect never carries expires (the API removes
# it, and doNotDelete: true with expires is refused).
_BODY_MEMBERS: dict[str, frozenset[str]] = {
    "protect": frozenset({"doNotDelete"}),
    "extend": frozenset({"expires"}),
    "shorten": frozenset({"expires"}),
    "delete": frozenset({"expires"}),
    "release": frozenset({"doNotDelete", "expires"}),
}


class ClusterFacts(TypedDict):
    """What apply needs of a cluster entry: its name, kind, grace, release protection,
    holds and how many changes they hold (a few hundred bytes; the whole entry is
    kilobytes)."""

    projectId: Id
    clusterId: AnyId
    name: str
    kind: Kind
    holds: list[HoldEntry]
    errors: list[str]
    graceSeconds: int
    releaseProtection: bool
    held: int


def facts_of(entry: ClusterEntry) -> ClusterFacts:
    """The facts apply needs of one cluster entry."""
    return {
        "projectId": entry["projectId"],
        "clusterId": entry["clusterId"],
        "name": entry["name"],
        "kind": entry["kind"],
        "holds": entry["holds"],
        "errors": entry["errors"],
        "graceSeconds": entry["graceSeconds"],
        "releaseProtection": entry["releaseProtection"],
        "held": entry["counts"].get("action:held", 0),
    }


ClusterIndex = dict[tuple[str, str], ClusterFacts]


def index_of(entries: Iterable[ClusterEntry]) -> ClusterIndex:
    """The facts of a plan's clusters, by (project, cluster id), in plan order."""
    return {(c["projectId"], c["clusterId"]): facts_of(c) for c in entries}


def plan_refusal(
    head: PlanHead, *, base_url: str, now: datetime, max_age: timedelta, url_from: str = URL_FROM
) -> str | None:
    """Why a plan must not be applied at all (None: its head is fine); ``url_from`` says
    where ``base_url`` was set. A plan of another format is refused as it is read
    (runfolder.planread)."""
    if head["whatIf"]:
        return (
            f"this is a what-if plan, made with --at {format_timestamp(head['evaluatedAt'])}: "
            "it shows what the policies would do at that time, and applying it would write "
            "expiries computed for then. Run `retention plan` (without --at) and apply that"
        )
    skew = abs(head["evaluatedAt"] - head["createdAt"])
    if skew > MAX_EVALUATION_SKEW:
        return (
            f"the plan was evaluated at {format_timestamp(head['evaluatedAt'])} but made at "
            f"{format_timestamp(head['createdAt'])} ({_hours(skew)} apart): its expiries were "
            "computed for another time. Run `retention plan` and apply that"
        )
    if head["baseUrl"].rstrip("/") != base_url.rstrip("/"):
        return (
            f"the plan was made against {head['baseUrl']!r}, not {base_url!r} (from "
            f"{url_from}); plan again against this API"
        )
    age = now - head["createdAt"]
    if age > max_age:
        return (
            f"the plan is {_hours(age)} old, more than --max-age {_hours(max_age)}; "
            "the fleet has moved on since: plan again"
        )
    if age < -MAX_EVALUATION_SKEW:
        return (
            f"the plan was made at {format_timestamp(head['createdAt'])}, "
            f"{_hours(-age)} in this machine's future: check the clocks, then plan again"
        )
    return None


def _hours(delta: timedelta) -> str:
    return f"{delta.total_seconds() / 3600:.1f}h"


def body_problem(change: Change) -> str | None:
    """What is wrong with a change's body for its action (None: nothing)."""
    action, body = change["action"], change["body"]
    members = frozenset(body)
    wanted = _BODY_MEMBERS[action]
    if body.get("doNotDelete") is True and "expires" in body:
        return "body holds doNotDelete: true together with expires, which the API refuses"
    if members != wanted:
        return f"{_a(action)} body has {_members(wanted)}, this one has {_members(members)}"
    if action == "protect" and body["doNotDelete"] is not True:
        return "a protect body is {doNotDelete: true}"
    if action == "release" and body["doNotDelete"] is not False:
        return "a release body sets doNotDelete: false"
    return None


def _a(action: str) -> str:
    """The action with its article: "a shorten", "an extend"."""
    return f"{'an' if action[0] in 'aeiou' else 'a'} {action}"


def _members(names: frozenset[str]) -> str:
    """A body's members in words: "doNotDelete and expires", "no member"."""
    return " and ".join(sorted(names)) or "no member"


@dataclass
class EntryCheck:
    """Checks the entries of a plan's ``changes`` one at a time, in file order, in memory
    that grows with the number of clusters, not of changes, against the plan's head and
    the facts of its ``clusters``."""

    head: PlanHead
    clusters: ClusterIndex

    def __post_init__(self) -> None:
        self._done: set[tuple[str, str]] = set()
        self._current: tuple[str, str] | None = None
        self._snapshots: set[str] = set()
        # A kept snapshot is written an expiry of at least now + 2 leases: never less than
        # this.
        self._lease_end = add_seconds(self.head["evaluatedAt"], self.head["leaseSeconds"])

    def problem(self, change: Change) -> str | None:  # noqa: PLR0911 - one return a rule
        """What is wrong with the next entry (None: nothing)."""
        key = (change["projectId"], change["clusterId"])
        cluster = self.clusters.get(key)
        if cluster is None:
            return f"cluster {change['clusterId']} is not among the plan's clusters"
        if cluster["kind"] != "cluster":
            return "a config-server snapshot has no PATCH endpoint: its changes are advisory"
        if "held" in change:
            return "a held change belongs in the plan's held list, not in changes"
        if key != self._current:
            if key in self._done:
                return f"the changes of cluster {change['clusterId']} are not together"
            if self._current is not None:
                self._done.add(self._current)
            self._current, self._snapshots = key, set()
        if change["snapshotId"] in self._snapshots:
            return f"snapshot {change['snapshotId']} has more than one change"
        self._snapshots.add(change["snapshotId"])
        if (problem := body_problem(change)) is not None:
            return problem
        return self._meaning(change, cluster)

    def _meaning(self, change: Change, cluster: ClusterFacts) -> str | None:  # noqa: PLR0911
        action, body, observed = change["action"], change["body"], change["observed"]
        if change["grace"] != cluster["graceSeconds"]:
            return (
                f"grace {change['grace']} s differs from its cluster's {cluster['graceSeconds']} s"
            )
        if action == "release":
            if not observed["doNotDelete"]:
                return "a release lifts doNotDelete, but the snapshot was not protected"
            if not cluster["releaseProtection"]:
                return "a release needs release_protection: true in every policy of its cluster"
        if action in ("shorten", "delete", "protect", "extend"):
            kept = action in ("protect", "extend")
            if change["destructive"] != is_destructive(action, kept=kept):
                return f"{_a(action)} is {'not ' if kept else ''}destructive"
        expires = body.get("expires")
        if expires is None:
            return None
        evaluated = self.head["evaluatedAt"]
        if change["destructive"]:
            floor = add_seconds(evaluated, change["grace"])
            if expires < floor:
                return (
                    f"expires {format_timestamp(expires)} is earlier than the plan's time "
                    f"plus the grace ({format_timestamp(floor)})"
                )
        elif expires < self._lease_end:
            return (
                f"{_a(action)} that keeps a snapshot writes at least the lease "
                f"({format_timestamp(self._lease_end)}), not {format_timestamp(expires)}"
            )
        return None


@dataclass(frozen=True)
class Verdict:
    """What to do with one change at send time: send ``body``, or not, and why."""

    outcome: Literal["send", "stale", "refused", "unchanged"]
    reason: str | None = None
    body: SnapshotPatch | None = None


def check_send(  # noqa: PLR0911 - one return per rule, in the order they are checked
    change: Change,
    current: SnapshotView | None,
    *,
    cluster: ClusterFacts | None,
    now: datetime,
) -> Verdict:
    """The last check before a PATCH: against the state just re-read (``current``, None when
    the snapshot is gone) and the clock ``now``. ``unchanged``: the snapshot already holds
    what the change writes, nothing to do. ``stale``: the snapshot moved on since the plan,
    nothing to do. ``refused``: sending would break an invariant."""
    if (problem := body_problem(change)) is not None:
        return Verdict("refused", problem)  # a body the API refuses, or not its action's
    if cluster is None or cluster["kind"] != "cluster":
        return Verdict("refused", "not a cluster snapshot of this plan: no PATCH is sent")
    if current is None:
        return Verdict("stale", "the snapshot is gone")
    observed = change["observed"]
    if (current.do_not_delete, current.expires) != (observed["doNotDelete"], observed["expires"]):
        if already_written(change, current, now):
            return Verdict("unchanged", ALREADY_WRITTEN)
        was = json_text(state_document(observed["doNotDelete"], observed["expires"]))
        is_now = json_text(state_document(current.do_not_delete, current.expires))
        return Verdict("stale", f"state changed since the plan: it was {was}, now {is_now}")
    if not current.complete:
        return Verdict("refused", "the snapshot is incomplete: it is never touched")
    if current.expires is not None and current.expires <= now:
        return Verdict("stale", "its expiry has passed since the plan")
    body = change["body"]
    if body.get("doNotDelete") is False and not cluster["releaseProtection"]:
        return Verdict("refused", "lifting doNotDelete needs release_protection: true")
    expires = body.get("expires")
    if expires is None:
        return Verdict("send", body=SnapshotPatch.protect())
    if not change["destructive"] and current.expires is not None and expires < current.expires:
        return Verdict(
            "refused",
            f"would shorten a kept snapshot from {format_timestamp(current.expires)} to "
            f"{format_timestamp(expires)}",
        )
    # No expiry written is earlier than now + grace: a plan that waited for review still
    # gives its snapshots their full grace.
    expires = max(expires, add_seconds(now, change["grace"]))
    if "doNotDelete" in body:
        return Verdict("send", body=SnapshotPatch.release(expires))
    return Verdict("send", body=SnapshotPatch.expire_at(expires))


# Why an ``unchanged`` change is not sent, in the journal's ``error`` and the summaries.
ALREADY_WRITTEN = (
    "already as this change leaves it (an earlier apply of this plan, or someone, wrote "
    "it): nothing sent"
)


def already_written(change: Change, current: SnapshotView, now: datetime) -> bool:
    """Whether the snapshot holds what ``change`` writes, as a send at any time from the
    plan until ``now`` would have written it: a protect, protected; an expiry, not
    protected and expiring from the planned expiry to max(planned, now + grace) (the latest
    a send until now gives it, rounded up to the second as the PATCH is)."""
    body = change["body"]
    if body.get("doNotDelete") is True:
        return current.do_not_delete
    planned = body.get("expires")
    if planned is None or current.do_not_delete or current.expires is None:
        return False
    latest = ceil_to_second(max(planned, add_seconds(now, change["grace"])))
    return planned <= current.expires <= latest


# Only this gate can be approved by a person: it says "more than usual would expire",
# which a person may well intend. An alert or a failed walk says the facts are in doubt,
# and an id hold that the plan cannot safely name what it would change.
APPROVABLE = frozenset({"max_expire_fraction"})
# What ends a hold that cannot be approved.
_UNTIL = {
    "alert": "resolve the alert and plan again",
    "walk": "plan again once the cluster can be walked",
    "outside": "look at what changed, then `retention ledger ack CLUSTER` and plan again",
    "id": (
        "no approval makes an id safe to put in a path, so nothing with such an id is "
        "walked or changed; take it up with the service's administrators"
    ),
}


@dataclass(frozen=True)
class Approval:
    """The held clusters an apply lets through: their (project, cluster id)s and names."""

    clusters: frozenset[tuple[str, str]]
    names: tuple[str, ...]
    skipped: tuple[str, ...] = ()  # --approve-all: held clusters it could not approve, and why


def approve(
    clusters: ClusterIndex,
    wanted: Sequence[str],
    *,
    everything: bool,
    said: Mapping[str, str] | None = None,
) -> Approval:
    """Resolve ``--approve CLUSTER`` (name or id) and ``--approve-all`` against the facts of
    a plan's clusters; ``said`` names where a wanted name came from when not from
    --approve (the file and line of --approve-from), for the messages.

    Raises ValueError (said to the user, exit 2, nothing sent) for a name the plan does not
    hold, one that names several clusters, a cluster that is not held, and a cluster held
    by an alert or a failed walk, with why that cannot be approved.
    """
    chosen: dict[tuple[str, str], str] = {}  # the clusters let through, and their names
    skipped: list[str] = []
    for c in clusters.values() if everything else ():
        if not c["holds"]:
            continue
        if (why := _not_approvable(c)) is None:
            chosen[(c["projectId"], c["clusterId"])] = c["name"]
        else:
            skipped.append(printable(f"{c['name']} ({c['clusterId']}): {why}"))
    for name in wanted:
        where = (said or {}).get(name) or f"--approve {printable(name)}"
        found = [c for c in clusters.values() if name in (c["clusterId"], c["name"])]
        if not found:
            raise ValueError(f"{where}: the plan has no cluster of that name or id")
        if len(found) > 1:
            ids = ", ".join(c["clusterId"] for c in found)
            raise ValueError(f"{where}: {len(found)} clusters have that name ({ids}); "
                             "approve one by its id")  # fmt: skip
        [cluster] = found
        if not cluster["holds"]:
            raise ValueError(f"{where}: the plan does not hold this cluster")
        if (why := _not_approvable(cluster)) is not None:
            raise ValueError(f"{where}: {why}")
        chosen[(cluster["projectId"], cluster["clusterId"])] = cluster["name"]
    return Approval(frozenset(chosen), tuple(sorted(chosen.values())), tuple(skipped))


def _not_approvable(cluster: ClusterFacts) -> str | None:
    others = [h for h in cluster["holds"] if h["kind"] not in APPROVABLE]
    if not others:
        return None
    reasons = "; ".join(f"{h['kind']}: {h['reason']}" for h in others)
    kinds = dict.fromkeys(h["kind"] for h in others)
    until = "; ".join(_UNTIL.get(kind, "plan again") for kind in kinds)
    return f"held by {reasons}. Only a max_expire_fraction hold can be approved: {until}"


@dataclass(frozen=True)
class Asked:
    """What an apply is asked: the oldest plan it takes, and the held clusters to let
    through (``approve``: names or ids; ``approve_all``: every one an approval can free)."""

    max_age: timedelta
    approve: tuple[str, ...] = ()
    approve_all: bool = False
    # Where an entry of ``approve`` came from, when not --approve (--approve-from FILE:N).
    said: Mapping[str, str] = field(default_factory=dict)


class RefusalError(ValueError):
    """A plan apply must not send (``whole``: its head; else an approval it cannot give)."""

    def __init__(self, why: str, *, whole: bool) -> None:
        super().__init__(why)
        self.why, self.whole = why, whole


@dataclass(frozen=True)
class Trusted:
    """A plan whose head passed, the facts of its clusters, the approvals resolved against
    them, and the check each of its changes must pass before the first is sent."""

    clusters: ClusterIndex
    approval: Approval
    entries: EntryCheck

    @classmethod
    def made(cls, head: PlanHead, clusters: ClusterIndex) -> Trusted:
        """A plan this very run made (its head is its own): nothing approved, every change
        still checked."""
        return cls(clusters, Approval(frozenset(), ()), EntryCheck(head, clusters))


def trust(
    head: PlanHead,
    entries: Iterable[ClusterEntry],
    asked: Asked,
    *,
    base_url: str,
    now: datetime,
    url_from: str = URL_FROM,
) -> Trusted:
    """Check a plan's head (plan_refusal), take the facts of its cluster ``entries`` and
    resolve the approvals ``asked`` against them; RefusalError says why not."""
    refusal = plan_refusal(
        head, base_url=base_url, now=now, max_age=asked.max_age, url_from=url_from
    )
    if refusal is not None:
        raise RefusalError(refusal, whole=True)
    clusters = index_of(entries)
    try:
        approval = approve(clusters, asked.approve, everything=asked.approve_all, said=asked.said)
    except ValueError as exc:
        raise RefusalError(str(exc), whole=False) from None
    return Trusted(clusters, approval, EntryCheck(head, clusters))


def to_send(
    candidates: Iterable[tuple[ListName, Change]], approved: frozenset[tuple[str, str]]
) -> Iterator[Change]:
    """The changes apply sends, in plan order: those of ``changes``, and the held changes
    of the ``approved`` clusters, no longer held."""
    for listed, change in candidates:
        if listed == "changes":
            yield change
        elif (change["projectId"], change["clusterId"]) in approved:
            released = dict(change)
            released.pop("held", None)
            yield released  # type: ignore[misc] # the same record less its optional "held"
