"""The plan file module: what it writes (plan.json's head on one line, the decisions
compressed beside it), what it reads back (v2, and v1 plans in any layout), the schema
generated from its model, and names from the API that must survive any trip through the
files."""

from __future__ import annotations

import hashlib
import io
import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import jsonschema
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from retention.core.decide import decide
from retention.core.model import (
    ClusterDecisions,
    ClusterPlan,
    ClusterView,
    Decision,
    SnapshotView,
    Target,
    note,
)
from retention.core.planfile import (
    HEAD,
    LISTS,
    generated_schema,
)
from retention.core.policy.spec import KeepSpec
from retention.core.snapshot import SnapshotPatch
from retention.core.timestamps import format_timestamp
from retention.core.wording import size
from retention.errors import PlanFileError
from retention.report.lines import summary_lines
from retention.runfolder.folder import decisions_path
from retention.runfolder.planread import open_plan, read_decisions
from retention.runfolder.planrecords import decision_record
from retention.runfolder.planwrite import (
    PlanBuilder,
    compress,
    encode_line,
    jsonable,
    pretty_json,
    write_plan,
)
from retention.runfolder.schema import plan_json_schema
from tests.support.planfiles import decision_lines, write_plan_files
from tests.support.planning import described, loaded_policy, renamed

# A plan of format v1 (plan.json with its lists, plain decisions.jsonl), as the version
# before wrote the first_run_held_by_safety_gates scenario: this version refuses it by name.
GOLDEN = Path(__file__).parent / "fixtures" / "plan-v1" / "plan.json"
NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
HOSTILE_NAMES = [
    "@@changes@@",
    '"quoted", with \\ a backslash',
    "two\nlines\r\nand a\ttab",
    "</script><script>alert(1)</script>",
    '  "changes": [',
    "ünïcödé 名前 🗄️ " * 400,  # about 10 kB of UTF-8
]


