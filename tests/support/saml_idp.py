"""A local SAML identity provider for the end-to-end tests: pysaml2's IdP (an implementation
independent of ours, signing with Debian's ``xmlsec1``) behind a tiny HTTP server.

* ``GET /sso`` (HTTP-Redirect binding): takes the registry's AuthnRequest, "logs in" the
  configured ``IdpUser`` without asking, and answers the HTML form pysaml2 builds for the
  HTTP-POST binding, which a script submits to the ACS at once (with ``RelayState``).
* ``GET /unsolicited?relay=``: IdP-initiated sign-in of the same user (no InResponseTo).
* ``GET /other/unsolicited``: the same, signed by another IdP with another key (which the
  registry must refuse).
* ``GET /slo`` (HTTP-Redirect): a LogoutRequest from the registry, parsed by pysaml2 and
  recorded (``Idp.logouts``), answered with a small page whose link "Back to the registry"
  carries pysaml2's signed LogoutResponse to the registry's single logout URL.
* ``Idp.logout_request_url(email)``: IdP-initiated single logout, the URL of the registry's
  single logout carrying pysaml2's signed LogoutRequest (``other=True``: signed by the other
  IdP's key; ``sign=False``: unsigned). The registry's LogoutResponse comes back to
  ``GET /slo``, where its status is recorded (``Idp.logout_answers``).

It listens on ``https://localhost`` at a free port (TLS with its own self-signed certificate:
the registry takes only an https:// SSO URL; the test's browser ignores the certificate),
while the registry listens on ``http://127.0.0.1``: a different site, so the form POST back
to the ACS is cross-site as with a real IdP.
"""

from __future__ import annotations

import html
import shutil
import ssl
import threading
import urllib.parse
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from tests.support.admin_servers import free_port

with warnings.catch_warnings():  # pysaml2 names a cipher mode cryptography deprecates
    warnings.simplefilter("ignore")
    from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
    from saml2.authn_context import PASSWORD
    from saml2.config import IdPConfig
    from saml2.saml import NAME_FORMAT_BASIC, NAMEID_FORMAT_EMAILADDRESS, NameID
    from saml2.server import Server
    from saml2.time_util import in_a_while
    from saml2.xmldsig import DIGEST_SHA256, SIG_RSA_SHA256


@dataclass
class IdpUser:
    """Who the IdP signs in, and the attributes it asserts about them."""

    email: str
    username: str
    groups: list[str] = field(default_factory=list)


@dataclass
class Logout:
    name_id: str
    issuer: str
    session_indexes: list[str]


