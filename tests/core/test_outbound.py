"""``chalicelib.core.outbound``: the address rules, ``REGISTRY_OUTBOUND_ALLOW``, and fetches
against local servers (a recording ``Listener`` stands for any port that must not be
reached). No test leaves the machine: every refused destination is refused before a
connection is tried."""

from __future__ import annotations

import ipaddress
import re
import socket
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from chalicelib.core import outbound
from chalicelib.core.settings import get_settings, outbound_allow
from tests.support.mirror_upstream import Listener

TIMEOUT = 5.0


# ----- the address rules --------------------------------------------------------------------


@pytest.mark.parametrize(
    "address",
    [
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "127.0.0.1",
        "127.8.9.10",
        "169.254.169.254",  # the cloud's metadata service
        "100.64.0.1",  # shared address space (carrier-grade NAT)
        "0.0.0.0",
        "224.0.0.1",  # multicast: Python calls it global
        "240.0.0.1",
        "255.255.255.255",
        "192.0.2.1",  # documentation
        "::1",
        "::",
        "fe80::1",
        "fc00::1",
        "fd00:ec2::254",  # AWS's IPv6 metadata service
        "ff02::1",
        "2001:db8::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "::ffff:169.254.169.254",
        "2002:7f00:1::1",  # 6to4 of 127.0.0.1
        "2002:a9fe:a9fe::1",  # 6to4 of 169.254.169.254
        "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
    ],
)
def test_non_public_addresses(address: str) -> None:
    assert not outbound.is_public(ipaddress.ip_address(address))


@pytest.mark.parametrize(
    "address", ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8", "2002:808:808::1"]
)
def test_public_addresses(address: str) -> None:
    assert outbound.is_public(ipaddress.ip_address(address))


def test_the_allow_list_is_read_as_hosts_host_ports_and_networks() -> None:
    allow = outbound_allow(
        " Git.Corp. , git.corp:8443, [fd00::5]:443, 10.20.0.0/16, fd00::/8, 127.0.0.1,"
        " ::FFFF:7F00:2, ::1,"
    )
    assert allow.hosts == {"git.corp", "127.0.0.1", "127.0.0.2", "::1"}
    assert allow.host_ports == {("git.corp", 8443), ("fd00::5", 443)}
    assert allow.networks == (
        ipaddress.ip_network("10.20.0.0/16"),
        ipaddress.ip_network("fd00::/8"),
    )
    assert outbound_allow("") == outbound_allow(" , ")


@pytest.mark.parametrize("entry", ["10.0.0.0/33", "git.corp:https", "git.corp:0", "x:70000"])
def test_a_malformed_entry_is_refused_at_start(entry: str) -> None:
    with pytest.raises(RuntimeError, match="REGISTRY_OUTBOUND_ALLOW"):
        outbound_allow(f"ok.example,{entry}")


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("file:///etc/passwd", "not http(s)"),
        ("ftp://example.com/x", "not http(s)"),
        ("gopher://127.0.0.1:6379/_INFO", "not http(s)"),
        ("http://user:secret@example.com/", "carries credentials"),
        ("http:///path", "names no host"),
        ("http://example.com:99999/", "not a valid URL"),
    ],
)
def test_only_http_urls_with_a_host_and_no_credentials(url: str, words: str) -> None:
    with pytest.raises(outbound.Refused, match=re.escape(words)) as refused:
        outbound.origin(url)
    assert "secret" not in str(refused.value)


# ----- fetching ---------------------------------------------------------------------------


