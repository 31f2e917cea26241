"""The fleet as discovery finds it, for ``retention clusters``: one read-only pass over the
configuration's projects (discovery as a plan does it, without the alerts), each target's
snapshots walked on ``api.concurrency`` threads as a plan walks them (only their count and
the newest complete one are kept), and the policies matched by name as a plan matches
them. Its JSON document and its lines for a terminal.

A cluster listed by id in the configuration is named by its snapshots, as in a plan, so
the names shown are those the policies' globs are matched against. Policies that do not
load do not stop the listing (a person writing their first policy needs the names): the
targets are listed without them, and the listing says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from retention.api.client import OpsManagerClient
from retention.config.scope import Scope
from retention.core.model import Target
from retention.core.policy.globs import glob_warnings
from retention.core.timestamps import format_timestamp
from retention.core.wording import counted, printable
from retention.errors import EXIT_FAILURES, EXIT_OK
from retention.walk.inventory import WalkListener, survey_fleet, walk_all

UNMANAGED = "unmanaged"


@dataclass(frozen=True)
class Listed:
    """One target: its snapshots (None when they could not be read, ``error`` says why),
    the creation of its newest complete snapshot, and the policies that match it (None:
    the policies did not load)."""

    target: Target
    snapshots: int | None
    newest: datetime | None
    policies: tuple[str, ...] | None
    error: str | None = None

    def document(self, project_name: str | None) -> dict[str, Any]:
        """Its entry in ``clusters --format json``."""
        target = self.target
        return {
            "projectId": target.project_id,
            "projectName": project_name,
            "clusterId": target.cluster_id,
            "name": target.name,
            "kind": target.kind,
            "typeName": target.type_name,
            "replicaSetName": target.replica_set_name,
            "members": [
                {
                    "clusterId": m.cluster_id,
                    "typeName": m.type_name,
                    "shardName": m.shard_name,
                    "replicaSetName": m.replica_set_name,
                }
                for m in target.members
            ],
            "snapshots": self.snapshots,
            "newest": format_timestamp(self.newest) if self.newest else None,
            "policies": None if self.policies is None else list(self.policies),
            "error": self.error,
        }


@dataclass(frozen=True)
class Clusters:
    """What ``retention clusters`` found: the projects (id: name, in id order), each target
    listed, the policies that match nothing, and what is worth a warning (discovery's,
    then each glob that matches nothing, with the closest real names) or is an error (a
    project that could not be discovered); ``unmatched``: why no policy was matched (the
    policies did not load)."""

    projects: dict[str, str | None]
    listed: list[Listed]
    unused: list[str]
    warnings: list[str]
    errors: list[str]
    unmatched: str | None = None

    @property
    def code(self) -> int:
        """1 when a project could not be discovered or a target walked, else 0."""
        failed = self.errors or any(entry.error for entry in self.listed)
        return EXIT_FAILURES if failed else EXIT_OK

    def document(self) -> dict[str, Any]:
        """clusters --format json."""
        return {
            "command": "clusters",
            "exitCode": self.code,
            "projects": [
                {
                    "projectId": project,
                    "name": name,
                    "clusters": self._count(project, "cluster"),
                    "configServers": self._count(project, "config-server"),
                }
                for project, name in self.projects.items()
            ],
            "clusters": [e.document(self.projects.get(e.target.project_id)) for e in self.listed],
            "unusedPolicies": self.unused,
            "policiesNotMatched": self.unmatched,
            "warnings": self.warnings,
            "errors": self.errors,
        }

    def _count(self, project: str, kind: str) -> int:
        return sum(e.target.project_id == project and e.target.kind == kind for e in self.listed)

    def lines(self) -> list[str]:
        """A table a project, then the totals, the warnings and the errors."""
        header = ("NAME", "KIND", "TYPE", "ID", "SNAPSHOTS", "NEWEST (UTC)", "POLICIES")
        rows = {id(e): _row(e) for e in self.listed}
        widths = [max(len(r[i]) for r in (header, *rows.values())) for i in range(len(header))]

        def line(cells: Sequence[str]) -> str:
            return "  " + "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

        lines: list[str] = []
        for project, name in self.projects.items():
            entries = [e for e in self.listed if e.target.project_id == project]
            said = f"project {project}" + (f" ({name})" if name else "")
            kinds = [counted(self._count(project, "cluster"), "cluster")]
            if servers := self._count(project, "config-server"):
                kinds.append(counted(servers, "legacy config server"))
            lines.append(f"{said}: {', '.join(kinds)}")
            if entries:
                lines += [line(header), *(line(rows[id(e)]) for e in entries)]
            lines.append("")
        lines.append(self._totals())
        lines += [
            *([f"  warning policies not matched: {self.unmatched}"] if self.unmatched else []),
            *(
                f"  warning policy {name!r} matches no cluster or config server"
                for name in self.unused
            ),
            *(f"  warning {warning}" for warning in self.warnings),
            *(f"  error {error}" for error in self.errors),
        ]
        # Names and ids come from the service: none of their characters may act on a terminal.
        return [printable(text) for text in lines]

    def _totals(self) -> str:
        clusters = sum(e.target.kind == "cluster" for e in self.listed)
        servers = len(self.listed) - clusters
        snapshots = sum(e.snapshots or 0 for e in self.listed)
        managed = sum(bool(e.policies) for e in self.listed)
        found = counted(clusters, "cluster")
        found += f" and {counted(servers, 'legacy config server')}" if servers else ""
        said = (
            f"{found} in {counted(len(self.projects), 'project')}, {counted(snapshots, 'snapshot')}"
        )
        if self.unmatched:
            return f"{said}."
        return f"{said}; {managed} managed by a policy, {len(self.listed) - managed} unmanaged."


def _row(entry: Listed) -> tuple[str, ...]:
    target = entry.target
    snapshots = "not read" if entry.error is not None else str(entry.snapshots)
    kind = "config server" if target.kind == "config-server" else target.kind
    shards = sum(m.shard_name is not None for m in target.members)
    type_name = target.type_name or "-"
    type_name += f", {counted(shards, 'shard')}" if shards else ""
    return (
        target.name,
        kind,
        type_name,
        target.cluster_id,
        snapshots,
        format_timestamp(entry.newest) if entry.newest else "-",
        "?" if entry.policies is None else ", ".join(entry.policies) or UNMANAGED,
    )


def list_clusters(
    client: OpsManagerClient,
    scope: Scope,
    *,
    unmatched: str | None = None,
    listener: WalkListener | None = None,
) -> Clusters:
    """Survey ``scope``'s projects, walk every target, match the policies (none when
    ``unmatched`` says why: they did not load); ``listener`` hears how many targets there
    are and of each one walked. Read-only: nothing is written or sent."""
    survey = survey_fleet(client, scope.projects, concurrency=scope.concurrency, alerts=False)
    listed: list[Listed] = []
    policies = scope.policies
    on_walk = None if listener is None else listener.walk
    if listener is not None:
        listener.walks(len(survey.targets))
    for walked in walk_all(client, survey.targets, concurrency=scope.concurrency, on_done=on_walk):
        target = walked.target
        matching = policies.matching(target.project_id, target.name, target.kind)
        names = None if unmatched else tuple(p.name for p in matching)
        error = walked.error or target.id_problem()
        complete = [s.created for s in walked.snapshots if s.complete]
        listed.append(
            Listed(
                target,
                None if error else len(walked.snapshots),
                max(complete) if complete and not error else None,
                names,
                error,
            )
        )
    order = {project: n for n, project in enumerate(survey.names)}
    listed.sort(key=lambda e: (order.get(e.target.project_id, 0), e.target.kind, e.target.name))
    used = {name for entry in listed for name in entry.policies or ()}
    projects = [p.project_id for p in scope.projects]
    targets = [entry.target for entry in listed]
    globs = glob_warnings(policies, targets, projects, survey.undiscovered)
    return Clusters(
        projects=dict(survey.names),
        listed=listed,
        unused=[p.name for p in policies if p.name not in used],
        warnings=[*survey.warnings, *globs],
        errors=list(survey.errors),
        unmatched=unmatched,
    )
