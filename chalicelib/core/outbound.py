"""Every outbound HTTP fetch of the registry: where it may connect, decided in one place.

The registry fetches from places other people name: the provider mirror's upstream and the
links its answers give, the VCS hosts an organization owner configures (their API and git
URLs), the public module registry and the SMS provider the operator configures. Each fetch
says where it may go (``Destinations``): its *own* origins (scheme, host and port), and the
*trusted* ones the operator configured in the environment (``REGISTRY_MIRROR_UPSTREAM_URL``,
``REGISTRY_PUBLIC_UPSTREAM``, ``REGISTRY_SMS_API_URL``: the configured upstream counts as
allowed). Every connection, redirects included, is checked here before it is made:

* http(s) only, no credentials in the URL;
* the destination must be one of the fetch's own or trusted origins, or listed in
  ``REGISTRY_OUTBOUND_ALLOW``: a link or redirect to another origin is refused;
* every address the host name resolves to must be public: loopback, link-local (the cloud's
  metadata service, 169.254.169.254), private, shared (100.64/10), multicast, reserved and
  unspecified addresses are refused, IPv4 and IPv6 alike, an IPv4 address inside IPv6
  (``::ffff:127.0.0.1``, 6to4, NAT64) judged as that IPv4 address, unless the destination is
  trusted or listed;
* the connection goes to the very address that was checked: the name is resolved once, the
  socket connects to that resolved address (TLS still verifies the certificate against the
  host name), so a DNS answer that changes between the check and the connection (rebinding)
  cannot slip another address in.

``REGISTRY_OUTBOUND_ALLOW`` (one setting for every outbound fetch; empty by default, as on
AWS, where it is the ``OutboundAllow`` stack parameter): comma-separated entries, each

* a host (``git.corp.example``, ``10.1.2.3``): that host, on any port, by the name (or IP
  literal) the URL uses;
* a host:port pair (``git.corp.example:8443``, ``[fd00::5]:443``): that host on that port;
* a CIDR (``10.20.0.0/16``, ``fd00::/8``, ``127.0.0.1/32``): any host whose every address
  lies in one of the listed networks.

A listed destination may be fetched by any fetch, at whatever address it has: list only
what the registry must reach (an internal git host, an internal upstream). Listing
``127.0.0.1`` allows the URLs that name 127.0.0.1, not ``localhost``.

Errors say only that a fetch was refused (``Refused``), failed (``Failed``) or timed out
(``TimedOut``), naming the destination the caller gave: never what a refused address is,
nor what a server said at the socket level (a port that answers something else than HTTP
must not be described to the caller). The details go to the log. Time bounds are per
network operation (the caller's ``timeout``); the size of an answer is bounded with
``Response.read_at_most``.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import socket
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from chalicelib.core.settings import OutboundAllow, get_settings, host_key

if TYPE_CHECKING:
    import http.client
    import ssl

    import urllib3

log = logging.getLogger("registry.outbound")

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
# (scheme, host as ``settings.host_key`` writes it, port)
Origin = tuple[str, str, int]

DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_REDIRECTS = 5
REDIRECTS = (301, 302, 303, 307, 308)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class OutboundError(Exception):
    """A fetch did not happen or did not complete; ``str(error)`` is safe to show."""


class Refused(OutboundError):
    """The destination is not one this fetch may reach: nothing was sent."""


class Failed(OutboundError):
    """The destination could not be reached, or its answer broke off or was too large."""


class TimedOut(Failed):
    """The destination did not answer within the fetch's timeout."""


# ----- the rules ----------------------------------------------------------------------------


def origin(url: str) -> Origin:
    """``url``'s origin; Refused for anything but an http(s) URL with a host and without
    credentials."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise Refused(f"{_shown(url)} is not a valid URL") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise Refused(f"{_shown(url)} is not http(s)")
    if parts.username is not None or parts.password is not None:
        raise Refused(f"{_shown(url)} carries credentials")
    if not parts.hostname:
        raise Refused(f"{_shown(url)} names no host")
    return scheme, host_key(parts.hostname), port or DEFAULT_PORTS[scheme]


def _shown(url: str) -> str:
    """The URL without credentials, query or fragment, for messages (a query may carry an
    upstream's token)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "the link"
    host = parts.netloc.rsplit("@", 1)[-1]
    return f"{parts.scheme}://{host}{parts.path}"[:200] if parts.scheme else parts.path[:200]


def _described(where: Origin) -> str:
    scheme, host, port = where
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}" + ("" if DEFAULT_PORTS[scheme] == port else f":{port}")


