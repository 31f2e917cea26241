"""What the jobs tell the ledger of how they ended: the plan's digest and counts, the
approvals, the outside changes it found."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from retention.config.scope import Scope
from retention.ledger.recorder import PolicyText, RunEnd
from retention.runfolder.planread import PlanFile


def plan_digest(plan: PlanFile) -> str | None:
    """The sha256 of plan.json (it names its decisions by theirs)."""
    try:
        return hashlib.sha256(plan.path.read_bytes()).hexdigest()
    except OSError:
        return None


def plan_end(
    plan: PlanFile,
    code: int,
    ended: datetime,
    *,
    signal: str | None = None,
    approvals: Sequence[str] = (),
    counts: dict[str, Any] | None = None,
) -> RunEnd:
    """The end of a run that made or applied ``plan``."""
    summary: dict[str, Any] = dict(plan.head["summary"])
    summary["outsideChanges"] = len(plan.head.get("outsideChanges", []))
    if counts:
        summary["applied"] = counts
    return RunEnd(
        ended=ended,
        exit_code=code,
        signal=signal,
        service_version=plan.head["serviceVersion"],
        plan_digest=plan_digest(plan),
        approvals={"clusters": list(approvals)} if approvals else {},
        summary=summary,
    )


def policy_refs(scope: Scope) -> list[dict[str, str]]:
    """Each policy file the job read: its name, path and sha256."""
    return [
        {"name": p.policy.name, "path": str(p.path), "sha256": p.sha256}
        for p in sorted(scope.policies, key=lambda p: p.name)
    ]


def policy_texts(scope: Scope) -> list[PolicyText]:
    """The text of each policy file the job read, for the ledger to keep once; a file that
    changed since it was read (its sha256 no longer the one its policies were loaded with)
    is left out rather than kept under a digest that is not its own."""
    texts: dict[str, PolicyText] = {}
    for p in scope.policies:
        if p.sha256 in texts:
            continue
        try:
            data = p.path.read_bytes()
        except OSError:
            continue
        if hashlib.sha256(data).hexdigest() != p.sha256:
            continue
        texts[p.sha256] = PolicyText(p.sha256, str(p.path), data.decode("utf-8", "replace"))
    return [texts[k] for k in sorted(texts)]
