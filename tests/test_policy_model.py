"""The policy models: defaults, conversion to KeepSpec, validation, describe(), JSON Schema."""

from __future__ import annotations

import json
import re
import zoneinfo
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from retention.core.policy import spec
from retention.core.policy.duration import RetentionDuration
from retention.core.policy.every import EveryRule
from retention.core.policy.model import (
    DEFAULT_HOLD_ON_ALERTS,
    DURATION_PATTERN,
    EMPTY_POLICY,
    KeepRules,
    Policy,
    ProtectRules,
    Safety,
    Selector,
    policy_json_schema,
)

EXAMPLES = Path(__file__).resolve().parent.parent / "policies"
COUNTS = ("last", "hourly", "daily", "weekly", "monthly", "yearly")
WINDOWS = ("within_hourly", "within_daily", "within_weekly", "within_monthly", "within_yearly")

# The `production` example of docs/policies.md (most of its keys), as YAML gives it to the models.
PRODUCTION_EXAMPLE: dict[str, Any] = {
    "name": "production",
    "description": "Production clusters, GFS with 7 yearly holds",
    "match": {
        "projects": ["5e2211c17a3e5a48f5497de3"],
        "clusters": ["prod-*"],
        "kinds": ["cluster", "config-server"],
    },
    "timezone": "Europe/Berlin",
    "keep": {
        "last": 3,
        "hourly": 24,
        "daily": 7,
        "weekly": 5,
        "monthly": 12,
        "yearly": 3,
        "within": "2d",
        "within_daily": "30d",
        "every": [{"cron": "0 0 1 1,4,7,10 *", "count": 8}],
    },
    "protect": {"yearly": 7, "ids": ["5e4e593f70dfbf1e2f6e1d36"]},
    "release_protection": False,
    "grace": "24h",
    "inconsistent": "ignore",
    "safety": {
        "min_keep": 2,
        "max_expire_fraction": 0.5,
        "hold_on_alerts": [
            "BAD_CLUSTERSHOTS",
            "RESYNC_REQUIRED",
            "OPLOG_BEHIND",
            "INCONSISTENT_BACKUP_CONFIGURATION",
        ],
    },
}


def policy(**fields: Any) -> Policy:
    """A valid minimal policy (keep daily 7) with ``fields`` replacing or adding keys."""
    document: dict[str, Any] = {"name": "p", "keep": {"daily": 7}}
    document.update(fields)
    return Policy.model_validate(document)


def errors(document: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str]]:
    """The (location, message) pairs pydantic reports for a policy document."""
    with pytest.raises(ValidationError) as caught:
        Policy.model_validate(document)
    return [
        (
            tuple(e["loc"]),
            str(e["ctx"]["error"]) if "ctx" in e and "error" in e["ctx"] else e["type"],
        )
        for e in caught.value.errors()
    ]


def test_defaults_are_those_of_the_design() -> None:
    """Omitted keys take the defaults of docs/policies.md: UTC, 24h grace, ignore, min_keep 1,
    fraction 0.5."""
    p = policy()
    assert p.timezone == "UTC"
    assert p.zone == zoneinfo.ZoneInfo("UTC")
    assert p.grace == RetentionDuration(hours=24)
    assert p.release_protection is False
    assert p.inconsistent == "ignore"
    assert p.description is None
    assert p.protect is None
    assert p.match == Selector(projects=None, clusters=None, kinds=None)
    assert p.safety == Safety(min_keep=1, max_expire_fraction=0.5, hold_on_alerts=[
        "BAD_CLUSTERSHOTS", "RESYNC_REQUIRED", "OPLOG_BEHIND", "INCONSISTENT_BACKUP_CONFIGURATION",
    ])  # fmt: skip
    assert list(DEFAULT_HOLD_ON_ALERTS) == p.safety.hold_on_alerts


def test_keep_rules_default_to_nothing() -> None:
    """Every count defaults to 0, every window to None, every to no rule: an empty rule set."""
    rules = KeepRules()
    assert [getattr(rules, name) for name in COUNTS] == [0] * 6
    assert [getattr(rules, name) for name in ("within", *WINDOWS)] == [None] * 6
    assert rules.every == []
    assert rules.is_empty
    assert rules.to_spec() == spec.KeepSpec()


