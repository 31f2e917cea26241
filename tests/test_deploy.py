"""The deployment files: every Kubernetes manifest validated offline against the Kubernetes
schemas bundled with kubernetes-validate, how the CronJob and the Jobs run (never two at once,
bounded, not retried when a rerun cannot succeed, non-root, secrets as files),
the cron wrapper run against a stand-in `retention`, and the Dockerfile checked statically
(no container engine is needed)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml
from sqlalchemy.engine import make_url

from retention import cli
from retention.config.loading import load_config
from tests.support.client import fixed_clock

ROOT = Path(__file__).resolve().parent.parent
KUBERNETES = ROOT / "deploy" / "kubernetes"
CRON = ROOT / "deploy" / "cron"
WRAPPER = CRON / "retention-cron"
CRONTAB = CRON / "retention.crontab"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"

# The oldest Kubernetes the manifests claim (backoffLimitPerIndex needs 1.29, the CronJob's
# timeZone 1.27), and the newest whose schemas the installed package bundles (as major.minor:
# validate() answers with the version of the schemas it used in that form).
KUBERNETES_VERSIONS = ("1.30", ".".join(kubernetes_validate.latest_version().split(".")[:2]))
IMAGE_UID = 10001
SECRET_WORDS = ("KEY", "SECRET", "PASSWORD", "TOKEN")
METRICS_FILE = "/var/lib/node_exporter/textfile_collector/retention.prom"

Doc = dict[str, Any]


def _documents() -> list[tuple[str, Doc]]:
    """Every non-empty YAML document under deploy/kubernetes, with its file name."""
    found: list[tuple[str, Doc]] = []
    for path in sorted(KUBERNETES.glob("*.yaml")):
        with path.open(encoding="utf-8") as handle:
            found += [(path.name, doc) for doc in yaml.safe_load_all(handle) if doc]
    return found


DOCUMENTS = _documents()


def _one(kind: str, name: str | None = None) -> Doc:
    matches = [
        doc
        for _, doc in DOCUMENTS
        if doc["kind"] == kind and (name is None or doc["metadata"]["name"] == name)
    ]
    assert len(matches) == 1, f"expected one {kind} {name or ''}, found {len(matches)}"
    return matches[0]


def _job_spec(doc: Doc) -> Doc:
    spec: Doc = doc["spec"]["jobTemplate"]["spec"] if doc["kind"] == "CronJob" else doc["spec"]
    return spec


def _pod_spec(doc: Doc) -> Doc:
    pod: Doc = _job_spec(doc)["template"]["spec"]
    return pod


def _container(doc: Doc) -> Doc:
    containers: list[Doc] = _pod_spec(doc)["containers"]
    assert len(containers) == 1
    return containers[0]


def _env(doc: Doc) -> dict[str, Doc]:
    return {item["name"]: item for item in _container(doc).get("env", [])}


def _mounts(doc: Doc) -> dict[str, Doc]:
    """The container's volume mounts by mount path."""
    return {mount["mountPath"]: mount for mount in _container(doc)["volumeMounts"]}


def _volume(doc: Doc, name: str) -> Doc:
    volumes = {volume["name"]: volume for volume in _pod_spec(doc)["volumes"]}
    found: Doc = volumes[name]
    return found


def _retention_yaml() -> Doc:
    config: Doc = yaml.safe_load(_one("ConfigMap", "retention-config")["data"]["retention.yaml"])
    return config


def _retention_example() -> Doc:
    config: Doc = yaml.safe_load((ROOT / "retention.example.yaml").read_text(encoding="utf-8"))
    return config