def written(folder: Path, clusters: list[ClusterPlan], errors: list[str] | None = None) -> Path:
    """plan.json and its decisions as the planner writes them, from ``clusters``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "plan.json"
    with decisions_path(path).open("wb") as out:
        builder = PlanBuilder(NOW, NOW, "https://om.test/api/public/v1.0", [], out)
        for plan in clusters:
            builder.add(plan)
    with path.open("wb") as plan_out:
        builder.write(plan_out, errors)
    return path


def test_the_shipped_schema_is_the_one_generated_from_the_model() -> None:
    """plan.schema.json is generated from the typed model: regenerate it with
    `python -m retention.runfolder.schema` when the model changes."""
    assert plan_json_schema() == json.loads(json.dumps(generated_schema()))


def test_plan_json_is_the_head_on_one_line_naming_its_decisions(tmp_path: Path) -> None:
    """plan.json is compact, without the lists: the head on its first line, then a line for
    each cluster entry and a closing line; it names the decisions file beside it by sha256
    and count, and that file holds one record per snapshot, a change being a record with a
    body."""
    path = written(tmp_path, [hostile_plan("prod", "c1"), hostile_plan("dev", "c2")])
    text = path.read_bytes()
    decisions = decisions_path(path)

    first, *entries, last = text.decode().splitlines()
    assert first.endswith(',"clusters":[')
    assert [json.loads(e.removesuffix(","))["name"] for e in entries] == ["prod", "dev"]
    assert last == "]}"
    assert text.endswith(b"\n")
    head = json.loads(text)
    assert list(head)[-1] == "clusters"
    assert head["format"] == "retention-plan/v2"
    assert not set(LISTS) & set(head)
    assert decisions.name == "decisions.jsonl.zst"
    assert head["decisions"] == {
        "sha256": hashlib.sha256(decisions.read_bytes()).hexdigest(),
        "records": 6,
    }
    records = [json.loads(line) for line in decision_lines(path)]
    assert [r["snapshotId"] for r in records] == ["s1", "s2", "s3"] * 2
    assert all(r["grace"] == 86400 for r in records)
    assert [c["snapshotId"] for c in open_plan(path).read_list("changes")] == [
        r["snapshotId"] for r in records if r["body"] and not r["held"]
    ]


def test_a_plan_with_another_plans_decisions_is_refused(tmp_path: Path) -> None:
    """Decisions whose digest or count is not the one plan.json names (another plan's,
    a copy cut short) are refused by name before a change is taken from them."""
    one = written(tmp_path / "one", [hostile_plan("prod", "c1")])
    two = written(tmp_path / "two", [hostile_plan("prod", "c1"), hostile_plan("dev", "c2")])
    decisions_path(one).write_bytes(decisions_path(two).read_bytes())

    with pytest.raises(PlanFileError, match=r"not the decisions of plan\.json \(6 records"):
        list(open_plan(one).read_list("changes"))


def test_a_plan_of_format_v1_is_refused_by_its_format(tmp_path: Path) -> None:
    """A plan an older retention wrote (format v1: its lists in plan.json) is refused when
    it is opened, naming its format and what to do, compact or indented alike."""
    compact = tmp_path / "compact.json"
    compact.write_text(json.dumps(json.loads(GOLDEN.read_text())) + "\n")

    for path in (GOLDEN, compact):
        with pytest.raises(PlanFileError) as refused:
            open_plan(path)
        assert refused.value.problem == (
            "this plan is of format retention-plan/v1, written by an older retention; this "
            "version reads retention-plan/v2 plans only. Run `retention plan` again"
        )
        assert refused.value.where == str(path)


@pytest.mark.parametrize("dump", [{}, {"indent": 2}], ids=["compact", "indent2"])
def test_a_plan_saved_again_in_another_layout_is_refused(
    tmp_path: Path, dump: dict[str, Any]
) -> None:
    """A v2 plan an editor saved again (one line, or indented) is refused when opened,
    saying which layout retention reads, not read in a layout it does not stream."""
    path = written(tmp_path, [hostile_plan("prod", "c1")])
    path.write_text(json.dumps(json.loads(path.read_bytes()), **dump) + "\n")

    with pytest.raises(PlanFileError, match="not in the layout retention writes"):
        open_plan(path)


def test_a_plan_file_that_is_not_an_object_is_refused_by_name(tmp_path: Path) -> None:
    """A JSON list where a plan should be is refused with what the file holds (exit 2)."""
    path = tmp_path / "plan.json"
    path.write_text("[1, 2]\n")

    with pytest.raises(PlanFileError, match="holds a JSON list, not a plan object") as raised:
        open_plan(path)

    assert raised.value.exit_code == 2


def test_a_malformed_entry_is_refused_naming_the_entry_and_field(tmp_path: Path) -> None:
    """A change whose snapshot id is not an id (here "..") is refused with its line, its
    snapshot and the field, before anything could use it."""
    path = written(tmp_path, [hostile_plan("prod", "c1")])
    records = [json.loads(line) for line in decision_lines(path)]
    records[1]["snapshotId"] = ".."
    plan = open_plan(path)
    write_plan_files(path, {**plan.head, "clusters": list(plan.read_clusters())}, records)

    with pytest.raises(
        PlanFileError,
        match=r"decisions.jsonl.zst: line 2 \(snapshot \.\.\): snapshotId: '\.\.' is not an "
        "id a plan can carry: it is a dot segment",
    ):
        list(open_plan(path).read_list("changes"))


def test_holds_name_their_setting_and_older_plans_without_it_still_read(
    tmp_path: Path,
) -> None:
    """A hold records where its setting is written; an entry written before holds had the
    field reads the same otherwise (plans in flight survive an upgrade)."""
    path = written(tmp_path, [held_plan()])
    first, entry, *rest = path.read_bytes().split(b"\n")
    document = json.loads(entry)
    holds = document["holds"]
    assert [h["kind"] for h in holds] == ["max_expire_fraction"]
    assert holds[0]["setting"] == "test.yaml (default max_expire_fraction)"
    for hold in holds:
        del hold["setting"]
    path.write_bytes(b"\n".join([first, json.dumps(document).encode(), *rest]))

    read = [h for c in open_plan(path).read_clusters() for h in c["holds"]]
    assert [h["reason"] for h in read] == [h["reason"] for h in holds]
    assert all("setting" not in h for h in read)


def test_a_naive_timestamp_is_refused_not_guessed(tmp_path: Path) -> None:
    """A timestamp without its zone (an edit by hand) is an error, not a guess at UTC."""
    path = written(tmp_path, [hostile_plan("prod", "c1")])
    text = path.read_bytes()
    path.write_bytes(
        text.replace(
            b'"evaluatedAt":"2026-11-21T12:00:00Z"', b'"evaluatedAt":"2026-11-21T12:00:00"', 1
        )
    )

    with pytest.raises(PlanFileError, match="evaluatedAt"):
        open_plan(path)


def hostile_plan(name: str, cluster_id: str) -> ClusterPlan:
    """A cluster named ``name`` with a protect, a shorten and an untouched snapshot."""
    snapshots = [
        SnapshotView(f"s{i}", NOW - timedelta(days=i), True, False, NOW + timedelta(days=40))
        for i in range(1, 4)
    ]
    policy = renamed(
        loaded_policy(keep=KeepSpec(last=1), protect=KeepSpec(last=1), max_expire_fraction=1.0),
        name,
    )
    cluster = ClusterView(Target("p1", cluster_id, name), snapshots)
    return described(decide(cluster, [policy], now=NOW, lease_for=timedelta(days=1)), NOW)


def held_plan() -> ClusterPlan:
    """A cluster whose ten snapshots the policy would mostly expire: held by the fraction."""
    snapshots = [
        SnapshotView(f"s{i}", NOW - timedelta(days=i + 1), True, False, NOW + timedelta(days=300))
        for i in range(10)
    ]
    policy = loaded_policy(keep=KeepSpec(last=1), max_expire_fraction=0.5)
    cluster = ClusterView(Target("p1", "c1", "prod"), snapshots)
    return described(decide(cluster, [policy], now=NOW, lease_for=DAY), NOW)


def test_hostile_names_round_trip_byte_for_byte(tmp_path: Path) -> None:
    """Names from the API (placeholders, quotes, newlines, markup, 10 kB of unicode) come back
    from the file exactly, and writing what was read gives the same bytes."""
    plans = [hostile_plan(name, f"c{n:02d}") for n, name in enumerate(HOSTILE_NAMES)]
    path = written(tmp_path, plans, errors=HOSTILE_NAMES[:2])

    plan = open_plan(path)
    head = plan.head
    lists = {name: list(plan.read_list(name)) for name in ("changes", "held", "advisory")}
    again = io.BytesIO()
    write_plan(again, head, plan.read_clusters())
    records = [r for r in read_decisions(decisions_path(path)) if r is not None]

    assert [c["name"] for c in plan.read_clusters()] == HOSTILE_NAMES
    assert sorted({c["clusterName"] for c in lists["changes"]}) == sorted(HOSTILE_NAMES)
    assert {c["policy"] for c in lists["changes"]} == set(HOSTILE_NAMES)
    assert head["errors"] == HOSTILE_NAMES[:2]
    assert again.getvalue() == path.read_bytes()
    assert b"".join(encode_line(r) for r in records) == b"".join(decision_lines(path))
    jsonschema.validate(json.loads(path.read_bytes()), plan_json_schema())


@given(
    st.datetimes(
        min_value=datetime(1900, 1, 1), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
    )
)
def test_records_write_timestamps_exactly_as_format_timestamp(value: datetime) -> None:
    """A UTC datetime in a record is written as the API writes it, sub-seconds dropped."""
    assert encode_line({"t": value}) == b'{"t":"' + format_timestamp(value).encode() + b'"}\n'


def test_a_decision_in_another_zone_is_written_in_utc() -> None:
    """Datetimes in another zone (a policy's horizon, say) reach the record in UTC, so every
    timestamp in the files has the Z shape; the PATCH body is the wire form."""
    berlin = datetime(2027, 1, 1, 0, 0, 0, 500_000, tzinfo=ZoneInfo("Europe/Berlin"))
    created = datetime(2026, 11, 20, 13, 0, tzinfo=timezone(timedelta(hours=1)))
    snapshot = SnapshotView("s1", created, True, False, None)
    patch = SnapshotPatch.expire_at(berlin)
    plan = ClusterDecisions(Target("p1", "c1", "prod"))
    decision = Decision(snapshot, "kept", "extend", [note("x", "x")], ["prod"], berlin, patch)

    line = json.loads(encode_line(decision_record(plan, decision)))

    assert line["created"] == "2026-11-20T12:00:00Z"
    assert line["expiresAfter"] == "2026-12-31T23:00:00Z"
    assert line["body"] == patch.to_api() == {"expires": "2026-12-31T23:00:01Z"}
    assert line["observed"] == snapshot.observed() == {"doNotDelete": False, "expires": None}


def test_decisions_read_back_typed_and_a_cut_line_is_none(tmp_path: Path) -> None:
    """Decisions read back as typed records (timestamps as aware datetimes); a line cut
    short or edited reads as None, so a report can count it."""
    plan = hostile_plan("prod", "c1")
    compact = decisions_path(written(tmp_path, [plan]))
    assert [r["snapshotId"] for r in read_decisions(compact) if r] == ["s1", "s2", "s3"]
    path = tmp_path / "cut.decisions.jsonl.zst"
    decided = plan.decided
    lines = b"".join(encode_line(decision_record(decided, d)) for d in decided.decisions)
    path.write_bytes(compress(lines + b'{"projectId": "p1", "clu\n'))

    records = list(read_decisions(path))

    assert records[-1] is None
    assert [r["snapshotId"] for r in records[:-1] if r] == ["s1", "s2", "s3"]
    first = records[0]
    assert first is not None
    assert first["created"] == NOW - timedelta(days=1)
    assert first["created"].utcoffset() == timedelta(0)


def test_each_plan_keeps_its_own_decisions_file(tmp_path: Path) -> None:
    """plan.json's decisions are decisions.jsonl.zst, any other NAME.json's are
    NAME.decisions.jsonl.zst, so two plans in one folder never share one."""
    assert decisions_path(tmp_path / "plan.json") == tmp_path / "decisions.jsonl.zst"
    assert decisions_path(tmp_path / "past.json") == tmp_path / "past.decisions.jsonl.zst"


def test_a_held_config_server_change_is_advisory_in_counts_lists_and_summary(
    tmp_path: Path,
) -> None:
    """A config server's change that a gate also holds is counted and listed one way,
    as advisory (it is never sent), in the cluster's counts, the lists and the summary."""
    now = datetime(2026, 11, 21, tzinfo=UTC)
    snapshots = [
        SnapshotView(f"s{i}", now - timedelta(days=i + 1), True, False, now + timedelta(days=300))
        for i in range(10)
    ]
    policy = loaded_policy(keep=KeepSpec(last=1), max_expire_fraction=0.5)
    cluster = ClusterView(Target("p1", "h1", "cfg0", "config-server"), snapshots)
    decided = decide(cluster, [policy], now=now, lease_for=timedelta(days=1))
    path = written(tmp_path, [described(decided, now)])
    document = json.loads(path.read_bytes())

    assert decided.holds, "the fraction gate holds the config server's destructive changes"
    assert document["clusters"][0]["counts"]["action:advisory"] == 9
    assert "action:held" not in document["clusters"][0]["counts"]
    assert document["summary"]["byAction"] == {"advisory": 9}
    read = open_plan(path)
    assert len(list(read.read_list("advisory"))) == 9
    assert list(read.read_list("held")) == list(read.read_list("changes")) == []


def test_the_plan_says_what_it_gives_back_and_from_when(tmp_path: Path) -> None:
    """Each cluster and the summary carry the bytes the plan's destructive changes free
    (held ones apart) and the earliest time the service may delete one; the terminal
    summary says it in words."""
    snapshots = [
        SnapshotView(
            f"s{i}", NOW - timedelta(days=i), True, False, NOW + timedelta(days=40), True, 3 << 30
        )
        for i in range(1, 5)
    ]
    policy = loaded_policy(keep=KeepSpec(last=1), max_expire_fraction=1.0)
    cluster = ClusterView(Target("p1", "c1", "prod"), snapshots)
    plan = described(decide(cluster, [policy], now=NOW, lease_for=DAY), NOW)
    path = written(tmp_path, [plan])
    document = json.loads(path.read_bytes())
    read = open_plan(path)
    lines = summary_lines(read.head, read.read_clusters(), plan_path=read.path)

    assert document["clusters"][0]["bytesGivenBack"] == 3 * (3 << 30)
    assert document["summary"]["bytesGivenBack"] == 3 * (3 << 30)
    assert document["summary"]["bytesHeld"] == 0
    assert document["summary"]["expiresFrom"] == "2026-11-22T12:00:00Z"  # now + 24 h grace
    assert (
        "Deletion: 3 snapshots may be deleted by the service from 2026-11-22T12:00:00Z on, "
        "giving back 9.0 GiB." in lines
    )


@pytest.mark.parametrize(
    ("count", "text"),
    [(0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (5 << 20, "5.0 MiB"), (3 << 40, "3.0 TiB")],
)
def test_sizes_read_as_people_write_them(count: int, text: str) -> None:
    """Byte counts in binary units, one decimal."""
    assert size(count) == text


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)  # what JSON numbers in a plan can be
    | st.text()
    | st.datetimes(timezones=st.just(UTC)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=12,
)


@given(st.lists(_JSON, max_size=4), st.lists(st.text(), max_size=3))
def test_plan_json_written_member_by_member_has_the_bytes_of_one_encoding(
    clusters: list[Any], errors: list[str]
) -> None:
    """plan.json is written a member at a time, ``clusters`` last and an entry a line (it
    grows with the fleet), and holds what one encoding of the whole head holds."""
    head: dict[str, Any] = {"format": "retention-plan/v2", "errors": errors}
    streamed = io.BytesIO()
    write_plan(streamed, head, clusters)  # type: ignore[arg-type] # a head of two members

    whole = {**head, "clusters": clusters, "notices": []}
    ordered = {k: whole[k] for k in ("format", "notices", "errors", "clusters")}
    assert json.loads(streamed.getvalue()) == json.loads(encode_line(ordered))
    entries = streamed.getvalue().split(b"\n")[1:-2]
    assert [orjson.loads(e.removesuffix(b",")) for e in entries] == orjson.loads(
        encode_line({"clusters": clusters})
    )["clusters"]


def test_a_plans_clusters_are_read_from_the_file_each_time_they_are_asked_for(
    tmp_path: Path,
) -> None:
    """An opened plan's head holds plain values and no clusters; the plan reads its entries
    from the file each time they are asked for (twice, alike), as the file holds them."""
    path = written(tmp_path, [hostile_plan("prod", "c1"), hostile_plan("dev", "c2")])

    plan = open_plan(path)

    assert "clusters" not in plan.head
    assert [c["name"] for c in plan.read_clusters()] == ["prod", "dev"]
    assert list(plan.read_clusters()) == list(plan.read_clusters())
    assert (
        list(plan.read_clusters()) == json.loads(path.read_bytes())["clusters"]
        or [jsonable(c) for c in plan.read_clusters()] == json.loads(path.read_bytes())["clusters"]
    )
    assert HEAD.validate_python(plan.head) == plan.head


def test_a_malformed_cluster_entry_is_refused_naming_the_entry(tmp_path: Path) -> None:
    """A cluster entry that is not valid is refused by its place in the list and its field
    when the clusters are read."""
    path = written(tmp_path, [hostile_plan("prod", "c1"), hostile_plan("dev", "c2")])
    lines = path.read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b'"bytesHeld":0', b'"bytesHeld":"none"')
    path.write_bytes(b"\n".join(lines))

    plan = open_plan(path)

    with pytest.raises(PlanFileError, match=r"clusters\[1\]: bytesHeld: Input should be"):
        list(plan.read_clusters())