def test_design_example_converts_to_the_engine_spec() -> None:
    """The docs' example turns into exactly the KeepSpec and protect spec the engine needs."""
    p = Policy.model_validate(PRODUCTION_EXAMPLE)
    assert p.keep is not None
    assert p.keep.to_spec() == spec.KeepSpec(
        last=3,
        hourly=24,
        daily=7,
        weekly=5,
        monthly=12,
        yearly=3,
        within=RetentionDuration(days=2),
        within_daily=RetentionDuration(days=30),
        every=(EveryRule("0 0 1 1,4,7,10 *", 8),),
    )
    assert p.keep_spec() == p.keep.to_spec()
    assert p.protect_spec() == spec.KeepSpec(yearly=7, ids=frozenset({"5e4e593f70dfbf1e2f6e1d36"}))
    assert p.zone == zoneinfo.ZoneInfo("Europe/Berlin")
    assert p.safety.min_keep == 2


def test_every_window_field_reaches_the_spec() -> None:
    """Each within_* duration lands in the KeepSpec field of the same name."""
    keep = KeepRules.model_validate({name: f"{i + 1}d" for i, name in enumerate(WINDOWS)})
    spec = keep.to_spec()
    assert [getattr(spec, name) for name in WINDOWS] == [
        RetentionDuration(days=n) for n in range(1, 6)
    ]


def test_policy_without_protect_has_an_empty_protect_spec() -> None:
    """A policy that protects nothing hands the engine an empty protect spec."""
    assert policy().protect_spec() == spec.KeepSpec()
    assert policy().protect_spec().empty


def test_protect_rules_carry_ids() -> None:
    """ProtectRules.to_spec keeps the count rules and adds the ids as a frozenset."""
    rules = ProtectRules.model_validate({"monthly": 2, "ids": ["a", "b", "a"]})
    assert rules.to_spec() == spec.KeepSpec(monthly=2, ids=frozenset({"a", "b"}))
    assert not ProtectRules(ids=["a"]).is_empty


@pytest.mark.parametrize("field", COUNTS)
def test_minus_one_is_unlimited(field: str) -> None:
    """-1 (unlimited) is accepted for every count rule and passed to the engine as -1."""
    spec = KeepRules.model_validate({field: -1}).to_spec()
    assert getattr(spec, field) == -1


@pytest.mark.parametrize("field", COUNTS)
def test_minus_two_is_refused(field: str) -> None:
    """A count below -1 is refused with a plain message."""
    assert errors({"name": "p", "keep": {field: -2}}) == [
        (("keep", field), "must be -1 (unlimited) or a number >= 0")
    ]


@pytest.mark.parametrize("value", [True, "7", 7.0])
def test_counts_must_be_yaml_integers(value: object) -> None:
    """A count given as a boolean, a string or a float is refused, not coerced."""
    assert errors({"name": "p", "keep": {"daily": value}}) == [(("keep", "daily"), "int_type")]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2d", RetentionDuration(days=2)),
        ("1y6m", RetentionDuration(years=1, months=6)),
        ("36h", RetentionDuration(hours=36)),
        ("1y2m3d4h", RetentionDuration(1, 2, 3, 4)),
        ("0h", RetentionDuration()),
    ],
)
def test_valid_durations_parse_and_serialise_back(text: str, expected: RetentionDuration) -> None:
    """Duration strings in restic units parse to RetentionDuration and dump back as text."""
    p = policy(keep={"within": text}, grace=text) if text != "0h" else policy(grace=text)
    assert p.grace == expected
    dumped = p.model_dump(mode="json")
    assert dumped["grace"] == str(expected)
    if text != "0h":
        assert p.keep is not None
        assert p.keep.within == expected
        assert dumped["keep"]["within"] == text


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "7x",
            "'7x' is not a duration: use numbers with y (years), m (months), d (days), "
            "h (hours), e.g. 36h, 7d, 1y6m",
        ),
        ("1d1d", "'1d1d': the unit 'd' appears twice"),
        (24, "24 is not a duration: give a number with a unit, e.g. 24h, 7d or 1y6m"),
        (None, "null is not a duration: give a number with a unit, e.g. 24h, 7d or 1y6m"),
    ],
)
def test_invalid_durations_are_refused(value: object, message: str) -> None:
    """A grace that is not a restic duration is refused with a message naming the value."""
    assert errors({"name": "p", "keep": {"daily": 1}, "grace": value}) == [(("grace",), message)]


def test_every_rule_with_valid_cron() -> None:
    """A five-field cron expression is accepted, its spacing normalised; count -1 is unlimited."""
    keep = KeepRules.model_validate({"every": [{"cron": " 0  0 1 1,4,7,10 * ", "count": -1}]})
    assert keep.to_spec().every == (EveryRule("0 0 1 1,4,7,10 *", -1),)


