"""Hold records: a `protect: ids` entry may be `{id, reason, ticket, until}`. A record
protects its snapshot while the plan's time is before its end (a day: to the end of that day,
UTC) and no longer after it; plain ids behave as before. Plans, the report, explain, the
summary and validate show the record's reason, ticket and end."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec
import pytest

from retention import cli
from retention.config.policyfiles import parse_policies
from retention.core.decide import decide
from retention.core.model import ClusterDecisions, ClusterView, SnapshotView, Target, describe
from retention.core.planfile import DECISION, DecisionRecord
from retention.core.policy.engine import evaluate
from retention.core.policy.holdrecords import HoldRecordTerms
from retention.core.policy.loader import LoadedPolicy, hold_record_warnings
from retention.core.policy.model import policy_json_schema
from retention.core.policy.spec import Item, KeepSpec
from retention.core.policy.trace import trace
from retention.errors import PolicyError
from retention.report import RunInfo, render_reports
from retention.report.lines import summary_lines
from retention.runfolder.folder import decisions_path
from retention.runfolder.planread import open_plan
from retention.runfolder.planrecords import decision_record
from retention.runfolder.planwrite import PlanBuilder, PolicyDigest
from retention.simulator.server import Simulator
from tests.support.planning import described
from tests.support.simfleet import P

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
TARGET = Target(P, "5e4e593f70dfbf1e2f6e1d31", "prod-small")
HOLD_RECORDS = """\
name: production
match:
  clusters: ["prod-*"]
keep:
  last: 1
protect:
  ids:
    - plain0
    - id: audit1
      reason: restore rehearsal for the Q4 audit
      ticket: OPS-1234
      until: 2026-11-30
    - id: done2
      reason: incident review
      until: 2026-11-01T18:00:00Z
release_protection: {release}
safety:
  max_expire_fraction: 1.0
"""


def policies(text: str = HOLD_RECORDS, *, release: bool = False) -> list[LoadedPolicy]:
    """The policies of one file, policies/holds.yaml, as the loader gives them."""
    data = text.replace("{release}", "true" if release else "false").encode()
    return list(parse_policies([(Path("policies/holds.yaml"), data)]))


def problems(text: str) -> list[str]:
    """The problems the loader finds in a policies/holds.yaml holding ``text``."""
    with pytest.raises(PolicyError) as caught:
        parse_policies([(Path("policies/holds.yaml"), text.encode())])
    return caught.value.problems


def snapshot(sid: str, hours: int, *, held: bool = False) -> SnapshotView:
    """A complete, consistent snapshot taken ``hours`` before NOW, expiring in 30 days
    (or protected, ``held``)."""
    expires = None if held else NOW + 30 * DAY
    return SnapshotView(sid, NOW - timedelta(hours=hours), True, held, expires)


SNAPSHOTS = [
    snapshot("newest", 1),
    snapshot("plain0", 10),
    snapshot("audit1", 20),
    snapshot("done2", 30),
]


def plan_at(
    now: datetime, snapshots: list[SnapshotView] = SNAPSHOTS, *, release: bool = False
) -> ClusterDecisions:
    """prod-small decided at ``now`` with the hold records' policy."""
    loaded = policies(release=release)
    return decide(ClusterView(TARGET, snapshots), loaded, now=now, lease_for=7 * DAY)


def decision(plan: ClusterDecisions, sid: str) -> DecisionRecord:
    """The decisions.jsonl record of one snapshot of ``plan``, as written and read back."""
    found = next(d for d in plan.decisions if d.snapshot.id == sid)
    return DECISION.validate_python(decision_record(plan, found))


# ---- the policy language -------------------------------------------------------------------


def test_plain_ids_still_load_as_plain_ids_and_keep_their_reason() -> None:
    """A list of plain ids gives the engine the same ids as before, and a listed snapshot is
    kept with the same words and no hold."""
    (loaded,) = policies("name: p\nprotect:\n  ids: [a, b, a]\n")

    spec = loaded.policy.protect_spec()
    match = evaluate([Item("a", NOW - DAY)], spec, NOW).reasons["a"].matches[0]

    assert spec.ids == frozenset({"a", "b"})
    assert (match.rule, match.text, match.record) == ("ids", "listed by id", None)