def test_a_plan_cut_short_in_its_clusters_is_refused(tmp_path: Path) -> None:
    """A plan.json cut after its first cluster entry (a disk that filled) is not read as a
    plan with one cluster: it is refused when opened, as cut short."""
    path = written(tmp_path, [hostile_plan("prod", "c1"), hostile_plan("dev", "c2")])
    text = path.read_bytes()
    path.write_bytes(text[: text.index(b"\n", text.index(b"\n") + 1) + 1])

    with pytest.raises(PlanFileError, match=r"clusters: cut short \(the file has no end\)"):
        open_plan(path)


def test_a_plan_written_over_after_its_head_was_read_is_refused_not_mixed(
    tmp_path: Path,
) -> None:
    """A head's clusters are read from its file when iterated: once another plan has
    replaced that file, they are refused, never the other plan's clusters under this head."""
    path = written(tmp_path / "a", [hostile_plan("prod", "c1"), hostile_plan("dev", "c2")])
    plan = open_plan(path)
    other = written(tmp_path / "b", [hostile_plan("stage", "c3")])
    other.replace(path)

    with pytest.raises(PlanFileError, match="changed since its head was read"):
        list(plan.read_clusters())


def test_a_cluster_entry_spread_over_lines_is_refused_naming_the_layout(tmp_path: Path) -> None:
    """An entry an editor spread over several lines (the file still JSON) is refused by its
    place, saying that plan.json holds an entry a line."""
    path = written(tmp_path, [hostile_plan("prod", "c1"), hostile_plan("dev", "c2")])
    first, prod, dev, end, _ = path.read_bytes().split(b"\n")
    spread = json.dumps(json.loads(prod.removesuffix(b",")), indent=1).encode()
    path.write_bytes(b"\n".join([first, spread + b",", dev, end, b""]))

    plan = open_plan(path)

    with pytest.raises(PlanFileError, match=r"clusters\[0\]: not one whole entry on its line"):
        list(plan.read_clusters())


