"""What a failed request means, in one line a person can act on: the service's error
body (its errorCode first), a body that is not JSON (a proxy's HTML page, a cut answer),
and TLS failures told apart (no TLS on an https URL, an untrusted CA, another host name,
an expired certificate). The client raises; this module only words.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from urllib3.exceptions import MaxRetryError

from retention.api.values import BASE_URL_SETTING, TLSConfig
from retention.errors import ResponseInfo


def error_message(status: int, raw: bytes) -> str:
    """A one-line message from an error body ``{detail, error, errorCode, parameters,
    reason}``: the service's errorCode (what its documentation and support look up) and its
    detail, or an excerpt of a body that is not one."""
    detail, code = "", ""
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if isinstance(body, dict):
        inner = body.get("content")
        content: dict[str, Any] = inner if isinstance(inner, dict) else body
        for key in ("detail", "message", "reason", "error"):
            value = content.get(key)
            if isinstance(value, str) and value:
                detail = value
                break
        if isinstance(content.get("errorCode"), str):
            code = content["errorCode"]
    if not detail:
        detail = code or ResponseInfo.excerpt(raw) or "(empty body)"
    elif code:
        detail = f"{code}: {detail}"
    return f"the API answered {status}: {detail}"


def describe_not_json(raw: bytes, content_type: str, exc: Exception) -> str:
    start = raw.lstrip()[:1]
    if start == b"<" or "html" in content_type.lower():
        return (
            f"expected JSON but got {content_type or 'a body'} that looks like HTML "
            "(a proxy, load balancer or login page answered instead of the API?)"
        )
    if not raw:
        return "expected JSON but the body is empty"
    return f"the body is not valid JSON ({exc}); was the answer cut off?"


# OpenSSL's words for a handshake answered by something that does not speak TLS (an
# HTTP server answers the ClientHello with "HTTP/1.1 400"): 1.1/3.0 say wrong version
# number, 3.2 and later record layer failure; packet length too long and http request are
# older spellings.
_NOT_TLS = (
    "wrong_version_number",
    "wrong version number",
    "record layer failure",
    "record_layer_failure",
    "packet length too long",
    "packet_length_too_long",
    "http_request",
    "unknown protocol",
)
# X509 verify codes (openssl/x509_vfy.h) of a certificate whose chain we do not trust.
_UNTRUSTED_CODES = frozenset({2, 18, 19, 20, 21, 27})
_EXPIRED_CODE = 10
_NOT_YET_VALID_CODE = 9
# Host name, e-mail and IP address mismatch.
_MISMATCH_CODES = frozenset({62, 63, 64})


@dataclass(frozen=True)
class TLSFailure:
    """A TLS failure in words: what happened, and the one thing to change."""

    diagnosis: str
    remedy: str


def describe_tls_failure(  # noqa: PLR0911 - one return per kind of failure
    exc: BaseException, base_url: str, tls: TLSConfig, setting: str = BASE_URL_SETTING
) -> TLSFailure:
    """What a TLS failure means and what to do about it: a server that does not speak TLS,
    a certificate we do not trust, one for another name, an expired one. ``setting`` names
    where the base URL was set (api.base_url, or the variable that overrides it)."""
    where = host_port(base_url)
    found = _ssl_error(exc)
    detail = _ssl_detail(found) if found is not None else first_line(exc)
    lowered = " ".join(str(e) for e in _chain(exc)).lower()
    code = getattr(found, "verify_code", None)
    if isinstance(found, ssl.SSLCertVerificationError) or code is not None:
        if code in _MISMATCH_CODES or "mismatch" in lowered or "doesn't match" in lowered:
            return TLSFailure(
                f"the TLS certificate of {where} is for another name ({detail})",
                f"use the name in the certificate in {setting}, or have the certificate fixed",
            )
        if code == _EXPIRED_CODE or "certificate has expired" in lowered:
            return TLSFailure(
                f"the TLS certificate of {where} has expired ({detail})",
                "the server needs a renewed certificate (check this host's clock too)",
            )
        if code == _NOT_YET_VALID_CODE or "not yet valid" in lowered:
            return TLSFailure(
                f"the TLS certificate of {where} is not valid yet ({detail})",
                "check this host's clock, and the server's certificate",
            )
        if code in _UNTRUSTED_CODES or "certificate_verify_failed" in lowered:
            bundle = (
                f"api.ca_bundle ({tls.ca_bundle}) does not hold the CA that signed it: point it "
                "at that CA's PEM file"
                if tls.ca_bundle
                else "set api.ca_bundle to the PEM file of the CA that signed it"
            )
            return TLSFailure(f"the TLS certificate of {where} is not trusted ({detail})", bundle)
    if any(marker in lowered for marker in _NOT_TLS):
        return TLSFailure(
            f"{where} does not answer TLS ({detail})",
            f"if it serves plain HTTP, use http:// in {setting}; otherwise check the port",
        )
    if "eof" in lowered or "connection reset" in lowered:
        return TLSFailure(
            f"{where} closed the connection during the TLS handshake ({detail})",
            "check the port, and that it serves HTTPS (a proxy may refuse this host)",
        )
    return TLSFailure(
        f"TLS failed with {where}: {detail}", "check api.ca_bundle, or the server's certificate"
    )


def host_port(base_url: str) -> str:
    """ "host:port" of a base URL, the scheme's port when it names none."""
    parts = urlsplit(base_url)
    try:
        port = parts.port
    except ValueError:
        port = None
    default = 443 if parts.scheme == "https" else 80
    return f"{parts.hostname or base_url}:{port or default}"


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception, its causes, contexts, arguments and urllib3 reasons, each once."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo and len(seen) < 32:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        linked = [current.__cause__, current.__context__, getattr(current, "reason", None)]
        linked += list(current.args)
        todo += [e for e in linked if isinstance(e, BaseException)]


def _ssl_error(exc: BaseException) -> ssl.SSLError | None:
    """The ssl module's error behind a requests or urllib3 one (the most specific)."""
    found = [e for e in _chain(exc) if isinstance(e, ssl.SSLError)]
    verify = [e for e in found if isinstance(e, ssl.SSLCertVerificationError)]
    return (verify or found or [None])[0]


def _ssl_detail(error: ssl.SSLError) -> str:
    """OpenSSL's reason in words: "self-signed certificate", "wrong version number"."""
    message = getattr(error, "verify_message", None)
    if message:
        return str(message).rstrip(".")
    reason = getattr(error, "reason", None)
    if reason:
        return str(reason).replace("_", " ").lower()
    return first_line(error)


def urllib3_cause(exc: BaseException) -> BaseException | None:
    """The urllib3 error behind a requests exception (the reason of a MaxRetryError)."""
    for arg in exc.args:
        if isinstance(arg, MaxRetryError):
            return arg.reason
        if isinstance(arg, BaseException):
            return arg
    return None


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