def test_a_record_becomes_hold_record_terms_that_end_after_its_day_in_utc() -> None:
    """A record's day means to the end of that day, UTC; a timestamp ends at that instant
    (an offset is converted to UTC); the plain id stays a plain id."""
    (loaded,) = policies()

    assert loaded.policy.protect_spec().ids == frozenset(
        {
            "plain0",
            HoldRecordTerms(
                "audit1",
                "restore rehearsal for the Q4 audit",
                "OPS-1234",
                "2026-11-30",
                datetime(2026, 12, 1, tzinfo=UTC),
            ),
            HoldRecordTerms(
                "done2",
                "incident review",
                None,
                "2026-11-01T18:00:00Z",
                datetime(2026, 11, 1, 18, tzinfo=UTC),
            ),
        }
    )
    (other,) = policies(
        "name: p\nprotect:\n  ids:\n    - {id: x, reason: r, until: '2027-01-31T18:00:00+02:00'}\n"
    )
    (record,) = other.policy.protect_spec().ids
    assert isinstance(record, HoldRecordTerms)
    assert (record.until, record.ends) == (
        "2027-01-31T16:00:00Z",
        datetime(2027, 1, 31, 16, tzinfo=UTC),
    )


def test_bad_records_are_reported_with_file_line_and_field() -> None:
    """A record without an id or a reason, with an unknown key, a bad until, an until without
    a zone, or a number for a ticket: each is one problem at its line, under its field."""
    found = problems(
        "name: p\n"
        "protect:\n"
        "  ids:\n"
        "    - reason: no id\n"
        "    - id: a\n"
        "      reason: r\n"
        "      untill: 2027-01-01\n"
        "    - {id: b, reason: r, until: soon}\n"
        "    - {id: c, reason: r, until: '2027-01-31 18:00'}\n"
        "    - {id: d, until: 2027-01-31}\n"
        "    - {id: e, reason: r, ticket: 1234}\n"
    )

    assert found == [
        "policies/holds.yaml:4: protect.ids[0].id: required",
        "policies/holds.yaml:7: protect.ids[1].untill: unknown field; did you mean 'until'?",
        "policies/holds.yaml:8: protect.ids[2].until: 'soon' is not a date or a timestamp: give "
        "a day such as 2027-01-31 (the hold ends when that day ends in UTC) or a UTC timestamp "
        "such as 2027-01-31T18:00:00Z",
        "policies/holds.yaml:9: protect.ids[3].until: 2027-01-31 18:00:00 has no time zone: end "
        "it with Z for UTC (2027-01-31T18:00:00Z), or give just the day",
        "policies/holds.yaml:10: protect.ids[4].reason: required",
        "policies/holds.yaml:11: protect.ids[5].ticket: must be text, not 1234 (put it in quotes "
        "to make it text)",
    ]


def test_a_plain_id_that_is_not_text_reads_as_before() -> None:
    """A number where a plain id should be is the same one problem it always was."""
    assert problems("name: p\nprotect:\n  ids: [12345]\n") == [
        "policies/holds.yaml:3: protect.ids[0]: must be text, not 12345 (put it in quotes to "
        "make it text)"
    ]


def test_the_policy_schema_takes_a_plain_id_or_a_record_that_needs_id_and_reason() -> None:
    """`retention schema policy` describes an entry of ids as a string or a closed record
    whose id and reason are required and whose until is a date or a date-time."""
    schema = policy_json_schema()
    record = schema["$defs"]["HoldRecord"]

    assert schema["$defs"]["ProtectRules"]["properties"]["ids"]["items"] == {
        "anyOf": [{"type": "string"}, {"$ref": "#/$defs/HoldRecord"}]
    }
    assert record["required"] == ["id", "reason"]
    assert record["additionalProperties"] is False
    assert list(record["properties"]) == ["id", "reason", "ticket", "until"]
    formats = [f["format"] for f in record["properties"]["until"]["anyOf"][0]["anyOf"]]
    assert formats == ["date", "date-time"]


# ---- decisions -----------------------------------------------------------------------------


def test_a_record_protects_before_its_end_with_its_reason_ticket_and_end() -> None:
    """Before 2026-11-30 ends (UTC), audit1 is protected, and its reason carries the record's
    reason, ticket and end, in words and as a structured hold."""
    plan = plan_at(NOW)

    record = decision(plan, "audit1")

    assert (record["state"], record["action"]) == ("protected", "protect")
    (reason,) = record["reasons"]
    assert describe(reason) == (
        "production: protect: listed by id: restore rehearsal for the Q4 audit "
        "(ticket OPS-1234, until 2026-11-30)"
    )
    assert reason["hold"] == {
        "reason": "restore rehearsal for the Q4 audit",
        "ticket": "OPS-1234",
        "until": "2026-11-30",
        "ends": datetime(2026, 12, 1, tzinfo=UTC),
    }