@pytest.mark.parametrize(
    ("cron", "message"),
    [
        (
            "0 0 * *",
            "'0 0 * *' is not a valid cron expression (5 fields: minute hour day month weekday)",
        ),
        (
            "0 0 * * * *",
            "'0 0 * * * *' is not a valid cron expression (5 fields: minute hour day month "
            "weekday)",
        ),
        (
            "61 * * * *",
            "'61 * * * *' is not a valid cron expression (5 fields: minute hour day month weekday)",
        ),
        ("0 0 31 2 *", "'0 0 31 2 *' never fires (no such date)"),
    ],
)
def test_invalid_cron_is_refused(cron: str, message: str) -> None:
    """A cron expression croniter rejects, of the wrong field count or never firing is refused."""
    document = {"name": "p", "keep": {"every": [{"cron": cron, "count": 4}]}}
    assert errors(document) == [(("keep", "every", 0, "cron"), message)]


@pytest.mark.parametrize("count", [0, -2])
def test_every_count_must_be_positive_or_unlimited(count: int) -> None:
    """An every rule's count of 0 or below -1 is refused."""
    document = {"name": "p", "keep": {"every": [{"cron": "0 0 * * *", "count": count}]}}
    assert errors(document) == [
        (("keep", "every", 0, "count"), "must be -1 (unlimited) or a number >= 1")
    ]


def test_valid_time_zone_resolves() -> None:
    """A known IANA zone is accepted and resolved through zoneinfo."""
    assert policy(timezone="America/New_York").zone == zoneinfo.ZoneInfo("America/New_York")


@pytest.mark.parametrize(
    ("zone", "message"),
    [
        ("Europe/Berln", "unknown time zone 'Europe/Berln'; did you mean 'Europe/Berlin'?"),
        ("europe/berlin", "unknown time zone 'europe/berlin'; did you mean 'Europe/Berlin'?"),
        ("../../etc/passwd", "unknown time zone '../../etc/passwd' (e.g. 'Europe/Berlin')"),
        ("", "unknown time zone '' (e.g. 'Europe/Berlin')"),
    ],
)
def test_unknown_time_zone_is_refused_with_suggestion(zone: str, message: str) -> None:
    """An unknown zone is refused, with the closest known zone suggested when there is one."""
    assert errors({"name": "p", "keep": {"daily": 1}, "timezone": zone}) == [
        (("timezone",), message)
    ]


def test_zone_directory_is_refused_as_unknown() -> None:
    """A zone directory such as 'Europe' (an OSError inside zoneinfo) is a plain field error."""
    [(loc, message)] = errors({"name": "p", "keep": {"daily": 1}, "timezone": "Europe"})
    assert loc == ("timezone",)
    assert message.startswith("unknown time zone 'Europe'")


@pytest.mark.parametrize(
    "document",
    [
        {"name": "p"},
        {"name": "p", "keep": {}, "protect": {}},
        {"name": "p", "keep": {"daily": 0, "within": "0h"}, "protect": {"ids": []}},
    ],
)
def test_empty_policy_is_refused(document: dict[str, Any]) -> None:
    """A policy with no keep and no protect rule (or only zero rules) is refused."""
    assert errors(document) == [((), EMPTY_POLICY)]


def test_protect_only_policy_is_accepted() -> None:
    """A policy that only protects is not empty."""
    p = Policy.model_validate({"name": "p", "protect": {"yearly": 7}})
    assert p.keep_spec().empty
    assert p.protect_spec() == spec.KeepSpec(yearly=7)


@pytest.mark.parametrize(
    ("document", "loc"),
    [
        ({"name": "p", "keep": {"daily": 1}, "keeep": {}}, ("keeep",)),
        ({"name": "p", "keep": {"dayly": 1}}, ("keep", "dayly")),
        ({"name": "p", "keep": {"daily": 1}, "match": {"cluster": ["x"]}}, ("match", "cluster")),
        ({"name": "p", "keep": {"daily": 1}, "safety": {"minkeep": 1}}, ("safety", "minkeep")),
        ({"name": "p", "protect": {"yearly": 1, "id": ["x"]}}, ("protect", "id")),
        (
            {"name": "p", "keep": {"every": [{"cron": "0 0 * * *", "count": 1, "n": 1}]}},
            ("keep", "every", 0, "n"),
        ),
    ],
)
def test_unknown_keys_are_errors_at_every_level(document: dict[str, Any], loc: tuple[str]) -> None:
    """Every model forbids unknown keys, so a misspelt rule is never silently ignored."""
    assert errors(document) == [(loc, "extra_forbidden")]


def test_models_are_frozen() -> None:
    """A loaded policy cannot be changed afterwards."""
    p = policy()
    with pytest.raises(ValidationError):
        p.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize("name", ["", "prod orders", "prod/x", "prod:x"])
