"""Who ran a command, for the ledger: ``--actor``, else RETENTION_ACTOR, else the CI
service's own variable for the person or account that started the job, else the OS user."""

from __future__ import annotations

import getpass
import os
from collections.abc import Mapping

ENV_ACTOR = "RETENTION_ACTOR"
# The CI services' variables for who started a job, the first set wins: GitHub Actions,
# GitLab CI, Jenkins (the build-user plugin), Azure Pipelines, Buildkite, CircleCI.
CI_ACTORS = (
    "GITHUB_ACTOR",
    "GITLAB_USER_LOGIN",
    "BUILD_USER_ID",
    "BUILD_REQUESTEDFOREMAIL",
    "BUILDKITE_BUILD_CREATOR_EMAIL",
    "CIRCLE_USERNAME",
)


def actor(explicit: str | None, env: Mapping[str, str] | None = None) -> str:
    """The name the ledger records for who ran this command, and where it came from
    (``ci GITHUB_ACTOR``...) after it in parentheses when it is not the option's."""
    env = os.environ if env is None else env
    if explicit and explicit.strip():
        return explicit.strip()
    if value := env.get(ENV_ACTOR, "").strip():
        return value
    for name in CI_ACTORS:
        if value := env.get(name, "").strip():
            return f"{value} ({name})"
    try:
        return f"{getpass.getuser()} (os user)"
    except (KeyError, OSError):  # a container's uid with no passwd entry
        return f"uid {os.getuid()} (os user)"