WORKLOADS = pytest.mark.parametrize("kind", ["CronJob", "Job"])


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize(
    ("filename", "document"),
    DOCUMENTS,
    ids=[f"{name}:{doc['kind']}/{doc['metadata']['name']}" for name, doc in DOCUMENTS],
)
def test_manifest_is_valid_kubernetes(filename: str, document: Doc, version: str) -> None:
    """Each manifest document passes strict schema validation for that Kubernetes version."""
    try:
        validated = kubernetes_validate.validate(document, version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        where = ".".join(str(part) for part in exc.path)
        pytest.fail(f"{filename}: {where}: {exc.message}")
    assert validated == version


def test_the_manifests_are_the_expected_set() -> None:
    """deploy/kubernetes holds the CronJob, the Indexed Job, the two ConfigMaps and the Secret."""
    kinds = sorted((doc["kind"], doc["metadata"]["name"]) for _, doc in DOCUMENTS)

    assert kinds == [
        ("ConfigMap", "retention-config"),
        ("ConfigMap", "retention-policies"),
        ("CronJob", "retention"),
        ("Job", "retention-sharded"),
        ("Secret", "retention-api-key"),
    ]


def test_cronjob_never_overlaps_and_bounds_each_run() -> None:
    """The CronJob forbids concurrent runs, skips late starts, retries at most once, has a
    deadline, and runs on retention.yaml's schedule in UTC."""
    cronjob = _one("CronJob")
    spec, job = cronjob["spec"], _job_spec(cronjob)

    assert spec["concurrencyPolicy"] == "Forbid"
    assert 0 < spec["startingDeadlineSeconds"] <= 24 * 3600
    assert spec["successfulJobsHistoryLimit"] >= 1
    assert spec["failedJobsHistoryLimit"] >= 1
    assert spec["schedule"] == _retention_yaml()["schedule"] == "0 3 * * *"
    assert spec["timeZone"] in {"Etc/UTC", "UTC"}
    assert 0 <= job["backoffLimit"] <= 1
    assert job["activeDeadlineSeconds"] > 0
    assert _pod_spec(cronjob)["restartPolicy"] == "Never"


@WORKLOADS
def test_the_grace_period_leaves_room_for_a_graceful_stop(kind: str) -> None:
    """On SIGTERM a run lets the PATCHes on the wire finish (api.timeout_seconds at most),
    then writes reports, metrics and the notice: the pod's grace period holds that with
    room to spare before the kubelet's SIGKILL, and the deadline is far beyond it."""
    timeout = _retention_yaml()["api"]["timeout_seconds"]
    pod = _pod_spec(_one(kind))

    assert pod["terminationGracePeriodSeconds"] >= 2 * timeout + 30
    assert (
        _job_spec(_one(kind))["activeDeadlineSeconds"] > 10 * pod["terminationGracePeriodSeconds"]
    )


@WORKLOADS
def test_runs_that_cannot_succeed_again_are_not_retried(kind: str) -> None:
    """Exit codes 2, 3 and 4 fail the Job (or the shard) at once; evictions are not counted."""
    rules = _job_spec(_one(kind))["podFailurePolicy"]["rules"]
    by_action = {rule["action"]: rule for rule in rules}

    stop = by_action["FailJob" if kind == "CronJob" else "FailIndex"]["onExitCodes"]
    assert stop["containerName"] == _container(_one(kind))["name"]
    assert (stop["operator"], sorted(stop["values"])) == ("In", [2, 3, 4])
    assert by_action["Ignore"]["onPodConditions"][0]["type"] == "DisruptionTarget"


@WORKLOADS
def test_pod_runs_as_non_root_with_a_read_only_root(kind: str) -> None:
    """The pod runs as the image's non-root uid, read-only root, no privilege, no capability."""
    doc = _one(kind)
    pod, container = _pod_spec(doc), _container(doc)
    security = container["securityContext"]

    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == IMAGE_UID == _dockerfile_user()
    assert pod["securityContext"]["fsGroup"] == IMAGE_UID
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    assert pod["automountServiceAccountToken"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    assert container["image"].endswith(":0.1.0")


@WORKLOADS
def test_writable_paths_are_empty_dirs(kind: str) -> None:
    """With a read-only root, /tmp and retention.yaml's reports dir are writable emptyDirs."""
    doc = _one(kind)
    mounts = _mounts(doc)
    reports = _retention_yaml()["reports"]["dir"]

    for path in ("/tmp", reports):  # noqa: S108 - the container's own /tmp, an emptyDir
        assert not mounts[path].get("readOnly", False)
        assert "sizeLimit" in _volume(doc, mounts[path]["name"])["emptyDir"]


@WORKLOADS
def test_container_has_resource_requests_and_limits(kind: str) -> None:
    """CPU and memory are requested and limited, the limits above the requests."""
    resources = _container(_one(kind))["resources"]

    for resource in ("cpu", "memory"):
        assert resource in resources["requests"]
        assert resource in resources["limits"]
    assert resources["limits"]["memory"] == "512Mi"
    assert resources["requests"]["memory"] == "128Mi"


@WORKLOADS
def test_private_key_is_a_file_from_the_secret(kind: str) -> None:
    """RETENTION_PRIVATE_KEY_FILE names the Secret's private-key mounted as a 0400 file; the
    public key comes from the same Secret by reference."""
    doc = _one(kind)
    env = _env(doc)
    secret = _one("Secret")
    key_file = PurePosixPath(env["RETENTION_PRIVATE_KEY_FILE"]["value"])
    mount = _mounts(doc)[str(key_file.parent)]
    volume = _volume(doc, mount["name"])["secret"]

    assert "RETENTION_PRIVATE_KEY" not in env
    assert mount["readOnly"] is True
    assert volume["secretName"] == secret["metadata"]["name"]
    assert volume["items"] == [{"key": "private-key", "path": key_file.name}]
    assert volume["defaultMode"] == 0o400
    assert "private-key" in secret["stringData"]
    public = env["RETENTION_PUBLIC_KEY"]["valueFrom"]["secretKeyRef"]
    assert public == {"name": secret["metadata"]["name"], "key": "public-key"}
    assert env["RETENTION_LOG_FORMAT"]["value"] == "json"


@WORKLOADS
def test_no_secret_value_in_the_environment(kind: str) -> None:
    """No env value holds a secret: secret-named variables are references or file paths."""
    secret_values = set(_one("Secret")["stringData"].values())

    for name, item in _env(_one(kind)).items():
        value = item.get("value")
        if value is None:
            assert "secretKeyRef" in item["valueFrom"], name
            continue
        assert value not in secret_values, name
        if any(word in name for word in SECRET_WORDS):
            assert name.endswith("_FILE"), name
            assert value.startswith("/"), name


def _commented_notify() -> str:
    """The commented notify: block of the ConfigMap's retention.yaml, uncommented."""
    lines = _one("ConfigMap", "retention-config")["data"]["retention.yaml"].splitlines()
    start = lines.index("# notify:")
    block = []
    for line in lines[start:]:
        if not line.startswith("#"):
            break
        block.append(line.removeprefix("# "))
    return "\n".join(block) + "\n"


@WORKLOADS
def test_notification_urls_are_an_optional_file_from_the_secret(kind: str) -> None:
    """The Secret's notify-urls is mounted read-only as a 0400 file where the ConfigMap's
    notify block looks for it, from a volume marked optional (a Secret without that key
    still starts the pod), and never through the environment."""
    doc = _one(kind)
    secret = _one("Secret")
    urls_file = PurePosixPath(yaml.safe_load(_commented_notify())["notify"]["urls_file"])
    mount = _mounts(doc)[str(urls_file.parent)]

    assert mount["readOnly"] is True
    assert _volume(doc, mount["name"])["secret"] == {
        "secretName": secret["metadata"]["name"],
        "items": [{"key": "notify-urls", "path": urls_file.name}],
        "defaultMode": 0o400,
        "optional": True,
    }
    assert "RETENTION_NOTIFY_URLS" not in _env(doc)
    assert "notify-urls" in secret["stringData"]


def test_the_configmap_carries_no_notification_url_and_its_notify_block_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ConfigMap's retention.yaml has no notify: (URLs hold tokens); uncommented, its
    notify block reads the Secret's example notify-urls laid out as the pod mounts it,
    passes `retention validate`, and config show holds none of the URLs' secrets."""
    for name in [n for n in os.environ if n.startswith("RETENTION_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("RETENTION_PUBLIC_KEY", "pub")
    monkeypatch.setenv("RETENTION_PRIVATE_KEY", "priv")
    text = _one("ConfigMap", "retention-config")["data"]["retention.yaml"]
    urls = _one("Secret")["stringData"]["notify-urls"]
    mounted = tmp_path / "secrets" / "notify-urls"
    mounted.parent.mkdir()
    mounted.write_text(urls, encoding="utf-8")
    mounted.chmod(0o400)
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "p.yaml").write_text("name: p\nkeep: {last: 3}\n")
    notify = _commented_notify().replace("/var/run/secrets/retention-notify", str(mounted.parent))
    config = tmp_path / "retention.yaml"
    config.write_text(text + notify, encoding="utf-8")

    validated = cli.main(["--config", str(config), "validate"])
    shown = cli.main(["--config", str(config), "config", "show"])

    out = capsys.readouterr().out
    assert "notify" not in _retention_yaml()
    assert "://" not in text.replace(_retention_yaml()["api"]["base_url"], "")
    assert (validated, shown) == (0, 0)
    assert 'urls: ["slack://**********", "jsons://**********"]' in out
    assert f"# notify.urls_file ({mounted})" in out
    assert "XXXX" not in out
    assert "EXAMPLE-NOT-A-REAL-TOKEN" not in out


@WORKLOADS
def test_the_ledger_is_one_postgresql_database_from_the_secret(kind: str) -> None:
    """Every pod records into the PostgreSQL database the Secret names: its ledger-url (a
    postgresql:// URL with no password) as RETENTION_LEDGER_URL, its ledger-password as a
    0400 file read through RETENTION_LEDGER_PASSWORD_FILE, never in the environment; both
    required, so a pod never falls back to a SQLite ledger on its ephemeral volume."""
    doc = _one(kind)
    env = _env(doc)
    secret = _one("Secret")
    password_file = PurePosixPath(env["RETENTION_LEDGER_PASSWORD_FILE"]["value"])
    mount = _mounts(doc)[str(password_file.parent)]
    url = make_url(secret["stringData"]["ledger-url"])

    assert env["RETENTION_LEDGER_URL"]["valueFrom"]["secretKeyRef"] == {
        "name": secret["metadata"]["name"],
        "key": "ledger-url",
    }
    assert "RETENTION_LEDGER_PASSWORD" not in env
    assert mount["readOnly"] is True
    assert _volume(doc, mount["name"])["secret"] == {
        "secretName": secret["metadata"]["name"],
        "items": [{"key": "ledger-password", "path": password_file.name}],
        "defaultMode": 0o400,
    }
    assert (url.get_backend_name(), url.password) == ("postgresql", None)
    assert "ledger-password" in secret["stringData"]


@WORKLOADS
def test_the_pod_finds_its_ledger_and_its_password(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ConfigMap's retention.yaml with the pod's environment and the Secret's password
    file laid out as mounted: the ledger is the Secret's PostgreSQL database, with the
    Secret's password, and the URL outputs show has none."""
    for name in [n for n in os.environ if n.startswith("RETENTION_")]:
        monkeypatch.delenv(name)
    doc, secret = _one(kind), _one("Secret")["stringData"]
    mounted = tmp_path / "secrets" / "ledger-password"
    mounted.parent.mkdir()
    mounted.write_text(secret["ledger-password"], encoding="utf-8")
    config = tmp_path / "retention.yaml"
    config.write_text(
        _one("ConfigMap", "retention-config")["data"]["retention.yaml"], encoding="utf-8"
    )
    (tmp_path / "policies").mkdir()
    env = {
        "RETENTION_LEDGER_URL": secret["ledger-url"],
        "RETENTION_LEDGER_PASSWORD_FILE": str(mounted),
    }
    assert {"RETENTION_LEDGER_URL", "RETENTION_LEDGER_PASSWORD_FILE"} <= set(_env(doc))

    loaded = load_config(config, env=env, require_credentials=False, clock=fixed_clock)
    place = loaded.config.ledger_place(env)

    password = secret["ledger-password"].rstrip("\n")
    assert place.url == secret["ledger-url"]
    assert place.password == password
    assert place.sqlite_file is None
    assert password not in place.shown


def test_secret_example_is_clearly_fake() -> None:
    """The Secret example holds placeholders only and says to create the real one with kubectl."""
    text = (KUBERNETES / "secret.example.yaml").read_text(encoding="utf-8")

    assert all("EXAMPLE" in value for value in _one("Secret")["stringData"].values())
    assert "kubectl -n retention create secret generic retention-api-key" in text


@WORKLOADS
def test_configuration_and_policies_are_mounted_where_retention_looks(kind: str) -> None:
    """retention.yaml sits at RETENTION_CONFIG and its `policies: policies/` is the policies
    ConfigMap, mounted beside it (ConfigMap keys cannot hold a '/')."""
    doc = _one(kind)
    config_path = PurePosixPath(_env(doc)["RETENTION_CONFIG"]["value"])
    mounts = _mounts(doc)
    config_mount = mounts[str(config_path)]
    policies_path = config_path.parent / _retention_yaml()["policies"]

    assert config_mount["subPath"] == config_path.name
    assert _volume(doc, config_mount["name"])["configMap"]["name"] == "retention-config"
    policies_mount = mounts[str(policies_path)]
    assert _volume(doc, policies_mount["name"])["configMap"]["name"] == "retention-policies"
    assert config_mount["readOnly"] is True
    assert policies_mount["readOnly"] is True


def test_configmaps_hold_a_configuration_retention_accepts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ConfigMaps, laid out as the pod mounts them, pass `retention validate`."""
    for name in [n for n in os.environ if n.startswith("RETENTION_")]:
        monkeypatch.delenv(name)
    (tmp_path / "policies").mkdir()
    config = tmp_path / "retention.yaml"
    config.write_text(
        _one("ConfigMap", "retention-config")["data"]["retention.yaml"], encoding="utf-8"
    )
    policies = _one("ConfigMap", "retention-policies")["data"]
    for key, text in policies.items():
        (tmp_path / "policies" / key).write_text(text, encoding="utf-8")

    code = cli.main(["--config", str(config), "validate"])

    out = capsys.readouterr().out
    assert code == 0, out
    assert f"{len(policies)} policies are valid" in out


def test_indexed_job_runs_one_shard_per_pod() -> None:
    """The Indexed Job runs N pods at once, each `retention run --shard-count N`."""
    job = _one("Job")
    spec = job["spec"]
    args = _container(job)["args"]

    assert spec["completionMode"] == "Indexed"
    assert spec["parallelism"] == spec["completions"] > 1
    assert args[0] == "run"
    assert args[args.index("--shard-count") + 1] == str(spec["completions"])
    assert "--shard" not in args  # the index comes from JOB_COMPLETION_INDEX
    assert "JOB_COMPLETION_INDEX" not in _env(job)  # set by Kubernetes, not by us
    assert 0 <= spec["backoffLimitPerIndex"] <= 1


def test_cron_wrapper_is_valid_bash() -> None:
    """The cron wrapper parses (bash -n), is executable and stops on errors."""
    text = WRAPPER.read_text(encoding="utf-8")

    subprocess.run(["bash", "-n", str(WRAPPER)], check=True)  # noqa: S607 - bash from PATH
    assert os.access(WRAPPER, os.X_OK)
    assert text.startswith("#!/usr/bin/env bash\n")
    assert "\nset -euo pipefail" in text


def _fake_retention(tmp_path: Path, exit_code: int) -> tuple[Path, Path]:
    """A stand-in `retention` in a fake virtualenv that records its pid, args and env."""
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    record = tmp_path / "record"
    fake = bin_dir / "retention"
    fake.write_text(
        "#!/usr/bin/env bash\n"
        f'{{ echo "pid=$$"; echo "args=$*"; env; }} > {shlex.quote(str(record))}\n'
        f"exit {exit_code}\n",
        encoding="utf-8",
    )
    fake.chmod(0o755)
    return tmp_path / "venv", record


def _wrapper_env(venv: Path, **extra: str) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("RETENTION_") and name not in {"MALLOC_ARENA_MAX"}
    }
    return {**env, "RETENTION_VENV": str(venv), "RETENTION_JOURNAL": "no", **extra}


def test_cron_wrapper_sets_the_environment_and_execs_retention_run(tmp_path: Path) -> None:
    """The wrapper exports the config, the key file, the public key read from its file and
    JSON logs, then execs `retention run --quiet --metrics-file ...`, whose exit code is its."""
    venv, record = _fake_retention(tmp_path, exit_code=3)
    public_file = tmp_path / "public-key"
    public_file.write_text("pub-from-file\n", encoding="utf-8")
    env = _wrapper_env(
        venv,
        RETENTION_PUBLIC_KEY_FILE=str(public_file),
        RETENTION_PRIVATE_KEY="must-not-reach-retention",
    )

    process = subprocess.Popen([str(WRAPPER)], env=env)
    try:
        assert process.wait(timeout=30) == 3
    finally:
        if process.poll() is None:  # killed, not left for the next test to trip over
            process.kill()
            process.wait()

    lines = record.read_text(encoding="utf-8").splitlines()
    seen = dict(line.split("=", 1) for line in lines if "=" in line)
    assert seen["pid"] == str(process.pid)  # exec: retention replaced the wrapper
    assert seen["args"] == f"run --quiet --metrics-file {METRICS_FILE}"
    assert seen["RETENTION_CONFIG"] == "/etc/retention/retention.yaml"
    assert seen["RETENTION_PRIVATE_KEY_FILE"] == "/etc/retention/private-key"
    assert seen["RETENTION_PUBLIC_KEY"] == "pub-from-file"
    assert seen["RETENTION_LOG_FORMAT"] == "json"
    assert "RETENTION_PRIVATE_KEY" not in seen


def test_cron_wrapper_without_a_public_key_exits_2(tmp_path: Path) -> None:
    """No public key in the environment or its file: exit 2 with a message, retention not run."""
    venv, record = _fake_retention(tmp_path, exit_code=0)
    env = _wrapper_env(venv, RETENTION_PUBLIC_KEY_FILE=str(tmp_path / "missing"))

    result = subprocess.run([str(WRAPPER)], env=env, capture_output=True, text=True, check=False)

    assert result.returncode == 2
    assert "RETENTION_PUBLIC_KEY" in result.stderr
    assert not record.exists()


def test_crontab_runs_the_wrapper_on_the_configured_schedule() -> None:
    """The crontab line runs the wrapper as the retention user at retention.yaml's schedule."""
    entries = [
        line.split()
        for line in CRONTAB.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#") and "=" not in line.split()[0]
    ]

    assert len(entries) == 1
    fields = entries[0]
    assert " ".join(fields[:5]) == _retention_yaml()["schedule"]
    assert fields[5] == "retention"
    assert fields[6] == "/opt/retention/deploy/cron/retention-cron"


def _instructions() -> list[tuple[str, str]]:
    """The Dockerfile's instructions (continuation lines joined, comments dropped)."""
    joined = re.sub(r"\\\n", " ", DOCKERFILE.read_text(encoding="utf-8"))
    found = []
    for line in joined.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            keyword, _, rest = stripped.partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def _dockerfile_user() -> int:
    users = [rest for keyword, rest in _instructions() if keyword == "USER"]
    return int(users[-1].split(":")[0])


def _env_names(rest: str) -> list[str]:
    words = shlex.split(rest)
    if words and "=" not in words[0]:
        return [words[0]]  # the legacy `ENV NAME value` form
    return [word.split("=", 1)[0] for word in words]


def test_dockerfile_runs_retention_as_a_numeric_non_root_user() -> None:
    """Every stage is the PYTHON_IMAGE argument, python:3.11-slim unless a mirror or digest
    is given; the image runs `retention run` as uid 10001."""
    instructions = _instructions()
    froms = [rest.split()[0] for keyword, rest in instructions if keyword == "FROM"]

    assert instructions[0] == ("ARG", "PYTHON_IMAGE=python:3.11-slim")  # global: before FROM
    assert froms == ["${PYTHON_IMAGE}", "${PYTHON_IMAGE}"]
    assert _dockerfile_user() == IMAGE_UID
    assert ("ENTRYPOINT", '["retention"]') in instructions
    assert ("CMD", '["run"]') in instructions
    assert instructions[-2:] == [("ENTRYPOINT", '["retention"]'), ("CMD", '["run"]')]
    assert not any(keyword == "HEALTHCHECK" for keyword, _ in instructions)
    assert any(
        keyword == "RUN" and "pip install --no-cache-dir ." in rest
        for keyword, rest in instructions
    )


def test_dockerfile_builds_where_only_a_registry_mirror_is_reachable() -> None:
    """No `# syntax=` directive (BuildKit would fetch its frontend from Docker Hub), and the
    final virtualenv has no pip or setuptools: they are uninstalled after the install, in
    the stage whose virtualenv the image copies."""
    text = DOCKERFILE.read_text(encoding="utf-8")
    instructions = _instructions()
    runs = [rest for keyword, rest in instructions if keyword == "RUN"]
    install = next(i for i, rest in enumerate(runs) if "pip install --no-cache-dir ." in rest)

    assert not re.search(r"^#\s*syntax\s*=", text, re.MULTILINE | re.IGNORECASE)
    assert any("-m pip uninstall --yes pip setuptools" in rest for rest in runs[install + 1 :])
    assert ("COPY", "--from=build /opt/retention /opt/retention") in instructions


def test_the_dockerfiles_example_run_mounts_a_writable_reports_folder() -> None:
    """The header's `docker run --read-only` mounts a volume where the example
    configuration's relative reports.dir resolves (beside the mounted retention.yaml), and
    the image has that folder: without it the run exits 2."""
    header = DOCKERFILE.read_text(encoding="utf-8").split("\nARG ", 1)[0]
    config = "/etc/retention/retention.yaml"
    reports_dir = _retention_example()["reports"]["dir"]
    resolved = (Path(config).parent / reports_dir).as_posix().rstrip("/")
    mounts = re.findall(r'-v "\$PWD/[^:"]+:([^:"]+)(:ro)?"', header)

    assert "--read-only" in header
    assert (config, ":ro") in mounts
    assert (resolved, "") in mounts  # writable: no :ro
    assert any(keyword == "RUN" and resolved in rest for keyword, rest in _instructions())


def test_dockerfile_sets_the_runtime_environment_and_bakes_no_secret() -> None:
    """ENV sets MALLOC_ARENA_MAX=2 and the Python flags; no ENV or ARG names a secret."""
    values: dict[str, str] = {}
    names: list[str] = []
    for keyword, rest in _instructions():
        if keyword in {"ENV", "ARG"}:
            names += _env_names(rest)
            for word in shlex.split(rest):
                name, equals, value = word.partition("=")
                if equals:
                    values[name] = value

    assert values["MALLOC_ARENA_MAX"] == "2"
    assert values["PYTHONDONTWRITEBYTECODE"] == "1"
    assert values["PYTHONUNBUFFERED"] == "1"
    assert [name for name in names if any(word in name.upper() for word in SECRET_WORDS)] == []


def test_dockerignore_lets_in_only_what_the_image_copies() -> None:
    """The build context is an allowlist holding exactly what the Dockerfile COPYs."""
    lines = [
        line.strip()
        for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    allowed = {line[1:].rstrip("/") for line in lines if line.startswith("!")}
    copied = {
        source.rstrip("/").removeprefix("./")
        for keyword, rest in _instructions()
        if keyword == "COPY" and not rest.startswith("--from")
        for source in rest.split()[:-1]
    }

    assert lines[0] == "*"
    assert copied == allowed == IMAGE_CONTEXT
    assert "**/__pycache__" in lines


# What the image's build stage copies: the wheel's sources, the examples it ships
# (pyproject.toml's force-include) and the build hook that compiles the core.
IMAGE_CONTEXT = {
    "pyproject.toml",
    "README.md",
    "retention.example.yaml",
    "retention",
    "policies",
    "tools/compiled.py",
    "tools/hatch_compile.py",
}


def test_the_image_context_alone_builds_the_wheel(tmp_path: Path) -> None:
    """The files .dockerignore lets in are enough for the build stage's `pip install .`: a
    wheel builds from them alone (plain Python here: RETENTION_COMPILE=no, no compiler
    needed), with the example policies inside. (A context without policies/ once broke
    the image's build: hatchling found no forced include.)"""
    context = tmp_path / "context"
    for name in IMAGE_CONTEXT:
        source, target = ROOT / name, context / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, target)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "-q", "-w", str(tmp_path / "out"), str(context)],
        env={**os.environ, "RETENTION_COMPILE": "no"},
        capture_output=True, text=True, check=False, timeout=240,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = (tmp_path / "out").glob("retention-*.whl")
    assert wheel.name.endswith("-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as built:
        names = set(built.namelist())
    assert "retention/examples/policies/production.yaml" in names
    assert "retention/core/decide.py" in names
