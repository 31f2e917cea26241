"""A server-side HTTP Digest (MD5) checker for the tests: issues challenges, verifies answers.

The expected response is the simulator's (RFC 2617 with qop=auth, RFC 2069 without), so a
client that sends a wrong digest fails the test instead of passing on the header's presence;
this checker adds what the tests count and the stale answers they ask for.
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field

from retention.simulator.digest import REALM, expected_response, ha1_of, parse_authorization


def md5(text: str) -> str:
    """Hex MD5 of a UTF-8 string."""
    return hashlib.md5(text.encode()).hexdigest()  # noqa: S324 - the protocol's hash


@dataclass
class DigestChecker:
    """Challenges and verifies digest credentials the way the API does.

    ``literal_op`` sends the spec's literal challenge (``op="auth"``, i.e. no qop), which
    turns the client to the RFC 2069 digest.
    """

    username: str
    password: str
    literal_op: bool = False
    challenges: int = 0
    accepted: int = 0
    stale_next: int = 0  # call this many correct answers stale (each burns its nonce)
    stale_nonces: set[str] = field(default_factory=set)
    _valid_nonces: set[str] = field(default_factory=set)
    _counter: itertools.count[int] = field(default_factory=itertools.count)

    def challenge(self, *, stale: bool = False) -> str:
        """A new nonce and the WWW-Authenticate header value that carries it."""
        self.challenges += 1
        nonce = md5(f"nonce-{next(self._counter)}")
        self._valid_nonces.add(nonce)
        qop = 'op="auth"' if self.literal_op else 'qop="auth"'
        return (
            f'Digest realm="{REALM}", domain="", nonce="{nonce}", algorithm=MD5, '
            f"{qop}, stale={'true' if stale else 'false'}"
        )

    def expire_all_nonces(self) -> None:
        """Make every nonce issued so far stale (the next use gets stale=true)."""
        self.stale_nonces |= self._valid_nonces
        self._valid_nonces = set()

    def verify(  # noqa: PLR0911 - one exit per way a digest can be wrong reads clearest
        self, method: str, uri: str, authorization: str | None
    ) -> str:
        """Return "ok", "stale" (right key, old nonce) or "missing"/"bad"."""
        if not authorization or not authorization.lower().startswith("digest "):
            return "missing"
        fields = parse_authorization(authorization)
        if fields.get("username") != self.username or fields.get("uri") != uri:
            return "bad"
        nonce = fields.get("nonce") or ""
        ha1 = ha1_of(self.username, self.password)
        expected = expected_response(ha1, method, uri, fields, literal_op=self.literal_op)
        # An answer with qop to the literal op, or without to qop="auth", is wrong too.
        if expected is None or fields.get("response") != expected:
            return "bad"
        if nonce in self.stale_nonces:
            return "stale"
        if nonce not in self._valid_nonces:
            return "bad"
        if self.stale_next > 0:
            self.stale_next -= 1
            self._valid_nonces.discard(nonce)
            self.stale_nonces.add(nonce)
            return "stale"
        self.accepted += 1
        return "ok"


UNAUTHORIZED_HEADERS = {"Content-Type": "application/json;charset=ISO-8859-1"}
UNAUTHORIZED_BODY = (
    b'{"detail":"You are not authorized for this resource.","error":401,'
    b'"errorCode":"NOT_AUTHORIZED","reason":"Unauthorized"}'
)
