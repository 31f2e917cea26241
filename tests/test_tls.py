"""TLS failures say what they mean, tested against real handshakes: a plain-HTTP server
behind an https:// URL, and servers with certificates made by openssl for the occasion (a
test CA, a certificate for another name, an expired one)."""

from __future__ import annotations

import json
import logging
import shutil
import ssl
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from retention.api.values import TLSConfig
from retention.errors import EXIT_UNREACHABLE, TLSError
from retention.ops import logs
from tests.support.client import PRIVATE_KEY, PUBLIC_KEY, fixed_clock, make_client
from tests.support.digest import DigestChecker
from tests.support.fakeapi import snapshot
from tests.support.wire_server import WireState, serve, serve_tls

OPENSSL = shutil.which("openssl")
LEAF_EXTENSIONS = (
    "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n"
    "authorityKeyIdentifier=keyid\nsubjectKeyIdentifier=hash\n"
)


@dataclass(frozen=True)
class Certs:
    """A test CA, a second CA that signed nothing here, and server certificates by the CA."""

    folder: Path
    ca: Path
    other_ca: Path
    key: Path

    def server(self, name: str) -> ssl.SSLContext:
        """A server context with the certificate ``name`` (good, other-name, expired)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.folder / f"{name}.pem", self.key)
        return context


def openssl(*args: str, cwd: Path) -> None:
    """Run openssl; a failure shows its stderr."""
    assert OPENSSL is not None
    done = subprocess.run([OPENSSL, *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def make_ca(folder: Path, name: str) -> None:
    """A self-signed CA certificate NAME.pem with its key NAME.key."""
    openssl(
        *("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"),
        *("-nodes", "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "2"),
        *("-subj", f"/CN=retention test {name}"),
        *("-addext", "basicConstraints=critical,CA:TRUE"),
        *("-addext", "keyUsage=critical,keyCertSign,cRLSign"),
        cwd=folder,
    )


def sign(folder: Path, name: str, alt_names: str, days: str) -> None:
    """NAME.pem: the server key's certificate for ``alt_names``, signed by the test CA."""
    (folder / f"{name}.ext").write_text(f"subjectAltName={alt_names}\n{LEAF_EXTENSIONS}")
    openssl(
        *("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key"),
        *("-CAcreateserial", "-days", days, "-extfile", f"{name}.ext", "-out", f"{name}.pem"),
        cwd=folder,
    )


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    """The certificates, made with the openssl command (skipped only without it)."""
    if OPENSSL is None:
        pytest.skip("the openssl command is not installed")
    folder = tmp_path_factory.mktemp("certs")
    make_ca(folder, "ca")
    make_ca(folder, "other-ca")
    openssl(
        *("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"),
        *("-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"),
        cwd=folder,
    )
    sign(folder, "good", "IP:127.0.0.1,DNS:localhost", "2")
    sign(folder, "other-name", "DNS:other.example", "2")
    sign(folder, "expired", "IP:127.0.0.1,DNS:localhost", "-1")  # ended a day before it began
    return Certs(folder, folder / "ca.pem", folder / "other-ca.pem", folder / "server.key")


@pytest.fixture
def state() -> WireState:
    """The wire server's script: answers one snapshot."""
    return WireState(checker=DigestChecker(PUBLIC_KEY, PRIVATE_KEY), body=snapshot("s1"))


@pytest.fixture(autouse=True)
def system_bundle_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """REQUESTS_CA_BUNDLE and CURL_CA_BUNDLE set, as many container images set them."""
    bundle = ssl.get_default_verify_paths().openssl_cafile
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", bundle)
    monkeypatch.setenv("CURL_CA_BUNDLE", bundle)


@contextmanager
def server(state: WireState, certs: Certs, name: str) -> Iterator[str]:
    """The wire server behind TLS with certificate ``name``; yields its base URL."""
    with serve_tls(state, certs.server(name)) as url:
        yield url


def tls_error(url: str, tls: TLSConfig | None = None) -> TLSError:
    """The TLSError a call to ``url`` raises."""
    with make_client(url, tls=tls or TLSConfig()) as api, pytest.raises(TLSError) as info:
        api.get_snapshot("p1", "c1", "s1")
    assert info.value.exit_code == EXIT_UNREACHABLE
    return info.value


