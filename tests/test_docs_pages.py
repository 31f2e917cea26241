"""docs/plan-file.md and docs/operating.md say what the code does: every key of the plan
model and every metric is documented, and every key, metric and command they name exists.
docs/ledger.md names every table of the ledger and only those, and docs/commands.md every
key of `retention ledger verify --format json`; the commands docs/ledger.md names exist.

Which words count:

- A *field table* is a Markdown table whose header row starts with ``| key |``. The first
  cell of each of its rows names one or more keys in backticks (``holds[].setting`` names
  ``holds`` and ``setting``). In plan-file.md, the field tables under the ``## results.jsonl``
  heading describe results.jsonl lines (the executor's journal); every other field table
  describes plan.json or decisions.jsonl (the model in retention/plan/planfile.py).
- A *camelCase key* is a backticked identifier path outside code blocks whose parts include
  one in camelCase (``evaluatedAt``, ``summary.byAction``).
- A *command line* is a shell command in a code block or a code span whose command word is
  ``retention`` (or a path ending in ``/retention``) followed by at least one word, after
  ``sudo -u USER``, ``exec`` and ``NAME=value`` prefixes; commands joined by ``|``, ``&&``
  or ``;`` are checked one by one, their options and choices included.
"""

from __future__ import annotations

import json
import re
import shlex
import typing
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import click
import pytest
from typing_extensions import is_typeddict

from retention.apply.executor import Journal, Outcome
from retention.cli import cli
from retention.core import planfile
from retention.ledger.chain import ChainReport
from retention.ledger.tables import metadata
from retention.library.ledgers import LedgerVerified
from retention.ops import metrics
from retention.runfolder.folder import RunFolder

ROOT = Path(__file__).parent.parent
PLAN_FILE = ROOT / "docs" / "plan-file.md"
OPERATING = ROOT / "docs" / "operating.md"
LEDGER = ROOT / "docs" / "ledger.md"
COMMANDS = ROOT / "docs" / "commands.md"
PAGES = [PLAN_FILE, OPERATING, LEDGER]
RESULTS_HEADING = "## results.jsonl"
INTERRUPTED_HEADING = "## interrupted.json"

FENCE = re.compile(r"^```.*?^```[ \t]*$", re.MULTILINE | re.DOTALL)
SPAN = re.compile(r"`([^`]+)`")
IDENTIFIER_PATH = re.compile(r"^[A-Za-z_]\w*(?:\[\])?(?:\.[A-Za-z_]\w*(?:\[\])?)*$")
CAMEL = re.compile(r"^[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+$")
METRIC = re.compile(r"\bretention_[a-z_]+\b")
SEPARATORS = frozenset({"|", "||", "&&", ";", "&", "(", ")", ">", ">>", "<"})


# ---- the plan model ------------------------------------------------------------------------


def _typed_dicts_in(hint: object) -> Iterator[type]:
    """The TypedDicts a type hint names, however deeply nested (list[...], ... | None)."""
    if isinstance(hint, type) and is_typeddict(hint):
        yield hint
    for arg in typing.get_args(hint):
        yield from _typed_dicts_in(arg)


def model_keys() -> set[str]:
    """Every key of every record reachable from plan.json, a change and a decision."""
    todo: list[type] = [planfile.PlanDocument, planfile.Change, planfile.DecisionRecord]
    seen: set[type] = set()
    keys: set[str] = set()
    while todo:
        record = todo.pop()
        if record in seen:
            continue
        seen.add(record)
        for key, hint in typing.get_type_hints(record).items():
            keys.add(key)
            todo.extend(_typed_dicts_in(hint))
    return keys


def results_keys(tmp_path: Path) -> set[str]:
    """The keys of results.jsonl lines, as the executor's journal writes them: those of an
    intent line and of an outcome line."""
    intent, outcome = journal_keys(tmp_path)
    return intent | outcome


