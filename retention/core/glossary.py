"""The words retention uses for what it decides, in one place.

The report's "Words used here" section and docs/glossary.md are both made from ``GLOSSARY``,
so the terminal, the report, the Markdown and plan.json can use a word and a reader finds
the same meaning wherever they look it up. ``python -m retention.report.glossary`` rewrites
docs/glossary.md; a test fails when the file is stale or when a state, action, hold or
outcome of the code has no entry.
"""

from __future__ import annotations

Entry = tuple[str, str]

GLOSSARY: tuple[tuple[str, str, tuple[Entry, ...]], ...] = (
    (
        "States",
        "What the plan found a snapshot to be (`state` in decisions.jsonl.zst).",
        (
            ("kept", "A keep rule of a matching policy keeps it (or min_keep does)."),
            ("protected", "A protect rule keeps it with doNotDelete: true, without expiry."),
            (
                "unkept",
                "No rule keeps it: it gets an expiry of the run's time plus the policy's grace, "
                "after which the service may delete it.",
            ),
            (
                "unmatched",
                "No policy matches its cluster: it is never changed (see unmanaged).",
            ),
            (
                "manual-hold",
                "Someone set doNotDelete on it and no protect rule asks for that: left as it "
                "is unless the policy has release_protection: true.",
            ),
            (
                "awaiting-deletion",
                "Its expiry has passed: the service deletes it and the API refuses to edit it.",
            ),
            ("incomplete", "Still being taken: not counted and never touched."),
            (
                "inconsistent",
                "Possibly inconsistent or missing shards: not counted, left alone unless the "
                "policy says inconsistent: expire.",
            ),
        ),
    ),
    (
        "Actions",
        "The change a plan makes to a snapshot (`action`); one PATCH each.",
        (
            ("none", "No change is needed."),
            ("protect", "Set doNotDelete: true (and no expiry): kept until a person lifts it."),
            (
                "extend",
                "Move a kept snapshot's expiry later: to its rule's horizon, and at least two "
                "leases ahead.",
            ),
            (
                "shorten",
                "Bring an unkept snapshot's expiry forward to the run's time plus the grace "
                "(destructive).",
            ),
            (
                "delete",
                "Shorten with a grace of zero: the service may delete it right away (destructive).",
            ),
            (
                "release",
                "Lift a doNotDelete the policy no longer asks for (only with "
                "release_protection: true), with the expiry its rules give it.",
            ),
        ),
    ),
    (
        "Not sent",
        "Changes the plan lists but does not send.",
        (
            (
                "held",
                "A destructive change a safety gate stopped: it waits for a person (exit 3).",
            ),
            (
                "advisory",
                "A change a legacy config-server snapshot would need: the API has no way to "
                "make it, so it is only reported.",
            ),
        ),
    ),
    (
        "Holds",
        "Why a cluster's destructive changes are held (`holds[].kind` in plan.json).",
        (
            (
                "max_expire_fraction",
                "More of the cluster would expire in one run than the policy allows (counted "
                "over its snapshots that are neither incomplete nor awaiting deletion); after "
                "review, `retention apply PLAN --approve CLUSTER` sends them, and that apply's "
                "reports list the cluster as approved, no longer held.",
            ),
            (
                "alert",
                "An OPEN alert of a type in hold_on_alerts names the cluster: resolve it, "
                "then plan again.",
            ),
            (
                "walk",
                "The cluster's snapshots could not all be read: no destructive change "
                "until a complete walk.",
            ),
            (
                "id",
                "The service gave the cluster, or one of its snapshots, an id a plan cannot "
                "carry as one path segment (empty, over 128 characters, `.` or `..`, or "
                "holding `/`, `\\` or a control character): such a cluster is not walked, "
                "such a snapshot never changed, the cluster's destructive changes wait, and "
                "no approval lifts the hold.",
            ),
            (
                "outside",
                "Someone changed the cluster's snapshots outside retention since the last run "
                "(see Changes made outside retention) and a policy says "
                "safety.hold_on_outside_change: true. It holds the plan that found the "
                "changes: look at them, then plan again; no approval lifts it, and the next "
                "plan does not hold for the same changes.",
            ),
        ),
    ),
    (
        "Changes made outside retention",
        "What the ledger found changed since the last run by someone other than retention "
        "(`outsideChanges[].kind` in plan.json).",
        (
            (
                "changed",
                "A snapshot's expires or doNotDelete is not what the ledger last knew, and no "
                "run of retention sent that: before and after are named.",
            ),
            (
                "deleted-early",
                "A complete snapshot is no longer listed, before its last known expiry or "
                "while it was protected.",
            ),
            (
                "gone",
                "Every snapshot of a cluster went at once (its backup was terminated), or "
                "discovery no longer finds the cluster (it was removed): with how many "
                "restore points it had, and the newest.",
            ),
        ),
    ),
    (
        "Outcomes",
        "What happened to a PATCH (`outcome` in results.jsonl).",
        (
            ("applied", "The API made the change."),
            (
                "unchanged",
                "The snapshot already held what the change writes (an earlier apply of the "
                "same plan, or someone, made it): nothing sent.",
            ),
            (
                "stale",
                "The snapshot changed since the plan (gone, or another expiry or state than "
                "both the plan saw and the change writes): skipped; the next plan decides "
                "again.",
            ),
            (
                "refused",
                "The last check before sending found it would break a safety rule: not sent "
                "(exit 1).",
            ),
            ("failed", "The API answered with an error, or not at all (exit 1)."),
            (
                "held",
                "A safety gate holds it and no `--approve` let it through: not sent. The "
                "reports count here every change still held, journalled or not.",
            ),
            (
                "not-sent",
                "The run was stopped (Ctrl-C, SIGTERM) before this change was sent: the "
                "summary names the command that sends it (retention apply of the run folder, "
                "with the approvals the run had).",
            ),
        ),
    ),
    (
        "Undo outcomes",
        "What `retention undo` did about each snapshot a run shortened (`outcome` in the "
        "undo's results.jsonl and undo.json).",
        (
            ("restored", "Put back to its state from before that run."),
            ("would-restore", "A dry run: it would have been put back."),
            ("unchanged", "Already as before that run: nothing sent."),
            (
                "protected",
                "Protected with no expiry where it had no expiry before that run: an undo "
                "stopped between its two PATCHes, or someone protected it. It cannot be "
                "deleted; lift the protection by hand to have it as before.",
            ),
            (
                "stale",
                "Changed since that run by someone or something else: left alone (exit 1).",
            ),
            ("gone", "Deleted: nothing to put back (exit 1)."),
            (
                "expired",
                "The expiry that run wrote has passed, and the API edits no past expiry (exit 1).",
            ),
            (
                "lapsed",
                "Its expiry from before that run has passed too: putting it back would let "
                "the service delete it at once (exit 1).",
            ),
            (
                "not-sent",
                "The undo was stopped (Ctrl-C, SIGTERM) before this snapshot was put back: "
                "run the same undo again.",
            ),
        ),
    ),
    (
        "Other words",
        "",
        (
            (
                "ledger",
                "The database (ledger.url; by default ledger.db in reports.dir) where every "
                "plan, run, apply, undo and prune is recorded, and which every plan reads to "
                "find changes made outside retention.",
            ),
            (
                "baseline",
                "The first run the ledger records of the fleet (or of a shard): it has "
                "nothing to compare with, so it reports no change made outside retention.",
            ),
            (
                "head",
                "The hash of the newest record of one of the ledger's chains (one a shard). "
                "Each record's hash covers the one before it, so a copy of the head kept "
                "elsewhere shows later that no earlier record was changed "
                "(retention ledger verify).",
            ),
            (
                "in doubt",
                "A PATCH journalled as about to be sent, with no outcome after it (the run "
                "was killed while it was on the wire) or a failure (a try may have reached "
                "the service first). Undo puts it back only if the service shows what it "
                "would have written.",
            ),
            (
                "destructive",
                "A change that lets the service delete a snapshot sooner: shorten, delete, "
                "or a release of an unkept one. Only these are held.",
            ),
            (
                "grace",
                "The time an unkept snapshot is given before the service may delete it, "
                "counted from when the change is sent.",
            ),
            (
                "may be deleted from",
                "The earliest time the service may delete a snapshot: its new expiry, "
                "never sooner than the send time plus the grace.",
            ),
            (
                "restore point",
                "A complete, consistent snapshot the plan leaves in place (kept, protected, "
                "held by hand, or of a cluster no policy matches). A cluster's restore points "
                "read as a ladder: every 6 h for 2 days, daily for 7 days, ...",
            ),
            (
                "horizon",
                "How long the rule that keeps a snapshot wants it: daily 7 keeps a day's "
                "snapshot until 7 days after that day ends.",
            ),
            (
                "lease",
                "The time until the second-next scheduled run, and at least lease_minimum "
                "(7 days by default): after a run no kept snapshot expires sooner, so a job "
                "and a service stopped for less lose nothing the policy keeps (the outage "
                "tolerance). A kept snapshot nearer than that is extended to two leases.",
            ),
            (
                "#3 of 7",
                "The counter of a keep rule: this is the third snapshot daily 7 keeps, "
                "newest first.",
            ),
            (
                "unmanaged",
                "A cluster no policy matches: retention never changes its snapshots, so they "
                "are never cleaned up either.",
            ),
            (
                "unused policy",
                "A policy that matches no cluster or config server, often a glob that misses.",
            ),
            (
                "given back",
                "The storage (the parts' storageSizeBytes) of the snapshots a plan shortens or "
                "deletes, freed when the service deletes them.",
            ),
            (
                "what-if plan",
                "A plan made with --at for another time: for reading only, apply refuses it.",
            ),
            (
                "hold record",
                "An entry of protect: ids with a reason, maybe a ticket and an end (until): "
                "it protects its snapshot until then, and no longer once it has ended. Not a "
                "safety-gate hold.",
            ),
        ),
    ),
)


def terms() -> dict[str, str]:
    """Every term and its meaning."""
    return {term: meaning for _, _, entries in GLOSSARY for term, meaning in entries}


def markdown() -> str:
    """docs/glossary.md."""
    lines = [
        "# Glossary",
        "",
        "The words retention uses in its terminal output, report.html, report.md, plan.json "
        "and decisions.jsonl.zst, and what they mean. "
        "(Generated from `retention/core/glossary.py`: "
        "`python -m retention.report.glossary`.)",
    ]
    for title, intro, entries in GLOSSARY:
        lines += ["", f"## {title}", ""]
        if intro:
            lines += [intro, ""]
        lines += [f"- **{term}**: {meaning}" for term, meaning in entries]
    return "\n".join(lines) + "\n"