def test_a_record_protects_to_the_last_second_of_its_day_and_not_after() -> None:
    """At 23:59:59 UTC on its day audit1 is still protected; at midnight after it, it is
    not: no rule keeps it, so it is shortened, and its reasons say the hold ended."""
    before = plan_at(datetime(2026, 11, 30, 23, 59, 59, tzinfo=UTC))
    after = plan_at(datetime(2026, 12, 1, tzinfo=UTC))

    assert decision(before, "audit1")["state"] == "protected"
    ended = decision(after, "audit1")
    assert (ended["state"], ended["action"]) == ("unkept", "shorten")
    assert [describe(r) for r in ended["reasons"]] == [
        "production: protect: hold ended 2026-11-30: restore rehearsal for the Q4 audit "
        "(ticket OPS-1234)",
        "no keep rule matches",
    ]
    assert ended["reasons"][0]["rule"] == "hold-ended"


def test_plain_ids_decide_exactly_as_before_whatever_the_time() -> None:
    """plain0, a plain id, is protected with the reason it always had, now and in ten years."""
    without_expiry = [msgspec.structs.replace(s, expires=None) for s in SNAPSHOTS]
    for now in (NOW, NOW + 3650 * DAY):
        record = decision(plan_at(now, without_expiry), "plain0")

        assert (record["state"], record["action"]) == ("protected", "protect")
        assert record["reasons"] == [
            {
                "policy": "production",
                "rule": "ids",
                "counter": None,
                "of": None,
                "horizon": None,
                "text": "protect: listed by id",
            }
        ]


def test_an_ended_hold_leaves_the_do_not_delete_it_gave_unless_release_protection() -> None:
    """done2 already has doNotDelete and its hold ended: left as a manual hold by default,
    released with the grace under release_protection: true; both say the hold ended."""
    held = [*SNAPSHOTS[:3], snapshot("done2", 30, held=True)]

    kept = decision(plan_at(NOW, held), "done2")
    released = decision(plan_at(NOW, held, release=True), "done2")

    assert (kept["state"], kept["action"], kept["body"]) == ("manual-hold", "none", None)
    assert (released["state"], released["action"]) == ("unkept", "release")
    assert released["body"] == {"doNotDelete": False, "expires": NOW + DAY}
    for record in (kept, released):
        first = record["reasons"][0]
        assert first["text"] == "protect: hold ended 2026-11-01T18:00:00Z: incident review"


def test_any_entry_in_force_protects_an_id_listed_twice() -> None:
    """The same id as an ended record and a record without end: still protected, by the
    record in force."""
    text = (
        "name: p\nprotect:\n  ids:\n"
        "    - {id: x, reason: old, until: 2026-01-01}\n"
        "    - {id: x, reason: still needed}\n"
    )
    (loaded,) = policies(text)

    reason = evaluate([Item("x", NOW - DAY)], loaded.policy.protect_spec(), NOW).reasons["x"]

    assert reason.texts == ["listed by id: still needed"]


def test_the_trace_says_a_record_keeps_or_that_it_ended() -> None:
    """explain's trace: a record in force keeps its snapshot in its words; after its end the
    ids rule passes it by and says the hold ended."""
    (loaded,) = policies()
    spec: KeepSpec = loaded.policy.protect_spec()
    items = [Item("audit1", NOW - DAY)]

    (kept,) = trace(items, spec, NOW, UTC, "audit1")
    (gone,) = trace(items, spec, datetime(2026, 12, 2, tzinfo=UTC), UTC, "audit1")

    assert (kept.kept, kept.text) == (
        True,
        "ids: restore rehearsal for the Q4 audit (ticket OPS-1234, until 2026-11-30)",
    )
    assert (gone.kept, gone.text) == (
        False,
        "ids: hold ended 2026-11-30: restore rehearsal for the Q4 audit (ticket OPS-1234)",
    )


# ---- the plan file, the summary and the report ---------------------------------------------


def write_plan(folder: Path, plan: ClusterDecisions) -> Path:
    """plan.json and its decisions (decisions.jsonl.zst) for one cluster, as the planner
    writes them."""
    folder.mkdir(parents=True, exist_ok=True)
    plan_path = folder / "plan.json"
    with decisions_path(plan_path).open("wb") as out, plan_path.open("wb") as f:
        builder = PlanBuilder(NOW, NOW, "https://om.test/api/public/v1.0", [], out)
        builder.policies.append(PolicyDigest("production", "ab" * 32))
        builder.add(described(plan, NOW))
        builder.write(f)
    return plan_path