def test_policy_name_must_be_simple(name: str) -> None:
    """A name outside [A-Za-z0-9_.-]+ is refused."""
    assert errors({"name": name, "keep": {"daily": 1}}) == [
        (
            ("name",),
            f"{name!r} is not a valid policy name: use letters, digits, '_', '.' and '-' only",
        )
    ]


def test_safety_bounds() -> None:
    """min_keep below 0 and max_expire_fraction outside [0, 1] are refused."""
    document = {"name": "p", "keep": {"daily": 1}}
    bad = {**document, "safety": {"min_keep": -1, "max_expire_fraction": 1.5}}
    assert errors(bad) == [
        (("safety", "min_keep"), "greater_than_equal"),
        (("safety", "max_expire_fraction"), "less_than_equal"),
    ]
    ok = Policy.model_validate({**document, "safety": {"min_keep": 0, "max_expire_fraction": 1}})
    assert (ok.safety.min_keep, ok.safety.max_expire_fraction) == (0, 1.0)


def test_inconsistent_takes_two_values() -> None:
    """inconsistent accepts ignore and expire only."""
    assert policy(inconsistent="expire").inconsistent == "expire"
    assert errors({"name": "p", "keep": {"daily": 1}, "inconsistent": "delete"}) == [
        (("inconsistent",), "literal_error")
    ]


def test_selector_globs_are_case_sensitive_shell_globs() -> None:
    """Cluster and project selectors are fnmatch globs, matched case-sensitively."""
    selector = Selector(projects=["5e22*"], clusters=["prod-*", "billing-?"])
    assert selector.matches("5e2211c17a3e5a48f5497de3", "prod-orders", "cluster")
    assert selector.matches("5e2211c17a3e5a48f5497de3", "billing-1", "config-server")
    assert not selector.matches("5e2211c17a3e5a48f5497de3", "Prod-orders", "cluster")
    assert not selector.matches("5e2211c17a3e5a48f5497de3", "billing-10", "cluster")
    assert not selector.matches("6f00", "prod-orders", "cluster")


def test_selector_kinds_and_omitted_selectors() -> None:
    """Omitted selectors match anything; kinds restricts to clusters or config servers."""
    assert Selector().matches("any", "anything", "config-server")
    only_cfg = Selector(kinds=["config-server"])
    assert only_cfg.matches("p", "cfg1.legacy.example.net", "config-server")
    assert not only_cfg.matches("p", "cfg1.legacy.example.net", "cluster")


def test_selector_refuses_empty_lists_and_unknown_kinds() -> None:
    """An empty selector list (which would match nothing) and an unknown kind are refused."""
    document = {"name": "p", "keep": {"daily": 1}, "match": {"clusters": [], "kinds": ["db"]}}
    assert errors(document) == [
        (("match", "clusters"), "an empty list matches nothing; leave the key out to match any"),
        (("match", "kinds", 0), "literal_error"),
    ]


def test_describe_design_example() -> None:
    """describe() of the docs' example is one sentence naming scope, rules, grace and zone."""
    assert Policy.model_validate(PRODUCTION_EXAMPLE).describe() == (
        "production: clusters and config servers prod-* in project 5e2211c17a3e5a48f5497de3, "
        "keep last 3, 24 hourly, 7 daily, 5 weekly, 12 monthly, 3 yearly, everything within 2d, "
        "daily within 30d and 8 intervals of cron '0 0 1 1,4,7,10 *'; protect 7 yearly and "
        "1 snapshot by id; grace 24h; min_keep 2; times in Europe/Berlin."
    )


def test_describe_unusual_settings() -> None:
    """describe() words unlimited counts, grace 0h, release, expire and non-default safety."""
    p = policy(
        match={"projects": ["a", "b"], "kinds": ["config-server"]},
        keep={"last": -1, "yearly": -1},
        protect={"ids": ["x", "y"]},
        release_protection=True,
        grace="0h",
        inconsistent="expire",
        safety={"max_expire_fraction": 0.25, "hold_on_alerts": []},
    )
    assert p.describe() == (
        "p: all config servers in projects a or b, keep last unlimited and unlimited yearly; "
        "protect 2 snapshots by id; release other protections; grace 0h (delete at once); "
        "expire inconsistent snapshots; max_expire_fraction 0.25; no alert holds; "
        "times in UTC."
    )