def journal_keys(tmp_path: Path) -> tuple[set[str], set[str]]:
    """The keys of an intent line and those of an outcome line of results.jsonl."""
    change: planfile.Change = {
        "projectId": "5e2211c17a3e5a48f5497de3",
        "clusterId": "5e4e593f70dfbf1e2f6e1d30",
        "clusterName": "prod-orders",
        "snapshotId": "5e4e593f70dfbf1e2f6e1d36",
        "created": datetime(2026, 11, 1, tzinfo=UTC),
        "storageBytes": 1024,
        "action": "shorten",
        "destructive": True,
        "grace": 86400,
        "observed": {"doNotDelete": False, "expires": datetime(2027, 1, 1, tzinfo=UTC)},
        "body": {"expires": datetime(2026, 11, 22, tzinfo=UTC)},
        "policy": "production",
        "reasons": [],
        "expiresAfter": datetime(2026, 11, 22, tzinfo=UTC),
    }
    path = tmp_path / "results.jsonl"
    path.unlink(missing_ok=True)  # the journal appends: one intent and one outcome
    journal = Journal(path, lambda: datetime(2026, 11, 21, tzinfo=UTC))
    sent: planfile.Body = {"expires": datetime(2026, 11, 22, tzinfo=UTC)}
    journal.intent(change, sent, approved=False)
    journal.record(Outcome(change, "applied", 200, sent=sent))
    journal.close()
    intent, outcome = (set(json.loads(x)) for x in path.read_text(encoding="utf-8").splitlines())
    return intent, outcome


def interrupted_keys(tmp_path: Path) -> set[str]:
    """The keys of interrupted.json, as RunFolder.mark_interrupted writes it."""
    path = RunFolder(tmp_path / "stopped").mark_interrupted(
        "run", "SIGINT", datetime(2026, 11, 21, tzinfo=UTC),
        datetime(2026, 11, 21, 0, 1, tzinfo=UTC),
    )  # fmt: skip
    return set(json.loads(path.read_text(encoding="utf-8")))


def known_keys(heading: str, tmp_path: Path) -> set[str]:
    """The keys a field table under ``heading`` may name: the journal's under
    results.jsonl, interrupted.json's under its heading, else the plan model's."""
    if heading.startswith(RESULTS_HEADING):
        return results_keys(tmp_path)
    if heading.startswith(INTERRUPTED_HEADING):
        return interrupted_keys(tmp_path)
    return model_keys()


# ---- reading the pages ---------------------------------------------------------------------


def field_tables(text: str) -> Iterator[tuple[str, list[str]]]:
    """(the ## heading above it, the names in its rows' first cells) of each field table."""
    heading = ""
    lines = text.splitlines()
    n = 0
    while n < len(lines):
        line = lines[n]
        if line.startswith("## "):
            heading = line
        if re.match(r"^\|\s*key\s*\|", line):
            names: list[str] = []
            n += 2  # the header and its |---| line
            while n < len(lines) and lines[n].startswith("|"):
                first_cell = lines[n].split("|")[1]
                names += SPAN.findall(first_cell)
                n += 1
            yield heading, names
            continue
        n += 1


def parts(name: str) -> list[str]:
    """The keys an identifier path names: ``holds[].setting`` is holds and setting."""
    return [part.removesuffix("[]") for part in name.split(".")]


def prose(text: str) -> str:
    """The page without its code blocks (fenced, or indented by four spaces)."""
    without_fences = FENCE.sub("", text)
    return "\n".join(line for line in without_fences.splitlines() if not line.startswith("    "))


def code_lines(text: str) -> list[str]:
    """Lines of code blocks (continuation lines joined) and the contents of code spans."""
    blocks = [m.group(0) for m in FENCE.finditer(text)]
    without_fences = FENCE.sub("", text)
    blocks += [line for line in without_fences.splitlines() if line.startswith("    ")]
    lines: list[str] = []
    for block in blocks:
        lines += block.replace("\\\n", " ").splitlines()
    lines += [" ".join(span.split()) for span in SPAN.findall(prose(text))]
    return lines


def commands_in(line: str) -> list[list[str]]:
    """The arguments of each ``retention`` command in a shell line (after the word)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        tokens = list(lexer)
    except ValueError:  # not shell (an unbalanced quote in YAML or prose)
        return []
    found: list[list[str]] = []
    segment: list[str] = []
    for token in [*tokens, ";"]:
        if token not in SEPARATORS:
            segment.append(token)
            continue
        words = _command_words(segment)
        # A name or a path alone (`/etc/cron.d/retention`) is not a command.
        if len(words) > 1 and (words[0] == "retention" or words[0].endswith("/retention")):
            found.append(words[1:])
        segment = []
    return found


def _command_words(segment: list[str]) -> list[str]:
    """A command's words without ``sudo -u USER``, ``exec`` and ``NAME=value`` in front."""
    words = list(segment)
    while words:
        if words[0] == "sudo":
            words = words[1:]
            while words and words[0].startswith("-"):
                words = words[2:] if words[0] == "-u" else words[1:]
        elif words[0] == "exec" or re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
            words = words[1:]
        else:
            break
    return words