def _key_pair(directory: Path, name: str) -> tuple[Path, Path]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    moment = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(moment - timedelta(days=1))
        .not_valid_after(moment + timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_file, cert_file = directory / f"{name}.key", directory / f"{name}.crt"
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return key_file, cert_file


class Idp:
    """The IdP (and a second one with another key) for one registry's SP metadata."""

    def __init__(self, directory: Path, base: str, sp_metadata: str) -> None:
        self.base = base
        self.user = IdpUser("nobody@example.com", "nobody")
        self.logouts: list[Logout] = []
        self.logout_answers: list[str] = []  # the StatusCode of each LogoutResponse received
        self.requests: list[str] = []  # the AuthnRequest IDs received
        self.server = self._server(directory, "idp", sp_metadata)
        self.other = self._server(directory, "other-idp", sp_metadata)
        self.cert = (directory / "idp.crt").read_text()
        self.other_cert = (directory / "other-idp.crt").read_text()
        self.tls_cert = str(directory / "idp.crt")  # also its HTTPS certificate

    def _server(self, directory: Path, name: str, sp_metadata: str) -> Server:
        key_file, cert_file = _key_pair(directory, name)
        config = IdPConfig()
        config.load(
            {
                "entityid": f"{self.base}/{name}",
                "service": {
                    "idp": {
                        "endpoints": {
                            "single_sign_on_service": [(f"{self.base}/sso", BINDING_HTTP_REDIRECT)],
                            "single_logout_service": [(f"{self.base}/slo", BINDING_HTTP_REDIRECT)],
                        },
                        "policy": {
                            "default": {
                                "lifetime": {"minutes": 5},
                                "attribute_restrictions": None,
                                "name_form": NAME_FORMAT_BASIC,
                            }
                        },
                        "name_id_format": [NAMEID_FORMAT_EMAILADDRESS],
                        "want_authn_requests_signed": False,
                    }
                },
                "key_file": str(key_file),
                "cert_file": str(cert_file),
                "xmlsec_binary": shutil.which("xmlsec1"),
                "metadata": {"inline": [sp_metadata]},
                "delete_tmpfiles": True,
            }
        )
        return Server(config=config)

    def _identity(self) -> dict[str, list[str]]:
        return {"Username": [self.user.username], "MemberOf": list(self.user.groups)}

    def _answer(self, server: Server, args: dict[str, Any], relay: str) -> str:
        """The auto-submitting HTML form carrying a signed Response for ``self.user``."""
        response = server.create_authn_response(
            self._identity(),
            userid=self.user.email,
            name_id=NameID(format=NAMEID_FORMAT_EMAILADDRESS, text=self.user.email),
            authn={"class_ref": PASSWORD},
            sign_assertion=True,
            sign_response=True,
            sign_alg=SIG_RSA_SHA256,
            digest_alg=DIGEST_SHA256,
            **args,
        )
        http = server.apply_binding(
            BINDING_HTTP_POST, str(response), args["destination"], relay, response=True
        )
        return str(http["data"])

    def sign_on(self, query: dict[str, str]) -> str:
        request = self.server.parse_authn_request(query["SAMLRequest"], BINDING_HTTP_REDIRECT)
        self.requests.append(request.message.id)
        args = self.server.response_args(request.message, [BINDING_HTTP_POST])
        args.pop("binding", None)
        return self._answer(self.server, args, query.get("RelayState", ""))

    def unsolicited(self, server: Server, relay: str) -> str:
        (sp_entity_id,) = list(server.metadata.keys())
        sp = server.metadata[sp_entity_id]["spsso_descriptor"][0]
        acs = sp["assertion_consumer_service"][0]["location"]
        args = {"destination": acs, "in_response_to": None, "sp_entity_id": sp_entity_id}
        args["name_id_policy"] = None
        return self._answer(server, args, relay)

    def sp_slo(self) -> tuple[str, str]:
        """(the SP's entity id, its single logout URL) from its metadata."""
        (sp_entity_id,) = list(self.server.metadata.keys())
        sp = self.server.metadata[sp_entity_id]["spsso_descriptor"][0]
        return sp_entity_id, sp["single_logout_service"][0]["location"]

    @staticmethod
    def _redirect(server: Server, xml: str, destination: str, relay: str, **kw: Any) -> str:
        """``destination`` carrying ``xml`` by pysaml2's HTTP-Redirect binding (its own
        query-string signature, RSA-SHA256, unless ``sign=False``)."""
        kw.setdefault("sign", True)
        http = server.apply_binding(
            BINDING_HTTP_REDIRECT, xml, destination, relay, sigalg=SIG_RSA_SHA256, **kw
        )
        return str(dict(http["headers"])["Location"])

    def logout_request_url(
        self, email: str, *, other: bool = False, sign: bool = True, relay: str = ""
    ) -> str:
        """IdP-initiated single logout of ``email`` (see the module)."""
        server = self.other if other else self.server
        sp_entity_id, slo = self.sp_slo()
        _, request = server.create_logout_request(
            slo,
            sp_entity_id,
            name_id=NameID(format=NAMEID_FORMAT_EMAILADDRESS, text=email),
            expire=in_a_while(minutes=5),
            sign=False,  # the redirect binding signs the query string instead
        )
        return self._redirect(server, str(request), slo, relay, sign=sign)

    def logout_response_url(self, request: Any) -> str:
        """pysaml2's signed LogoutResponse (Success) to the registry's LogoutRequest."""
        response = self.server.create_logout_response(request, [BINDING_HTTP_REDIRECT], sign=False)
        _, slo = self.sp_slo()
        return self._redirect(self.server, str(response), slo, "", response=True)

    def single_logout(self, query: dict[str, str]) -> str:
        if "SAMLResponse" in query:  # the registry's answer to logout_request_url's request
            answer = self.server.parse_logout_request_response(
                query["SAMLResponse"], BINDING_HTTP_REDIRECT
            )
            self.logout_answers.append(str(answer.response.status.status_code.value))
            return "<!doctype html><title>Done</title><h1>The registry signed you out</h1>"
        request = self.server.parse_logout_request(query["SAMLRequest"], BINDING_HTTP_REDIRECT)
        message = request.message
        self.logouts.append(
            Logout(
                message.name_id.text,
                message.issuer.text,
                [s.text for s in message.session_index or []],
            )
        )
        back = html.escape(self.logout_response_url(message))
        return (
            "<!doctype html><title>Signed out</title><h1>Signed out at the IdP</h1>"
            f'<p><a id="back" href="{back}">Back to the registry</a></p>'
        )


def _handler(idp: Idp) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def do_GET(self) -> None:  # noqa: N802
            parts = urllib.parse.urlsplit(self.path)
            query = dict(urllib.parse.parse_qsl(parts.query))
            try:
                if parts.path == "/sso":
                    body = idp.sign_on(query)
                elif parts.path == "/unsolicited":
                    body = idp.unsolicited(idp.server, query.get("relay", ""))
                elif parts.path == "/other/unsolicited":
                    body = idp.unsolicited(idp.other, query.get("relay", ""))
                elif parts.path == "/slo":
                    body = idp.single_logout(query)
                else:
                    self.send_error(404)
                    return
            except Exception as error:  # noqa: BLE001 - the test reads it from the page
                body = f"<!doctype html><title>IdP error</title><pre>{error!r}</pre>"
                self.send_response(500)
            else:
                self.send_response(200)
            data = body.encode()
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextmanager
def saml_idp(directory: Path, sp_metadata: str) -> Iterator[Idp]:
    """The IdP serving at ``https://localhost:<free port>`` until the block ends."""
    port = free_port()
    idp = Idp(directory, f"https://localhost:{port}", sp_metadata)
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(idp))
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(directory / "idp.crt", directory / "idp.key")
    server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield idp
    finally:
        server.shutdown()
        server.server_close()