def where(url: str) -> str:
    """host:port of a base URL."""
    return urlsplit(url).netloc


def test_https_to_a_plain_http_server_says_it_does_not_answer_tls(state: WireState) -> None:
    """https:// to a server that speaks plain HTTP says so and what to change, and does not
    send the user after a CA bundle."""
    with serve(state) as plain:
        url = plain.replace("http://", "https://")
        message = tls_error(url).message

    assert message.startswith(f"{where(url)} does not answer TLS")
    assert message.endswith(
        "if it serves plain HTTP, use http:// in api.base_url; otherwise check the port"
    )
    assert "ca_bundle" not in message


def test_a_trusted_certificate_works_with_ca_bundle_despite_the_environment(
    state: WireState, certs: Certs
) -> None:
    """api.ca_bundle holding the CA is enough: REQUESTS_CA_BUNDLE in the environment does not
    override it (requests would let it, for a session's setting)."""
    with (
        server(state, certs, "good") as url,
        make_client(url, tls=TLSConfig(ca_bundle=str(certs.ca))) as api,
    ):
        assert api.get_snapshot("p1", "c1", "s1").id == "s1"


def test_a_certificate_from_an_unknown_ca_says_to_set_ca_bundle(
    state: WireState, certs: Certs
) -> None:
    """A certificate no trusted CA signed: not trusted, set api.ca_bundle to the CA's file."""
    with server(state, certs, "good") as url:
        message = tls_error(url).message

    assert message == (
        f"the TLS certificate of {where(url)} is not trusted (unable to get local issuer "
        "certificate): set api.ca_bundle to the PEM file of the CA that signed it"
    )


def test_a_ca_bundle_without_the_signing_ca_is_named(state: WireState, certs: Certs) -> None:
    """A ca_bundle that holds another CA: the message names the file that lacks the CA."""
    with server(state, certs, "good") as url:
        message = tls_error(url, TLSConfig(ca_bundle=str(certs.other_ca))).message

    assert message.startswith(f"the TLS certificate of {where(url)} is not trusted")
    assert f"api.ca_bundle ({certs.other_ca}) does not hold the CA that signed it" in message


def test_a_certificate_for_another_name_says_so(state: WireState, certs: Certs) -> None:
    """A trusted certificate made for another host name: the name is the problem."""
    with server(state, certs, "other-name") as url:
        message = tls_error(url, TLSConfig(ca_bundle=str(certs.ca))).message

    assert message.startswith(f"the TLS certificate of {where(url)} is for another name (")
    assert "'127.0.0.1'" in message
    assert message.endswith(
        "use the name in the certificate in api.base_url, or have the certificate fixed"
    )


def test_an_expired_certificate_says_it_has_expired(state: WireState, certs: Certs) -> None:
    """A trusted certificate past its end date: expired, not untrusted."""
    with server(state, certs, "expired") as url:
        message = tls_error(url, TLSConfig(ca_bundle=str(certs.ca))).message

    assert message.startswith(
        f"the TLS certificate of {where(url)} has expired (certificate has expired)"
    )


def test_verify_tls_off_is_said_once_and_not_by_urllib3_for_every_request(
    state: WireState, certs: Certs, capsys: pytest.CaptureFixture[str]
) -> None:
    """verify_tls: false against an untrusted certificate works, with our one warning and
    none of urllib3's per-request InsecureRequestWarning text (json logs stay JSON)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        logs.configure(debug=False, log_format="json", clock=fixed_clock)
        with (
            server(state, certs, "good") as url,
            make_client(url, tls=TLSConfig(verify=False)) as api,
        ):
            ids = [api.get_snapshot("p1", "c1", "s1").id for _ in range(3)]
    finally:
        logging.captureWarnings(False)
        root.handlers[:] = handlers
        root.setLevel(level)

    records = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert ids == ["s1", "s1", "s1"]
    assert [r["message"] for r in records] == [
        "TLS verification is off (verify_tls: false): answers can be forged"
    ]
