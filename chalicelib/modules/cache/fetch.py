"""Fetching a version's archive from where the upstream's download answer points.

Two kinds of source, as go-getter reads them:

* ``git::https://host/owner/repo(.git)?ref=<tag, branch or commit>``: cloned with the
  project's git library (``vcs.git``: dulwich over ``core.outbound``, shallow, the ref only)
  and packed as a .tar.gz of the commit's files;
* ``http(s)://host/path`` of a .tar.gz (``.tar.gz``/``.tgz``, or ``?archive=tar.gz``):
  downloaded as is.

The source's host must be the configured upstream's own, or one the site admins allow
(``allowed-source-hosts``: ``host``, or ``host:port`` where the port is not the scheme's
default); a redirect may go only to such a host too. Beyond that, ``core.outbound``'s rules
hold (public addresses only unless ``REGISTRY_OUTBOUND_ALLOW`` lists one). Anything else
(another getter, a subdirectory ``//``, credentials in the URL) is refused: the caller can
never make the registry fetch a host of their choosing, and neither can the upstream.

Everything is bounded by ``REGISTRY_MAX_ARCHIVE_BYTES``, as an upload is.
"""

from __future__ import annotations

import hashlib
import io
import re
import tempfile
from dataclasses import dataclass
from typing import IO
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from chalicelib.core import outbound
from chalicelib.core.settings import get_settings, host_key
from chalicelib.modules.cache import upstream

CHUNK = 1 << 20
TARBALL_SUFFIXES = (".tar.gz", ".tgz")
SHA = re.compile(r"^[0-9a-f]{40}\Z")


class SourceRefused(Exception):
    """The source is not one the cache may fetch; ``str`` is safe to show."""


@dataclass
class Fetched:
    """An archive in hand: a spooled file (at its start), its SHA-256 and size, and the
    host it came from (for the site admins' list)."""

    file: IO[bytes]
    sha256: str
    size: int
    host: str
    # What names the content at its source, to tell whether the upstream changed it: the
    # archive's SHA-256, or the commit of a git source.
    identity: str = ""

    def __post_init__(self) -> None:
        self.identity = self.identity or self.sha256


def host_entry(scheme: str, host: str, port: int) -> str:
    """How ``allowed-source-hosts`` writes an origin: the host, with ``:port`` where the
    port is not the scheme's default."""
    shown = f"[{host}]" if ":" in host else host
    return shown if outbound.DEFAULT_PORTS.get(scheme) == port else f"{shown}:{port}"


def _origins(entries: tuple[str, ...]) -> list[str]:
    """The http(s) origins of the allowed hosts' entries."""
    found = []
    for entry in entries:
        parts = urlsplit(f"//{entry}")
        try:
            port = parts.port
        except ValueError:
            continue
        host = host_key(parts.hostname or "")
        if not host:
            continue
        shown = f"[{host}]" if ":" in host else host
        for scheme in ("https", "http"):
            found.append(f"{scheme}://{shown}:{port or outbound.DEFAULT_PORTS[scheme]}")
    return found


def _allowed(url: str, hosts: tuple[str, ...]) -> outbound.Destinations:
    """Where a fetch of ``url`` may go: the allowed source hosts (own: public addresses
    only, unless REGISTRY_OUTBOUND_ALLOW) and the configured upstream (trusted). Refused
    when ``url``'s own host is neither."""
    try:
        where = outbound.origin(url)
    except outbound.Refused as exc:
        raise SourceRefused(str(exc)) from None
    allowed = {h.lower() for h in hosts}
    base = upstream.base_url()
    upstream_origin = outbound.origin(base) if base else None
    if host_entry(*where) not in allowed and where != upstream_origin:
        raise SourceRefused(
            f"the upstream's source host {host_entry(*where)} is not an allowed source host"
        )
    trusted = [base] if base and get_settings().mirror_upstream_url else []
    own = _origins(tuple(allowed))
    if where == upstream_origin and not trusted:
        own.append(base or "")
    return outbound.Destinations.of(*own, trusted=trusted)


