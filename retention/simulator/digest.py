"""HTTP Digest (MD5) authentication as the API does it, checked for real.

A request without valid credentials gets 401 with the spec's challenge:
``Digest realm="...", domain="", nonce="...", algorithm=MD5, qop="auth", stale=false``. In
``literal_op`` mode the challenge carries the spec's literal ``op="auth"`` instead of qop,
which makes clients answer with the RFC 2069 digest (no nc, no cnonce). Nonces expire after
``nonce_ttl`` seconds: a correct answer with an expired nonce gets ``stale=true``.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum

REALM = "MMS Public API"


def _md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()  # noqa: S324 - the protocol's hash


def parse_authorization(header: str) -> dict[str, str]:
    """The fields of a ``Digest k=v, k="v"`` header (quoted values may hold commas)."""
    fields: dict[str, str] = {}
    text = header[len("digest") :].strip() if header.lower().startswith("digest") else ""
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " ,":
            i += 1
        eq = text.find("=", i)
        if eq < 0:
            break
        key = text[i:eq].strip().lower()
        i = eq + 1
        if i < n and text[i] == '"':
            end = i + 1
            value = []
            while end < n and text[end] != '"':
                if text[end] == "\\" and end + 1 < n:
                    end += 1
                value.append(text[end])
                end += 1
            fields[key] = "".join(value)
            i = end + 1
        else:
            end = text.find(",", i)
            end = n if end < 0 else end
            fields[key] = text[i:end].strip()
            i = end
    return fields


def expected_response(
    ha1: str, method: str, uri: str, fields: Mapping[str, str], *, literal_op: bool
) -> str | None:
    """The response a correct answer to our challenge carries (RFC 2617 with qop=auth; RFC
    2069 when the challenge said the spec's literal ``op``), or None when the answer is not
    of the form the challenge asked for. ``ha1`` is MD5(username:realm:password)."""
    ha2 = _md5(f"{method}:{uri}")
    nonce, qop = fields.get("nonce", ""), fields.get("qop")
    if literal_op:
        return None if qop else _md5(f"{ha1}:{nonce}:{ha2}")
    if qop != "auth" or "nc" not in fields or "cnonce" not in fields:
        return None
    return _md5(f"{ha1}:{nonce}:{fields['nc']}:{fields['cnonce']}:auth:{ha2}")


def ha1_of(username: str, password: str) -> str:
    """MD5(username:realm:password), the secret half of every expected response."""
    return _md5(f"{username}:{REALM}:{password}")


class Verdict(Enum):
    """The outcome of checking a request's credentials."""

    OK = "ok"
    MISSING = "missing"
    BAD = "bad"
    STALE = "stale"


@dataclass
class DigestAuthority:
    """Issues nonces and checks digest answers for one key pair."""

    public_key: str
    private_key: str
    literal_op: bool = False
    nonce_ttl: float = 300.0

    def __post_init__(self) -> None:
        self._nonces: dict[str, float] = {}
        self._used: set[str] = set()
        self._lock = threading.Lock()
        self._ha1 = ha1_of(self.public_key, self.private_key)

    def challenge(self, *, stale: bool = False) -> str:
        """A fresh nonce in a WWW-Authenticate header value."""
        nonce = secrets.token_hex(16)
        now = time.monotonic()
        with self._lock:
            if len(self._nonces) > 10_000:
                # Forget nonces long expired so a long run does not grow without bound.
                self._nonces = {k: t for k, t in self._nonces.items() if now - t < self.nonce_ttl}
                self._used &= self._nonces.keys()
            self._nonces[nonce] = now
        qop = 'op="auth"' if self.literal_op else 'qop="auth"'
        return (
            f'Digest realm="{REALM}", domain="", nonce="{nonce}", algorithm=MD5, {qop}, '
            f"stale={'true' if stale else 'false'}"
        )

    def expire_nonces(self) -> None:
        """Make every nonce issued so far stale (as if nonce_ttl had passed)."""
        with self._lock:
            self._nonces = dict.fromkeys(self._nonces, float("-inf"))

    def verify(  # noqa: PLR0911 - one exit per way an answer can be wrong reads clearest
        self,
        method: str,
        uri: str,
        authorization: str | None,
        *,
        stale_fault: Callable[[], bool] | None = None,
    ) -> Verdict:
        """Check a request's Authorization header against the method and raw request URI.

        ``stale_fault`` may expire a nonce that was already used successfully (never one on
        its first use: a real server does not call the nonce it just issued stale).
        """
        if not authorization or not authorization.lower().startswith("digest "):
            return Verdict.MISSING
        fields = parse_authorization(authorization)
        nonce = fields.get("nonce", "")
        if fields.get("username") != self.public_key or fields.get("uri") != uri:
            return Verdict.BAD
        if fields.get("algorithm", "MD5").upper() != "MD5":
            return Verdict.BAD
        expected = expected_response(self._ha1, method, uri, fields, literal_op=self.literal_op)
        if expected is None or not hmac.compare_digest(fields.get("response", ""), expected):
            return Verdict.BAD
        with self._lock:
            issued = self._nonces.get(nonce)
        if issued is None:
            return Verdict.BAD
        if time.monotonic() - issued > self.nonce_ttl:
            return Verdict.STALE
        with self._lock:
            reused = nonce in self._used
            self._used.add(nonce)
        if reused and stale_fault is not None and stale_fault():
            with self._lock:
                self._nonces[nonce] = float("-inf")
            return Verdict.STALE
        return Verdict.OK
