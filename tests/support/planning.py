"""Helpers for planner tests: real loaded policies built from engine rules, applying a
plan's PATCHes to snapshot states the way the API would (for the idempotence and min_keep
invariants), and ``retention validate`` of a policy file."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, NamedTuple, TypeVar

import msgspec
import pytest
from hypothesis import strategies as st

from retention import cli
from retention.core.model import ClusterDecisions, ClusterPlan, SnapshotView
from retention.core.policy import rules
from retention.core.policy.duration import RetentionDuration
from retention.core.policy.loader import LoadedPolicy
from retention.core.policy.model import KeepRules, Policy, ProtectRules, Safety
from retention.core.policy.spec import KeepSpec
from retention.core.restorable import describe_restore_points

HOLD_TYPES = frozenset(
    {"BAD_CLUSTERSHOTS", "RESYNC_REQUIRED", "OPLOG_BEHIND", "INCONSISTENT_BACKUP_CONFIGURATION"}
)
DAY_GRACE = RetentionDuration(hours=24)
Rules = TypeVar("Rules", bound=KeepRules)


def loaded_policy(  # noqa: PLR0913 - a policy's every setting, each with its default
    name: str = "test",
    keep: KeepSpec | None = None,
    protect: KeepSpec | None = None,
    *,
    grace: RetentionDuration = DAY_GRACE,
    release_protection: bool = False,
    inconsistent: Literal["ignore", "expire"] = "ignore",
    timezone: str = "UTC",
    min_keep: int = 1,
    max_expire_fraction: float = 0.5,
    hold_on_alerts: frozenset[str] = HOLD_TYPES,
) -> LoadedPolicy:
    """A policy as the loader gives it, validated like a file's, from engine-ready rules;
    it comes from ``NAME.yaml``, so a hold names that file and the setting's default."""
    policy = Policy(
        name=name,
        keep=_section(KeepRules, keep),
        protect=_section(ProtectRules, protect),
        grace=grace,
        release_protection=release_protection,
        inconsistent=inconsistent,
        timezone=timezone,
        safety=Safety(
            min_keep=min_keep,
            max_expire_fraction=max_expire_fraction,
            hold_on_alerts=sorted(hold_on_alerts),
        ),
    )
    return LoadedPolicy(policy, Path(f"{name}.yaml"), sha256="0" * 64)


def renamed(loaded: LoadedPolicy, name: str) -> LoadedPolicy:
    """``loaded`` under a name the policy language refuses: a plan file carries any name."""
    return replace(loaded, policy=loaded.policy.model_copy(update={"name": name}))


def _section(model: type[Rules], spec: KeepSpec | None) -> Rules | None:
    if spec is None:
        return None
    taken = rules.in_section(model.section)
    foreign = [
        r.name for r in rules.RULES if r not in taken and r.keeps_with(getattr(spec, r.name))
    ]
    if foreign:
        raise ValueError(f"a policy's {model.section} rules cannot set {', '.join(foreign)}")
    values: dict[str, Any] = {rule.name: getattr(spec, rule.name) for rule in taken}
    values["every"] = [{"cron": every.cron, "count": every.count} for every in spec.every]
    if "ids" in values:
        values["ids"] = sorted(spec.ids)
    section = model.model_validate(values)
    if section.to_spec() != spec:
        raise ValueError(f"{spec} does not survive the policy model: {section.to_spec()}")
    return section


def policies(
    keep: st.SearchStrategy[KeepSpec | None],
    protect: st.SearchStrategy[KeepSpec | None],
    **settings: st.SearchStrategy[Any],
) -> st.SearchStrategy[LoadedPolicy]:
    """Policies of generated rules and ``settings`` (loaded_policy's keywords). As in the
    policy language, none of them keeps and protects nothing."""
    sides = st.tuples(keep, protect).filter(
        lambda pair: any(spec is not None and not spec.empty for spec in pair)
    )
    return st.builds(
        lambda pair, **chosen: loaded_policy(keep=pair[0], protect=pair[1], **chosen),
        sides,
        **settings,
    )


def described(decided: ClusterDecisions, now: datetime) -> ClusterPlan:
    """The cluster's plan as the planner writes it: its decisions and its restore points."""
    return ClusterPlan(decided, describe_restore_points(decided, now))


def apply(
    snapshots: list[SnapshotView], decided: ClusterDecisions, now: datetime
) -> list[SnapshotView]:
    """The snapshot states after the API received every PATCH the decisions send."""
    bodies: dict[str, dict[str, Any]] = {
        d.snapshot.id: d.patch.to_api() for d in decided.decisions if d.sends and d.patch
    }
    out = []
    for s in snapshots:
        body = bodies.get(s.id)
        if body is None:
            out.append(s)
            continue
        dnd = body.get("doNotDelete", s.do_not_delete)
        expires = s.expires
        if "expires" in body:
            expires = datetime.fromisoformat(body["expires"].replace("Z", "+00:00"))
        if dnd:
            expires = None
        out.append(msgspec.structs.replace(s, do_not_delete=dnd, expires=expires))
    return out


VALIDATED_AT = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


class Validated(NamedTuple):
    """What ``retention validate`` said of a policy file, as text and as JSON."""

    code: int
    err: str
    json_code: int
    document: dict[str, Any]


def validate_file(folder: Path, text: str, capsys: pytest.CaptureFixture[str]) -> Validated:
    """Write ``text`` to policies/p.yaml in ``folder`` (the current directory) and run
    ``retention validate --policies policies`` as text and as ``--format json``, at
    VALIDATED_AT (the hold records' warnings read the time)."""
    (folder / "policies").mkdir()
    (folder / "policies" / "p.yaml").write_text(text)
    code = cli.main(["validate", "--policies", "policies"], clock=lambda: VALIDATED_AT)
    err = capsys.readouterr().err
    argv = ["validate", "--policies", "policies", "--format", "json"]
    json_code = cli.main(argv, clock=lambda: VALIDATED_AT)
    return Validated(code, err, json_code, json.loads(capsys.readouterr().out))