def test_the_plan_lists_every_hold_record_with_its_cluster_and_whether_it_is_in_force(
    tmp_path: Path,
) -> None:
    """plan.json's holdRecords has each record (not the plain id) with its file and line,
    end, in force or not, and the cluster and state of its snapshot."""
    head = open_plan(write_plan(tmp_path, plan_at(NOW))).head

    records = head["holdRecords"]

    assert [(r["snapshotId"], r["inForce"], r["state"]) for r in records] == [
        ("audit1", True, "protected"),
        ("done2", False, "unkept"),
    ]
    assert records[0] == {
        "policy": "production",
        "snapshotId": "audit1",
        "reason": "restore rehearsal for the Q4 audit",
        "ticket": "OPS-1234",
        "until": "2026-11-30",
        "ends": datetime(2026, 12, 1, tzinfo=UTC),
        "inForce": True,
        "setting": "policies/holds.yaml:9",
        "projectId": P,
        "clusterId": TARGET.cluster_id,
        "clusterName": "prod-small",
        "state": "protected",
    }


def test_a_plan_without_hold_records_has_no_hold_records_key(tmp_path: Path) -> None:
    """Plain ids make no hold records, and plan.json then has no holdRecords at all."""
    (loaded,) = policies("name: production\nprotect:\n  ids: [plain0]\n")
    plan = decide(ClusterView(TARGET, SNAPSHOTS), [loaded], now=NOW, lease_for=7 * DAY)

    path = write_plan(tmp_path, plan)

    assert "holdRecords" not in json.loads(path.read_text())
    assert "holdRecords" not in open_plan(path).head


def test_the_summary_counts_hold_records_and_names_the_ended_ones(tmp_path: Path) -> None:
    """The terminal summary says how many records there are and how many ended, and names
    each ended one with its file and line."""
    plan = open_plan(write_plan(tmp_path, plan_at(NOW)))

    lines = summary_lines(plan.head, plan.read_clusters(), plan_path=plan.path)

    assert "Hold records (protect: ids): 2 hold records, 1 ended." in lines
    assert (
        "  ended production: snapshot done2 until 2026-11-01T18:00:00Z (incident review) "
        "[set at policies/holds.yaml:13]"
    ) in lines


def test_the_reports_list_each_hold_record_with_reason_ticket_until_and_status(
    tmp_path: Path,
) -> None:
    """report.html has a hold-records section with every record's policy, snapshot, reason,
    ticket, end and status, and a banner for the ended one; report.md has the same rows."""
    write_plan(tmp_path, plan_at(NOW))

    render_reports(tmp_path, RunInfo("1a2b3c4d", "dry-run", NOW, NOW, 0, "0"))

    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    section = html[html.index('<section id="hold-records">') :]
    section = section[: section.index("</section>")]
    assert section.count("<tr>") == 3  # the header and two records
    ended, in_force = section.split("<tr>")[2:]
    for text in ("ended", "production", "done2", "incident review", "2026-11-01 18:00"):
        assert text in ended
    for text in ("in force", "audit1", "restore rehearsal for the Q4 audit", "OPS-1234"):
        assert text in in_force
    assert '2026-11-30 <span class="muted">(the whole day)</span>' in in_force
    assert "1 hold record of protect: ids has ended" in html
    markdown = (tmp_path / "report.md").read_text(encoding="utf-8").splitlines()
    assert (
        "| **ended** | production | done2 | incident review | - | 2026-11-01T18:00:00Z |"
        in markdown
    )
    assert (
        "| in force | production | audit1 | restore rehearsal for the Q4 audit | OPS-1234 "
        "| 2026-11-30 |" in markdown
    )


# ---- the command line ----------------------------------------------------------------------

CLI_POLICY = """\
name: production
match:
  clusters: ["prod-big"]
keep:
  last: 2
protect:
  ids:
    - id: big0100
      reason: restore rehearsal
      ticket: OPS-1234
      until: 2026-12-31
    - id: big0200
      reason: incident review
      until: 2026-11-01
safety:
  max_expire_fraction: 1.0
"""


def cli_plan(folder: Path, sim: Simulator) -> Path:
    """A retention.yaml and policies/production.yaml with two hold records (one ended by
    2026-11-21), and a what-if plan at 2026-11-21T12:00:00Z."""
    (folder / "policies").mkdir(exist_ok=True)
    (folder / "policies" / "production.yaml").write_text(CLI_POLICY)
    (folder / "retention.yaml").write_text(
        f'api:\n  base_url: {sim.base_url}\ntargets:\n  - project: "{P}"\npolicies: policies/\n'
    )
    plan = folder / "plan.json"
    assert (
        cli.main(["plan", "--out", str(plan), "--at", "2026-11-21T12:00:00Z"], clock=sim.clock.now)
        == 0
    )
    return plan