def embedded_ipv4(address: Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one stands for: IPv4-mapped (``::ffff:a.b.c.d``), 6to4
    (``2002:ab:cd::``) and NAT64 (``64:ff9b::a.b.c.d``); None for any other address."""
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def is_public(address: Address) -> bool:
    """Whether ``address`` is a public unicast address: not loopback, link-local, private,
    shared, multicast, reserved nor unspecified (an IPv6 address standing for an IPv4 one is
    judged as that one)."""
    inner = embedded_ipv4(address)
    if inner is not None:
        return is_public(inner)
    return address.is_global and not (
        address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or address.is_loopback
        or address.is_link_local
        or address.is_private
    )


def _address(text: str) -> Address:
    """A resolved address (an IPv6 zone, ``fe80::1%eth0``, dropped); IPv4-mapped IPv6 as
    its IPv4 address, so that a CIDR entry of IPv4 covers it."""
    address = ipaddress.ip_address(text.split("%", 1)[0])
    mapped = getattr(address, "ipv4_mapped", None)
    return mapped or address


def _covered(address: Address, allow: OutboundAllow) -> bool:
    return any(address in network for network in allow.networks)


def _named(where: Origin, allow: OutboundAllow) -> bool:
    _, host, port = where
    return host in allow.hosts or (host, port) in allow.host_ports


@dataclass(frozen=True)
class Destinations:
    """Where one fetch may go: its ``own`` origins (their addresses must be public) and the
    ``trusted`` ones the operator configured (their addresses are not checked); anything
    else only when ``REGISTRY_OUTBOUND_ALLOW`` lists it."""

    own: frozenset[Origin] = field(default_factory=frozenset)
    trusted: frozenset[Origin] = field(default_factory=frozenset)

    @classmethod
    def of(cls, *urls: str, trusted: Iterable[str] = ()) -> Destinations:
        return cls(frozenset(origin(u) for u in urls), frozenset(origin(u) for u in trusted))


def resolve(where: Origin, destinations: Destinations) -> list[tuple[Any, ...]]:
    """The ``getaddrinfo`` entries a connection to ``where`` may use, each checked; Refused
    when the destination or any of its addresses is not allowed."""
    allow = get_settings().outbound_allow
    listed = where in destinations.trusted or _named(where, allow)
    if not listed and where not in destinations.own and not allow.networks:
        raise _refused(where, "another origin, not listed in REGISTRY_OUTBOUND_ALLOW")
    _, host, port = where
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        log.warning("outbound fetch of %s: the name does not resolve (%s)", _described(where), exc)
        raise Failed(f"{_described(where)} could not be reached") from None
    addresses = [_address(str(info[4][0])) for info in found]
    if listed or (addresses and all(_covered(a, allow) for a in addresses)):
        return found
    if where not in destinations.own:
        raise _refused(where, "another origin, not listed in REGISTRY_OUTBOUND_ALLOW")
    for address in addresses:
        if not is_public(address) and not _covered(address, allow):
            raise _refused(where, f"it resolves to {address}, which is not a public address")
    return found


def check(url: str) -> None:
    """Refused unless a fetch of ``url`` (its own origin) may reach it as things stand:
    http(s) without credentials, every address its host resolves to public or allowed by
    ``REGISTRY_OUTBOUND_ALLOW``. For a URL a person saves (a notification destination),
    so a refused one is refused when it is saved; every fetch still checks again when it
    connects (the name may resolve elsewhere later). A name that does not resolve now
    passes: the fetch will judge what it resolves to then."""
    where = origin(url)
    try:
        resolve(where, Destinations(own=frozenset({where})))
    except Failed:
        return


def _refused(where: Origin, why: str) -> Refused:
    log.warning("outbound fetch of %s refused: %s", _described(where), why)
    return Refused(
        f"the fetch from {_described(where)} was refused: not an allowed destination "
        "(REGISTRY_OUTBOUND_ALLOW)"
    )


def connect(where: Origin, timeout: float | None, destinations: Destinations) -> socket.socket:
    """A TCP connection to ``where``, made to an address ``resolve`` checked."""
    last: OSError | None = None
    for family, kind, proto, _, sockaddr in resolve(where, destinations):
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(timeout)
            sock.connect(sockaddr)
        except OSError as exc:
            sock.close()
            last = exc
            continue
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock
    log.warning("outbound fetch of %s: no connection (%s)", _described(where), last)
    if isinstance(last, TimeoutError):
        raise TimedOut(f"{_described(where)} did not answer in time")
    raise Failed(f"{_described(where)} could not be reached")


# ----- fetching ---------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _tls() -> ssl.SSLContext:
    import ssl

    return ssl.create_default_context()


def _connection(where: Origin, timeout: float, destinations: Destinations) -> Any:
    """An http.client connection whose socket is ``connect``'s (TLS on top for https)."""
    import http.client

    scheme, host, port = where
    if scheme == "https":
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            host, port, timeout=timeout, context=_tls()
        )
    else:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
    conn._create_connection = lambda *_args, **_kwargs: connect(  # type: ignore[attr-defined]
        where, timeout, destinations
    )
    return conn


