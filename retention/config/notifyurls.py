"""Notification URLs from the environment or a file, so that they can live in a Secret.

An Apprise URL carries its service's token, so on Kubernetes it belongs in a Secret, not in
the ConfigMap that holds retention.yaml. The URLs the notices go to come from the first of
these that is given; the others are then not used, and a warning says so:

1. ``RETENTION_NOTIFY_URLS``: one or more URLs (set but blank counts as not set);
2. ``notify.urls_file``: a file of URLs (a mounted Secret), relative to retention.yaml;
3. ``notify.urls``: the list in retention.yaml.

Replacing rather than adding is the least surprising: an URL moved to a Secret and still
left in retention.yaml is not told twice, and the environment overrides the file as
``RETENTION_BASE_URL`` overrides ``api.base_url``.

The environment variable and the file have one format: URLs separated by line breaks,
spaces or commas (a comma only before the next ``SCHEME://`` or at the end of a line, since
some URLs hold commas of their own, ``mailto://...?to=a@x,b@y``); a line whose first
non-blank character is ``#`` is a comment. Each URL is checked as those of retention.yaml
are; a problem names the variable (and the URL's index) or the file and its line, and
shows at most the URL's scheme. Each URL keeps its place (``RETENTION_NOTIFY_URLS[1]``,
``FILE:LINE``) for the delivery list and the warnings of a run.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from retention.config.credentials import open_to_others
from retention.config.findings import Findings
from retention.config.notify import NotifySettings, NotifyUrl, url_problem

ENV_NOTIFY_URLS = "RETENTION_NOTIFY_URLS"
URLS_FILE = "notify.urls_file"
# A file of a few URLs is a few hundred bytes; a larger one is not the file meant (and
# /dev/zero would never end).
MAX_FILE_BYTES = 64 * 1024
# Spaces always separate; a comma separates when the next URL or the end of the line
# follows it, and is part of the URL otherwise.
_SEPARATOR = re.compile(r"\s+|,(?=\s*(?:[A-Za-z][A-Za-z0-9+.-]*://|$))")

# (path of a key in retention.yaml, message) -> "retention.yaml:LINE: FIELD: MESSAGE"
Where = Callable[[tuple[str, ...], str], str]


@dataclass(frozen=True)
class Entry:
    """One URL of a text: its line (1-based), its place among the URLs of that line
    (1-based) and the URL."""

    line: int
    place: int
    url: str


@dataclass(frozen=True)
class GivenUrls:
    """The URLs one source gave, each with its place, and the source as ``config show``
    names it."""

    urls: list[NotifyUrl]
    places: list[str]
    source: str


def split_urls(text: str) -> list[Entry]:
    """The URLs of a text in the format of RETENTION_NOTIFY_URLS and notify.urls_file."""
    entries: list[Entry] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("#"):
            continue
        parts = [part for part in _SEPARATOR.split(line) if part]
        entries += [Entry(number, place, url) for place, url in enumerate(parts, start=1)]
    return entries


def env_urls(env: Mapping[str, str], problems: list[str]) -> GivenUrls | None:
    """The URLs of RETENTION_NOTIFY_URLS, or None when it is not set (or blank) or when
    any of its URLs is unusable (each is then a problem naming its index, and its line
    when the value has several)."""
    text = env.get(ENV_NOTIFY_URLS, "")
    if not text.strip():
        return None
    entries = split_urls(text)
    several_lines = len({entry.line for entry in entries}) > 1
    places = [f"{ENV_NOTIFY_URLS}[{index}]" for index in range(len(entries))]
    if not entries:
        problems.append(
            f"environment: {ENV_NOTIFY_URLS}: holds no URL, only comments: set it to one or "
            "more URLs (separated by spaces, commas or line breaks), or unset it"
        )
        return None

    def said(place: str, entry: Entry, problem: str) -> str:
        line = f" (line {entry.line})" if several_lines else ""
        return f"environment: {place}{line}: {problem}"

    return _checked(entries, places, f"env {ENV_NOTIFY_URLS}", problems, said)


def file_urls(path: Path, at: Where, problems: list[str], warnings: list[str]) -> GivenUrls | None:
    """The URLs of notify.urls_file, or None when it cannot be read or any of its URLs is
    unusable (a problem naming the file, and the line of each bad URL)."""
    setting = ("notify", "urls_file")
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        problems.append(at(setting, f"cannot read {path}: {exc.strerror or type(exc).__name__}"))
        return None
    if len(data) > MAX_FILE_BYTES:
        problems.append(at(setting, f"{path} is larger than 64 KiB: not a file of URLs"))
        return None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        problems.append(at(setting, f"{path} is not UTF-8 text"))
        return None
    entries = split_urls(text)
    if not entries:
        problems.append(
            at(
                setting,
                f"{path} holds no URL: write one a line (blank lines and lines starting "
                "with # are left out)",
            )
        )
        return None
    per_line = Counter(entry.line for entry in entries)
    places = [
        f"{path}:{entry.line}" + (f", URL {entry.place}" if per_line[entry.line] > 1 else "")
        for entry in entries
    ]
    given = _checked(
        entries,
        places,
        f"{URLS_FILE} ({path})",
        problems,
        lambda place, _entry, problem: at(setting, f"{place}: {problem}"),
    )
    if given is not None and (warning := open_to_others(path, URLS_FILE)) is not None:
        warnings.append(warning)
    return given


def _checked(
    entries: list[Entry],
    places: list[str],
    source: str,
    problems: list[str],
    said: Callable[[str, Entry, str], str],
) -> GivenUrls | None:
    """The URLs of ``entries`` at their ``places``, or None when any is unusable (each is a
    problem, in the words ``said`` gives it)."""
    bad = [
        said(place, entry, problem)
        for place, entry in zip(places, entries, strict=True)
        if (problem := url_problem(entry.url)) is not None
    ]
    problems += bad
    if bad:
        return None
    return GivenUrls([NotifyUrl(entry.url) for entry in entries], places, source)


def resolve_notify(
    settings: NotifySettings | None,
    *,
    from_env: GivenUrls | None,
    env_set: bool,
    at: Where,
    found: Findings,
) -> NotifySettings | None:
    """The notify: settings in force: ``settings`` (retention.yaml's, None without
    ``notify:``) with the URLs of the first source given, RETENTION_NOTIFY_URLS
    (``from_env``; ``env_set`` when it is set at all), notify.urls_file or notify.urls.
    RETENTION_NOTIFY_URLS alone turns notices on, with ``on`` at its default. None when
    there are no notices, or when a problem was found (added to ``found``)."""
    problems, warnings, sources = found.problems, found.warnings, found.sources
    urls_file = settings.urls_file if settings is not None else None
    given = [
        name
        for name, present in (
            (ENV_NOTIFY_URLS, env_set),
            (URLS_FILE, urls_file is not None),
            ("notify.urls", settings is not None and settings.urls is not None),
        )
        if present
    ]
    if len(given) > 1:
        warnings.append(
            f"notification URLs are given in {' and '.join(given)}: the notices go to those "
            f"of {given[0]} only (it replaces the others: {ENV_NOTIFY_URLS} wins over "
            f"{URLS_FILE}, which wins over notify.urls); remove the ones not meant"
        )
    if env_set:
        chosen = from_env
        if urls_file is not None:
            sources[URLS_FILE] = f"file (not read: {ENV_NOTIFY_URLS} is set)"
    elif urls_file is not None:
        chosen = file_urls(urls_file, at, problems, warnings)
    elif settings is not None and settings.urls is None:
        problems.append(
            at(
                ("notify",),
                "no URL to send notices to: set urls, or urls_file (a file of URLs, e.g. a "
                f"mounted Secret), or the environment variable {ENV_NOTIFY_URLS}",
            )
        )
        return None
    else:
        return settings  # notify.urls of retention.yaml, or no notices at all
    if chosen is None:
        return None
    sources["notify.urls"] = chosen.source
    return (settings or NotifySettings()).with_urls(chosen.urls, chosen.places)