def test_explain_shows_the_record_of_a_protected_snapshot(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """explain names the record behind a protected snapshot (file:line, reason, ticket, end,
    in force) and the ids rule that keeps it in the record's words; JSON has the same."""
    plan = cli_plan(folder, sim)
    capsys.readouterr()

    assert cli.main(["explain", "big0100", "--plan", str(plan)], clock=sim.clock.now) == 0
    lines = capsys.readouterr().out.splitlines()
    assert (
        cli.main(
            ["explain", "big0100", "--plan", str(plan), "--format", "json"], clock=sim.clock.now
        )
        == 0
    )
    document = json.loads(capsys.readouterr().out)

    assert "  decision:  protected; action: protect" in lines
    assert (
        f"    - production ({folder / 'policies' / 'production.yaml'}:8): restore rehearsal; "
        "ticket OPS-1234; until 2026-12-31 (ends 2027-01-01T00:00:00Z); in force"
    ) in lines
    assert "    protect  ids: restore rehearsal (ticket OPS-1234, until 2026-12-31)" in lines
    (record,) = document["holdRecords"]
    assert (record["reason"], record["ticket"], record["until"]) == (
        "restore rehearsal",
        "OPS-1234",
        "2026-12-31",
    )
    (rule,) = [r for r in document["policies"][0]["rules"] if r["rule"] == "ids"]
    assert rule["hold"] == {
        "reason": "restore rehearsal",
        "ticket": "OPS-1234",
        "until": "2026-12-31",
        "ends": "2027-01-01T00:00:00Z",
        "inForce": True,
    }


def test_explain_says_a_formerly_protected_snapshots_hold_ended(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """For big0200, whose record ended on 2026-11-01, explain shows the record as ended and
    the ids rule passing it by because the hold ended."""
    plan = cli_plan(folder, sim)
    capsys.readouterr()

    assert cli.main(["explain", "big0200", "--plan", str(plan)], clock=sim.clock.now) == 0
    lines = capsys.readouterr().out.splitlines()

    assert "  decision:  unkept; action: shorten" in lines
    assert (
        f"    - production ({folder / 'policies' / 'production.yaml'}:12): incident review; "
        "until 2026-11-01 (ends 2026-11-02T00:00:00Z); ENDED: protects no more"
    ) in lines
    assert "    protect  ids: passed by: hold ended 2026-11-01: incident review" in lines


def test_validate_warns_about_an_ended_hold_with_file_and_line_and_exits_0(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """validate lists the policy, warns on stderr about the record whose end has passed,
    naming its file, line and field, and keeps exit code 0; JSON carries the warning."""
    (folder / "policies").mkdir()
    (folder / "policies" / "production.yaml").write_text(CLI_POLICY)

    code = cli.main(["validate", "--policies", "policies"])
    out, err = capsys.readouterr()
    json_code = cli.main(["validate", "--policies", "policies", "--format", "json"])
    document = json.loads(capsys.readouterr().out)

    assert (code, json_code) == (0, 0)
    assert "1 policy is valid:" in out
    warning = (
        "policies/production.yaml:14: protect.ids[1].until: the hold on snapshot big0200 ended "
        "2026-11-01 (incident review) and protects it no more; remove the entry, or set a "
        "later until if the hold still stands"
    )
    assert f"warning: {warning}" in err
    assert warning in document["warnings"]


def test_hold_record_warnings_name_records_that_ended_or_end_within_seven_days() -> None:
    """At 2026-11-25 audit1 (held through 2026-11-30) ends within 7 days and done2 has
    ended; on 2026-10-01 neither is worth a word."""
    loaded = policies()

    soon = hold_record_warnings(loaded, datetime(2026, 11, 25, tzinfo=UTC))
    early = hold_record_warnings(loaded, datetime(2026, 10, 1, tzinfo=UTC))

    assert soon == [
        "policies/holds.yaml:12: protect.ids[1].until: the hold on snapshot audit1 ends "
        "2026-11-30, within 7 days (restore rehearsal for the Q4 audit; ticket OPS-1234); set a "
        "later until if it must stay",
        "policies/holds.yaml:15: protect.ids[2].until: the hold on snapshot done2 ended "
        "2026-11-01T18:00:00Z (incident review) and protects it no more; remove the entry, or "
        "set a later until if the hold still stands",
    ]
    assert early == []