def command_problem(arguments: list[str]) -> str | None:
    """What is wrong with ``retention ARGUMENTS`` against the command tree (None: nothing)."""
    command: click.Command = cli
    path = ["retention"]
    n = 0
    while n < len(arguments):
        word = arguments[n]
        if word.startswith("-"):
            name, _, value = word.partition("=")
            option = _option(command, name)
            if option is None:
                return f"{' '.join(path)}: no option {name}"
            if not option.is_flag and not value:
                n += 1
                value = arguments[n] if n < len(arguments) else ""
            if isinstance(option.type, click.Choice) and value not in option.type.choices:
                return f"{' '.join(path)} {name}: {value!r} is not one of {option.type.choices}"
        elif isinstance(command, click.Group):
            sub = command.commands.get(word)
            if sub is None:
                return f"{' '.join(path)}: no command {word!r}"
            command, path = sub, [*path, word]
        n += 1
    if isinstance(command, click.Group):
        return f"{' '.join(path)}: names no command"
    return None


def _option(command: click.Command, name: str) -> click.Option | None:
    if name in ("-h", "--help"):
        return click.Option(["--help"], is_flag=True)
    for param in command.params:
        if isinstance(param, click.Option) and name in (*param.opts, *param.secondary_opts):
            return param
    return None


def gauge_names() -> set[str]:
    """The name of every gauge metrics.registry creates (a successful, sharded run, recorded
    in the ledger)."""
    now = datetime(2026, 11, 21, 3, 0, tzinfo=UTC)
    run = metrics.RunMetrics(
        now,
        now,
        0,
        changes={"extend": 1},
        outcomes={"applied": 1},
        shard="0/2",
        ledger_head="ab" * 32,
    )
    return {family.name for family in metrics.registry(run, previous_success=1.0).collect()}


# ---- the tests -----------------------------------------------------------------------------


def test_the_model_walk_reaches_every_nested_record() -> None:
    """The key walk goes into nested and optional records, so the next test checks them all."""
    keys = model_keys()

    assert {"notices", "setting", "replicaSetName", "doNotDelete", "horizon", "sha256"} <= keys
    assert {"byState", "expiresFrom", "advisory", "consistent", "counts"} <= keys


def test_every_key_of_the_plan_model_is_named_in_plan_file_md() -> None:
    """A key of the plan model that docs/plan-file.md does not name as `key` fails this."""
    text = PLAN_FILE.read_text(encoding="utf-8")

    missing = sorted(key for key in model_keys() if f"`{key}`" not in text)

    assert missing == []


def test_every_key_in_the_field_tables_exists(tmp_path: Path) -> None:
    """A field table of docs/plan-file.md that names a key the model (or, under
    results.jsonl, the journal) does not have fails this."""
    text = PLAN_FILE.read_text(encoding="utf-8")
    tables = list(field_tables(text))
    known = {heading: known_keys(heading, tmp_path) for heading, _ in tables}

    unknown = [
        f"{heading}: {name}"
        for heading, names in tables
        for name in names
        for part in parts(name)
        if part not in known[heading]
    ]

    assert len(tables) >= 8
    assert unknown == []


def test_every_documented_results_key_is_a_key_of_the_journal(tmp_path: Path) -> None:
    """The results.jsonl table names every key a journal line has."""
    text = PLAN_FILE.read_text(encoding="utf-8")
    documented = {
        part
        for heading, names in field_tables(text)
        if heading.startswith(RESULTS_HEADING)
        for name in names
        for part in parts(name)
    }

    assert sorted(results_keys(tmp_path) - documented) == []


def test_every_camel_case_key_in_plan_file_md_exists(tmp_path: Path) -> None:
    """A backticked camelCase key anywhere in the prose of docs/plan-file.md that neither
    the plan model, results.jsonl nor interrupted.json has fails this."""
    known = model_keys() | results_keys(tmp_path) | interrupted_keys(tmp_path)
    spans = SPAN.findall(prose(PLAN_FILE.read_text(encoding="utf-8")))

    unknown = sorted(
        {
            part
            for span in spans
            if IDENTIFIER_PATH.match(span)
            for part in parts(span)
            if CAMEL.match(part) and part not in known
        }
    )

    assert unknown == []