def fetch(location: str, hosts: tuple[str, ...]) -> Fetched:
    """The archive at the upstream's ``location``; SourceRefused or upstream.Unavailable."""
    if location.startswith("git::"):
        return _git(location[len("git::") :], hosts)
    if "::" in location.split("/", 1)[0]:
        raise SourceRefused("the upstream's source uses a getter the cache does not fetch")
    return _tarball(location, hosts)


def _split(url: str) -> tuple[str, dict[str, str]]:
    """The URL without its query, and the query; SourceRefused for a subdirectory (``//``
    in the path: the cache stores whole archives)."""
    parts = urlsplit(url)
    if "//" in parts.path:
        raise SourceRefused("the upstream's source names a subdirectory (//), not cached yet")
    query = dict(parse_qsl(parts.query))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")), query


def _tarball(location: str, hosts: tuple[str, ...]) -> Fetched:
    url, query = _split(location)
    archive = query.pop("archive", "")
    if archive not in ("", "tar.gz", "tgz") or (not archive and not url.endswith(TARBALL_SUFFIXES)):
        raise SourceRefused("the upstream's source is not a .tar.gz archive")
    if query:
        url += "?" + urlencode(query)
    where = _allowed(url, hosts)
    limit = get_settings().max_archive_bytes
    spool = tempfile.TemporaryFile()  # noqa: SIM115 - handed to the caller, who closes it
    try:
        digest, size = _download(url, where, limit, spool)
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return Fetched(spool, digest, size, host_entry(*outbound.origin(url)))


def _download(
    url: str, where: outbound.Destinations, limit: int, sink: IO[bytes]
) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    try:
        with outbound.fetch(url, where, timeout=get_settings().mirror_timeout) as response:
            if response.status != 200:
                raise upstream.Unavailable(f"the source host answered {response.status}")
            declared = response.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > limit:
                raise upstream.Unavailable(f"the archive is larger than {limit} bytes")
            while chunk := response.read(CHUNK):
                size += len(chunk)
                if size > limit:
                    raise upstream.Unavailable(f"the archive is larger than {limit} bytes")
                digest.update(chunk)
                sink.write(chunk)
    except outbound.Refused as exc:
        raise SourceRefused(str(exc)) from None
    except outbound.TimedOut:
        raise upstream.Unavailable(
            "the source host did not answer in time", timed_out=True
        ) from None
    except outbound.Failed as exc:
        raise upstream.Unavailable(str(exc)) from None
    return digest.hexdigest(), size


def _git(location: str, hosts: tuple[str, ...]) -> Fetched:
    from chalicelib.vcs import git

    url, query = _split(location)
    if set(query) - {"ref", "depth"}:
        raise SourceRefused("the upstream's git source has options the cache does not take")
    _allowed(url, hosts)  # the host check; vcs.git connects to that origin only
    limit = get_settings().max_archive_bytes
    try:
        sha = _commit(url, query.get("ref", ""))
        packed = git.archive_commit(url, None, sha, max_pack_bytes=limit, max_archive_bytes=limit)
    except git.GitError as exc:
        raise upstream.Unavailable(str(exc)) from None
    if len(packed) > limit:
        raise upstream.Unavailable(f"the archive is larger than {limit} bytes")
    spool = io.BytesIO(packed)  # vcs.git packs in memory, within the cap
    digest = hashlib.sha256(packed).hexdigest()
    # A packed tree's bytes differ from one packing to the next (gzip's time stamp): what
    # stays the same, and tells a changed source, is the commit.
    return Fetched(spool, digest, len(packed), host_entry(*outbound.origin(url)), f"git:{sha}")


def _commit(url: str, ref: str) -> str:
    """The commit ``ref`` names: a full sha as is, else a tag, else a branch; the remote's
    default branch when there is no ref."""
    from chalicelib.vcs import git

    if SHA.match(ref):
        return ref
    if not ref:
        raise SourceRefused("the upstream's git source names no ref")
    tags = git.list_tags(url, None)
    if ref in tags:
        return tags[ref]
    return git.branch_head(url, None, ref)