@pytest.mark.parametrize(
    ("file", "index", "sentence"),
    [
        (
            "production.yaml",
            0,
            "production: clusters and config servers prod-*, keep last 4, 7 daily, 5 weekly, "
            "12 monthly, 3 yearly and everything within 2d; protect 1 yearly; grace 24h; "
            "min_keep 3; times in Europe/Berlin.",
        ),
        (
            "dev.yaml",
            0,
            "dev: clusters dev-*, keep last 3 and 3 daily; grace 2h; max_expire_fraction 0.8; "
            "times in UTC.",
        ),
        (
            "compliance.yaml",
            0,
            "compliance: clusters and config servers analytics-*, keep 13 monthly and "
            "8 intervals of cron '0 0 1 1,4,7,10 *'; protect 7 yearly; grace 24h; times in UTC.",
        ),
        (
            "compliance.yaml",
            1,
            "compliance-audit-project: all clusters and config servers in project "
            "5e2211c17a3e5a48f5497de4, keep 13 monthly and 8 intervals of cron "
            "'0 0 1 1,4,7,10 *'; protect 7 yearly; grace 24h; times in UTC.",
        ),
    ],
)
def test_describe_example_policies(file: str, index: int, sentence: str) -> None:
    """describe() of each shipped example policy is the exact sentence logs and reports show."""
    document = yaml.safe_load((EXAMPLES / file).read_text(encoding="utf-8"))
    documents = document if isinstance(document, list) else [document]
    assert Policy.model_validate(documents[index]).describe() == sentence


def test_json_schema_top_level() -> None:
    """The schema is draft 2020-12 and accepts one policy or a list of policies."""
    schema = policy_json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["title"] == "retention policy file"
    assert schema["anyOf"] == [
        {"$ref": "#/$defs/Policy"},
        {"type": "array", "items": {"$ref": "#/$defs/Policy"}},
    ]
    assert json.loads(json.dumps(schema)) == schema
    policy_schema = schema["$defs"]["Policy"]
    assert policy_schema["required"] == ["name"]
    assert set(policy_schema["properties"]) == {
        "name", "description", "match", "timezone", "keep", "protect",
        "release_protection", "grace", "inconsistent", "safety", "expect",
    }  # fmt: skip
    assert policy_schema["properties"]["grace"]["default"] == "24h"
    assert policy_schema["properties"]["inconsistent"]["enum"] == ["ignore", "expire"]


def test_json_schema_forbids_extra_keys_and_describes_fields() -> None:
    """Every object in the schema forbids unknown keys and every property has a description."""
    definitions = policy_json_schema()["$defs"]
    assert set(definitions) == {
        "Policy", "Selector", "KeepRules", "ProtectRules", "EveryRule", "Safety", "HoldRecord",
        "Expect",
    }  # fmt: skip
    for name, definition in definitions.items():
        assert definition["additionalProperties"] is False, name
        for prop, body in definition["properties"].items():
            assert body.get("description"), f"{name}.{prop}"


def test_json_schema_durations_are_patterned_strings() -> None:
    """Durations appear as strings whose pattern accepts restic durations and refuses others."""
    keep = policy_json_schema()["$defs"]["KeepRules"]["properties"]
    string_form = keep["within"]["anyOf"][0]
    assert string_form["type"] == "string"
    assert string_form["pattern"] == DURATION_PATTERN
    pattern = re.compile(DURATION_PATTERN)
    assert all(pattern.search(text) for text in ("2d", "1y6m", "0h", "36h"))
    assert not any(pattern.search(text) for text in ("7x", "", "d", "-1d", "2 d"))
    assert keep["daily"] == {
        "type": "integer",
        "minimum": -1,
        "default": 0,
        "title": "Daily",
        "description": "Newest snapshot of each of the last N days.",
    }


def test_example_documents_fit_the_schema_keys() -> None:
    """The example documents use only schema properties and give every required key."""
    definitions = policy_json_schema()["$defs"]
    nested = {"match": "Selector", "keep": "KeepRules", "protect": "ProtectRules"}
    documents = [PRODUCTION_EXAMPLE]
    for file in sorted(EXAMPLES.glob("*.yaml")):
        loaded = yaml.safe_load(file.read_text(encoding="utf-8"))
        documents += loaded if isinstance(loaded, list) else [loaded]
    assert len(documents) == 5
    for document in documents:
        top = definitions["Policy"]
        assert set(document) <= set(top["properties"])
        assert set(top["required"]) <= set(document)
        for key, definition in nested.items():
            assert set(document.get(key, {})) <= set(definitions[definition]["properties"])


def test_a_copy_with_other_rules_gives_their_engine_form() -> None:
    """The engine form is made once per rules object: a copy with an update (pydantic's
    model_copy) makes its own rather than the original's."""
    rules = KeepRules(daily=3)
    assert rules.to_spec().daily == 3

    assert rules.model_copy(update={"daily": 5}).to_spec().daily == 5
