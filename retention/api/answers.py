"""Reading an API answer: its status checked, its ``envelope=true`` wrapper taken off, its
body validated into a model, and each way that can fail raised as the ``ApiError`` that names
it (the wording of what a failure means is in failures.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import msgspec
from pydantic import ValidationError

from retention.api.endpoints import Endpoint
from retention.api.failures import describe_not_json, error_message
from retention.api.walked import problem_of
from retention.errors import (
    AuthenticationError,
    MalformedResponseError,
    RequestInfo,
    ResponseInfo,
    status_error_class,
)

if TYPE_CHECKING:
    import requests

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

# The real service sends X-MongoDB-Service-Version (every vendor answer on record); the API
# document we started from writes X-Server-Service-Version. Either is read, the real first.
SERVICE_VERSION_HEADERS = ("X-MongoDB-Service-Version", "X-Server-Service-Version")


@dataclass
class Answer:
    """A successful answer: the raw body, or the unwrapped content in envelope mode."""

    raw: bytes
    request: RequestInfo
    response: ResponseInfo
    content: Any = None
    unwrapped: bool = False


def service_version(headers: Mapping[str, str]) -> str | None:
    """The service version an answer's headers give, if any."""
    return next((v for name in SERVICE_VERSION_HEADERS if (v := headers.get(name))), None)


def check_answer(
    endpoint: Endpoint,
    request: RequestInfo,
    response: requests.Response,
    raw: bytes,
    version: str | None,
    *,
    envelope: bool,
) -> Answer:
    """The answer if its status (the envelope's, in envelope mode) is a success; otherwise
    the error its status means."""
    name = str(endpoint)
    status = response.status_code
    info = ResponseInfo(
        status=status,
        body_excerpt=ResponseInfo.excerpt(raw),
        content_type=response.headers.get("Content-Type", ""),
        service_version=version,
    )
    content: Any = None
    unwrapped = False
    if envelope and 200 <= status < 300:
        content, status = unwrap_envelope(name, request, info, raw)
        unwrapped = True
        info = replace(info, status=status)  # the status the envelope reports
    if status == 401:
        raise AuthenticationError(
            "the API refused the credentials; check RETENTION_PUBLIC_KEY and the private "
            "key, and that this host is on the key's API access list",
            endpoint=name,
            request=request,
            response=info,
        )
    if not 200 <= status < 300:
        cls = status_error_class(status)
        raise cls(error_message(status, raw), endpoint=name, request=request, response=info)
    return Answer(raw, request, info, content, unwrapped)


class Decoder(Protocol[T_co]):
    """What reads an answer's body into its model: a pydantic TypeAdapter, or the msgspec
    decoder of walked snapshots (retention.api.walked)."""

    def validate_json(self, data: bytes, /) -> T_co:
        """The model from the raw body."""
        ...

    def validate_python(self, content: Any, /) -> T_co:
        """The model from an envelope's already parsed content."""
        ...


def parse_answer(endpoint: Endpoint, answer: Answer, adapter: Decoder[T]) -> T:
    """The answer's body validated into its model; MalformedResponseError when it does not
    have the documented shape."""
    try:
        if answer.unwrapped:
            return adapter.validate_python(answer.content)
        return adapter.validate_json(answer.raw)
    except ValidationError as exc:
        problem = _describe_invalid(answer, exc)
    except msgspec.ValidationError as exc:  # before DecodeError, its base class
        where, what = problem_of(exc)
        problem = f"the answer does not have the documented shape: {where or '(body)'}: {what}"
    except msgspec.DecodeError as exc:
        problem = describe_not_json(answer.raw, answer.response.content_type, exc)
    raise MalformedResponseError(
        problem, endpoint=str(endpoint), request=answer.request, response=answer.response
    )


def unwrap_envelope(
    name: str, request: RequestInfo, info: ResponseInfo, raw: bytes
) -> tuple[Any, int]:
    """Return (content, real status) of an ``envelope=true`` answer.

    Single results come as ``{"status": N, "content": {...}}``; lists come as the list
    wrapper with a ``status`` field added.
    """
    try:
        body = json.loads(raw)
    except ValueError as exc:
        problem = describe_not_json(raw, info.content_type, exc)
    else:
        if isinstance(body, dict) and isinstance(body.get("status"), int):
            return body.get("content", body), int(body["status"])
        problem = "envelope=true answer has no integer 'status' field"
    raise MalformedResponseError(problem, endpoint=name, request=request, response=info)


def _describe_invalid(answer: Answer, exc: ValidationError) -> str:
    errors = exc.errors(include_url=False)
    if errors and errors[0]["type"] == "json_invalid":
        return describe_not_json(
            answer.raw, answer.response.content_type, ValueError(errors[0]["msg"])
        )
    shown = "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '(body)'}: {err['msg']}" for err in errors[:3]
    )
    more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
    return f"the answer does not have the documented shape: {shown}{more}"