class Response:
    """An answer (any status): read it, then close it (or use it as a context manager)."""

    def __init__(self, url: str, raw: http.client.HTTPResponse, conn: Any) -> None:
        self.url = url
        self.status = raw.status
        self.headers = raw.headers
        self._raw = raw
        self._conn = conn

    @property
    def reason(self) -> str:
        """The status's standard phrase (never the server's own text)."""
        from http import HTTPStatus

        try:
            return HTTPStatus(self.status).phrase
        except ValueError:
            return "(an unknown status)"

    def read(self, size: int = -1) -> bytes:
        try:
            return self._raw.read(size if size >= 0 else None)
        except TimeoutError:
            raise TimedOut(f"{_shown(self.url)} did not answer in time") from None
        except Exception as exc:  # noqa: BLE001 - OSError, http.client's IncompleteRead...
            log.warning("outbound fetch of %s broke off (%s)", _shown(self.url), exc)
            raise Failed(f"the answer of {_shown(self.url)} broke off") from None

    def read_at_most(self, limit: int) -> bytes:
        """The whole body; Failed past ``limit`` bytes (declared or read)."""
        declared = self.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > limit:
            raise Failed(f"the answer of {_shown(self.url)} is larger than {limit} bytes")
        body = self.read(limit + 1)
        if len(body) > limit:
            raise Failed(f"the answer of {_shown(self.url)} is larger than {limit} bytes")
        return body

    def close(self) -> None:
        self._raw.close()
        self._conn.close()

    def __enter__(self) -> Response:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def json_object(body: bytes, error: Callable[[str], Exception]) -> dict[str, Any]:
    """An upstream's answer (read within its bound) decoded as a JSON object: the one
    reader of the caches' upstreams (the provider mirror's, the module cache's). Anything
    else raises ``error(message)``, the caller's own error class (a 502, an ``Unavailable``);
    the message is safe to show."""
    try:
        found = json.loads(body)
    except ValueError:
        raise error("the upstream registry answered with invalid JSON") from None
    if not isinstance(found, dict):
        raise error("the upstream registry answered with something else than an object")
    return found


def fetch(
    url: str,
    destinations: Destinations,
    *,
    timeout: float,
    method: str = "GET",
    headers: Mapping[str, str] | None = None,
    body: bytes | None = None,
) -> Response:
    """``method url``, following redirects (at most ``MAX_REDIRECTS``) that stay within
    ``destinations`` (a redirect elsewhere is Refused); the final answer, whatever its
    status. No proxy is used; ``Authorization`` is not carried to another origin."""
    sent = dict(headers or {})
    for _ in range(MAX_REDIRECTS + 1):
        where = origin(url)
        parts = urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        conn = _connection(where, timeout, destinations)
        try:
            conn.request(method, target, body=body, headers=sent)
            raw = conn.getresponse()
        except OutboundError:
            conn.close()
            raise
        except TimeoutError:
            conn.close()
            raise TimedOut(f"{_described(where)} did not answer in time") from None
        except Exception as exc:  # noqa: BLE001 - OSError, ssl and http.client errors...
            conn.close()
            log.warning("outbound fetch of %s failed (%s)", _shown(url), exc)
            raise Failed(f"{_described(where)} could not be reached") from None
        location = raw.getheader("Location")
        if raw.status not in REDIRECTS or not location:
            return Response(url, raw, conn)
        raw.close()
        conn.close()
        url = urljoin(url, location)
        if raw.status == 303 or (raw.status in (301, 302) and method == "POST"):
            method, body = "GET", None
        if origin(url) != where:
            sent = {k: v for k, v in sent.items() if k.lower() not in ("authorization", "cookie")}
    raise Failed(f"{_shown(url)}: more than {MAX_REDIRECTS} redirects")


# ----- urllib3 (dulwich's git client) --------------------------------------------------------


def pool_manager(
    destinations: Destinations, *, timeout: float, headers: Mapping[str, str] | None = None
) -> urllib3.PoolManager:
    """A urllib3 pool manager whose every connection (redirects included) is ``connect``'s:
    for clients built on urllib3, as dulwich's git client is. No proxy."""
    import urllib3
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

    def seconds(value: Any) -> float:
        return value if isinstance(value, int | float) else timeout

    class Checked(HTTPConnection):
        def _new_conn(self) -> socket.socket:
            where = ("http", host_key(self.host), self.port or DEFAULT_PORTS["http"])
            return connect(where, seconds(self.timeout), destinations)

    class CheckedTLS(HTTPSConnection):
        def _new_conn(self) -> socket.socket:
            where = ("https", host_key(self.host), self.port or DEFAULT_PORTS["https"])
            return connect(where, seconds(self.timeout), destinations)

    class Pool(HTTPConnectionPool):
        ConnectionCls = Checked

    class TLSPool(HTTPSConnectionPool):
        ConnectionCls = CheckedTLS

    manager = urllib3.PoolManager(
        headers=dict(headers or {}),
        timeout=timeout,
        cert_reqs="CERT_REQUIRED",
        retries=urllib3.Retry(total=MAX_REDIRECTS, connect=0, read=0, redirect=MAX_REDIRECTS),
    )
    manager.pool_classes_by_scheme = {"http": Pool, "https": TLSPool}
    return manager