def test_lines_after_the_end_of_the_clusters_are_refused(tmp_path: Path) -> None:
    """An entry after a line that closes the clusters (an edit that pasted two lists) is
    refused, not dropped."""
    path = written(tmp_path, [hostile_plan("prod", "c1"), hostile_plan("dev", "c2")])
    first, prod, dev, end, _ = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join([first, prod.removesuffix(b","), end, dev, end, b""]))

    plan = open_plan(path)

    with pytest.raises(PlanFileError, match="clusters: lines after the end of the list"):
        list(plan.read_clusters())


_PLAIN = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)


@given(st.lists(_PLAIN, max_size=4), st.dictionaries(st.text(), _PLAIN, max_size=3), st.booleans())
def test_json_output_streams_a_heads_clusters_in_the_bytes_of_a_list(
    entries: list[Any], members: dict[str, Any], nested: bool
) -> None:
    """--format json writes a plan's clusters as they are read (an iterator) an entry at a
    time, in exactly the bytes the same entries as a list give, at the top of the document
    or nested in it."""

    def document(clusters: object) -> dict[str, Any]:
        inner = {"clusters": clusters, "at": NOW, **members}
        return {"command": "plan", "plan": inner} if nested else inner

    expected = orjson.dumps(jsonable(document(entries)), option=orjson.OPT_INDENT_2)

    assert b"".join(pretty_json(document(iter(entries)))) == expected


def test_a_head_line_that_is_not_json_is_refused_by_every_reader(tmp_path: Path) -> None:
    """A plan.json laid out as retention writes it but whose head line is not JSON is
    refused by name when it is opened, before any of its parts is read."""
    path = tmp_path / "plan.json"
    path.write_bytes(b'{"format":"retention-plan/v2",oops,"clusters":[\n]}\n')

    with pytest.raises(PlanFileError, match="not a plan file \\(not JSON"):
        open_plan(path)