def allow(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("REGISTRY_OUTBOUND_ALLOW", value)
    get_settings.cache_clear()


@pytest.fixture(autouse=True)
def nothing_listed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """As deployed: REGISTRY_OUTBOUND_ALLOW empty (the suite's conftest lists 127.0.0.1)."""
    allow(monkeypatch, "")
    yield
    get_settings.cache_clear()


class Server:
    """HTTP on 127.0.0.1: ``/ok`` answers 200 with the Authorization header it got,
    ``/to?<url>`` redirects (302) to ``<url>``."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.paths: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                server.paths.append(self.path)
                if self.path.startswith("/to?"):
                    self.send_response(302)
                    self.send_header("Location", self.path[len("/to?") :])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = f"ok {self.headers.get('Authorization')}".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[Server]:
    running = Server()
    yield running
    running.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    running = Listener()
    yield running
    running.close()


def get(url: str, where: outbound.Destinations, **headers: str) -> tuple[int, bytes]:
    with outbound.fetch(url, where, timeout=TIMEOUT, headers=headers) as response:
        return response.status, response.read_at_most(1024)


def refused(url: str, where: outbound.Destinations) -> str:
    with pytest.raises(outbound.Refused) as caught:
        get(url, where)
    return str(caught.value)


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "[::1]", "[::ffff:127.0.0.1]", "0.0.0.0", "10.0.0.1", "169.254.169.254"]
)
def test_an_own_origin_at_a_non_public_address_is_refused_unconnected(
    listener: Listener, host: str
) -> None:
    url = f"http://{host}:{listener.port}/latest/meta-data/"
    message = refused(url, outbound.Destinations.of(url))
    assert "not an allowed destination" in message and listener.connections == []


@pytest.mark.parametrize(
    ("listed", "allowed"),
    [
        ("127.0.0.1", True),
        ("127.0.0.1:{port}", True),
        ("127.0.0.0/8", True),
        ("localhost", False),  # names the host, not what it resolves to
        ("127.0.0.1:1", False),
        ("10.0.0.0/8", False),
    ],
)
def test_an_operator_lists_hosts_host_ports_and_networks(
    server: Server, monkeypatch: pytest.MonkeyPatch, listed: str, allowed: bool
) -> None:
    allow(monkeypatch, listed.format(port=server.port))
    url = f"{server.url}/ok"
    if allowed:
        assert get(url, outbound.Destinations.of(url)) == (200, b"ok None")
    else:
        refused(url, outbound.Destinations.of(url))
        assert server.paths == []


def test_a_trusted_origin_is_reached_and_no_other(server: Server, listener: Listener) -> None:
    """The operator's configured upstream counts as allowed, at any address; another origin
    (another port of the same host) does not."""
    trusted = outbound.Destinations.of(trusted=[server.url])
    assert get(f"{server.url}/ok", trusted) == (200, b"ok None")
    refused(f"http://127.0.0.1:{listener.port}/", trusted)
    assert listener.connections == []


def test_redirects_stay_within_the_destinations(
    server: Server, listener: Listener, monkeypatch: pytest.MonkeyPatch
) -> None:
    trusted = outbound.Destinations.of(trusted=[server.url])
    elsewhere = f"http://127.0.0.1:{listener.port}/latest/meta-data/"
    assert "not an allowed destination" in refused(f"{server.url}/to?{elsewhere}", trusted)
    assert listener.connections == []
    # Within the origin, followed; to a listed origin too, without the Authorization header.
    assert get(f"{server.url}/to?/ok", trusted, Authorization="Bearer t") == (200, b"ok Bearer t")
    allow(monkeypatch, "localhost")
    moved = f"{server.url}/to?http://localhost:{server.port}/ok"
    assert get(moved, trusted, Authorization="Bearer t") == (200, b"ok None")
    # A redirect to a file:// URL is refused as any non-http(s) link is.
    with pytest.raises(outbound.Refused, match="not http"):
        get(f"{server.url}/to?file:///etc/passwd", trusted)


def test_a_name_is_resolved_once_and_the_checked_address_connected(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DNS rebinding: a name that answers an allowed address when checked and another one
    later still reaches the checked address, for a resolution is never repeated."""
    real = socket.getaddrinfo
    answers: list[str] = []

    def rebinding(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != "rebind.test":
            return real(host, port, *args, **kwargs)
        answers.append(host)
        address = "127.0.0.1" if len(answers) == 1 else "192.0.2.1"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    allow(monkeypatch, "127.0.0.1/32")
    url = f"http://rebind.test:{server.port}/ok"
    assert get(url, outbound.Destinations.of(url)) == (200, b"ok None")
    assert answers == ["rebind.test"]


def test_a_name_with_any_non_public_address_is_refused(
    listener: Listener, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A public address among the answers does not carry a loopback one through (nothing
    is connected: the refusal comes before any connection, to either address)."""
    real = socket.getaddrinfo

    def mixed(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != "mixed.test":
            return real(host, port, *args, **kwargs)
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("8.8.8.8", port)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port)),
        ]

    monkeypatch.setattr(socket, "getaddrinfo", mixed)
    url = f"http://mixed.test:{listener.port}/"
    refused(url, outbound.Destinations.of(url))
    assert listener.connections == []


def test_failures_say_only_that_the_fetch_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A port that answers something else than HTTP is not described to the caller."""
    allow(monkeypatch, "127.0.0.1")
    banner = Listener()
    banner.ANSWER = b"SSH-2.0-OpenSSH_internal-secret-banner\r\n"
    try:
        url = f"http://127.0.0.1:{banner.port}/"
        with pytest.raises(outbound.Failed) as failed:
            get(url, outbound.Destinations.of(url))
    finally:
        banner.close()
    assert "could not be reached" in str(failed.value)
    assert "SSH" not in str(failed.value) and "secret" not in str(failed.value)


def test_an_answer_past_its_bound_is_refused(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    allow(monkeypatch, "127.0.0.1")
    url = f"{server.url}/ok"
    with (
        outbound.fetch(url, outbound.Destinations.of(url), timeout=TIMEOUT) as response,
        pytest.raises(outbound.Failed, match="larger than 3 bytes"),
    ):
        response.read_at_most(3)


def test_tls_on_the_checked_socket_verifies_the_host_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The socket goes to the checked address; the certificate is still checked against
    the URL's host name (the throwaway certificate names localhost and 127.0.0.1 only)."""
    from tests.e2e.test_provider_mirror_e2e import throwaway_ca

    ca, cert, key = throwaway_ca(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    tls = Server(context)
    trusting = ssl.create_default_context(cafile=str(ca))
    monkeypatch.setattr(outbound, "_tls", lambda: trusting)
    real = socket.getaddrinfo

    def other_name(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "other.test":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", other_name)
    allow(monkeypatch, "127.0.0.0/8")
    try:
        url = f"https://localhost:{tls.port}/ok"
        assert get(url, outbound.Destinations.of(url)) == (200, b"ok None")
        url = f"https://other.test:{tls.port}/ok"
        with pytest.raises(outbound.Failed, match="could not be reached"):
            get(url, outbound.Destinations.of(url))
    finally:
        tls.close()


# ----- urllib3 (dulwich's git client) -------------------------------------------------------


def test_the_urllib3_pool_manager_checks_every_connection(
    server: Server, listener: Listener, monkeypatch: pytest.MonkeyPatch
) -> None:
    where = outbound.Destinations.of(server.url)
    manager = outbound.pool_manager(where, timeout=TIMEOUT)
    with pytest.raises(outbound.Refused):
        manager.request("GET", f"{server.url}/ok")
    assert server.paths == []

    allow(monkeypatch, f"127.0.0.1:{server.port}")
    assert manager.request("GET", f"{server.url}/ok").data == b"ok None"
    elsewhere = f"http://127.0.0.1:{listener.port}/latest/meta-data/"
    with pytest.raises(outbound.Refused):
        manager.request("GET", f"{server.url}/to?{elsewhere}")
    assert listener.connections == []


# ----- the one JSON reader of upstream answers ---------------------------------------------


class CallersError(Exception):
    pass


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "the upstream registry answered with invalid JSON"),
        (b"\xff\xfe", "the upstream registry answered with invalid JSON"),
        (b'["a", "list"]', "the upstream registry answered with something else than an object"),
        (b"null", "the upstream registry answered with something else than an object"),
    ],
)
def test_json_object_raises_the_callers_error(body: bytes, message: str) -> None:
    with pytest.raises(CallersError) as raised:
        outbound.json_object(body, CallersError)
    assert str(raised.value) == message


def test_json_object_decodes_an_object() -> None:
    assert outbound.json_object(b'{"modules.v1": "/v1/modules/"}', CallersError) == {
        "modules.v1": "/v1/modules/"
    }