def test_the_json_examples_of_plan_file_md_are_records_of_the_model(tmp_path: Path) -> None:
    """Each JSON example in docs/plan-file.md is a valid change, decision or results line."""
    text = PLAN_FILE.read_text(encoding="utf-8")
    examples = [
        json.loads(m.group(1))
        for m in re.finditer(r"^```json\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    ]
    kinds: list[str] = []
    for example in examples:
        if "outcome" in example:
            assert set(example) == journal_keys(tmp_path)[1]
            kinds.append("result")
        elif "state" in example:
            planfile.DECISION.validate_python(example)
            kinds.append("decision")
        else:
            planfile.CHANGE.validate_python(example)
            kinds.append(example["action"])

    assert sorted(kinds) == ["decision", "protect", "result", "shorten"]


def test_every_gauge_is_described_in_operating_md() -> None:
    """A gauge retention/metrics.py creates that docs/operating.md does not name fails this."""
    text = OPERATING.read_text(encoding="utf-8")
    names = gauge_names()

    missing = sorted(name for name in names if f"`{name}`" not in text)

    assert metrics.SUCCESS in names
    assert missing == []


def test_every_metric_operating_md_names_exists() -> None:
    """A retention_* metric in docs/operating.md (tables, alert rules) that no gauge has fails
    this."""
    text = OPERATING.read_text(encoding="utf-8")

    unknown = sorted(set(METRIC.findall(text)) - gauge_names())

    assert unknown == []


def _section(text: str, heading: str) -> str:
    """The part of a page from ``heading`` (a whole line) to the next heading of its level."""
    level = heading.split(" ", 1)[0]
    start = text.index(f"\n{heading}\n")
    end = text.find(f"\n{level} ", start + 1)
    return text[start : end if end != -1 else len(text)]


def test_ledger_md_names_every_table_of_the_ledger_and_no_other() -> None:
    """The table of tables in docs/ledger.md has a row for each table of the ledger's schema
    (and Alembic's version table), and the page names no ledger_ table the schema lacks."""
    text = LEDGER.read_text(encoding="utf-8")
    rows = {
        name
        for line in _section(text, "## The tables").splitlines()
        if line.startswith("| `")
        for name in SPAN.findall(line.split("|")[1])
    }
    tables = {table.name for table in metadata.sorted_tables}

    assert rows == tables | {"alembic_version"}
    assert set(re.findall(r"\bledger_[a-z_]+\b", text)) <= tables


def test_every_key_of_ledger_verify_json_is_in_commands_md() -> None:
    """docs/commands.md's `ledger verify` section names each key of its --format json
    document and of a shard's entry."""
    report = ChainReport({"": (3, "ab" * 32)}, ["1a2b3c4d (the whole fleet)"])
    document = LedgerVerified("sqlite:////var/lib/retention/reports/ledger.db", report).document()
    section = _section(COMMANDS.read_text(encoding="utf-8"), "## ledger verify")

    keys = set(document) | set(document["shards"][0])
    named = {part for span in SPAN.findall(section) for part in parts(span)}
    missing = sorted(keys - named)

    assert {"brokenAt", "unfinished", "head"} <= keys
    assert missing == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_retention_command_in_the_docs_exists(page: Path) -> None:
    """A `retention ...` line in the page naming a command or an option the CLI does not have
    fails this."""
    found = [
        arguments
        for line in code_lines(page.read_text(encoding="utf-8"))
        for arguments in commands_in(line)
    ]

    problems = [
        f"retention {' '.join(arguments)}: {problem}"
        for arguments in found
        if (problem := command_problem(arguments)) is not None
    ]

    assert len(found) >= 10
    assert problems == []


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("retention frobnicate", "retention: no command 'frobnicate'"),
        ("retention run --frobnicate", "retention run: no option --frobnicate"),
        ("retention config", "retention config: names no command"),
        ("retention --log-format yaml plan", "retention --log-format: 'yaml' is not one of"),
        ("retention --log-format json run --dry-run --shard 0/2", None),
        ("sudo -u retention X=1 /opt/retention/.venv/bin/retention doctor", None),
        ("retention plan --out - | jq .summary && retention apply plan.json", None),
    ],
)
def test_the_command_check_tells_real_commands_from_wrong_ones(
    line: str, problem: str | None
) -> None:
    """The checker behind the previous test flags a made-up command, option or choice."""
    [arguments] = commands_in(line)[:1]

    found = command_problem(arguments)

    assert (found is None) if problem is None else (found is not None and problem in found)
