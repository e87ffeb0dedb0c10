"""Reading module sources from git hosts over smart HTTP, with dulwich (no git binary).

* ``repository_url`` turns a VCS connection and a repository identifier into a clone URL;
* ``list_tags`` reads the remote's tags (annotated tags peeled to their commits);
* ``archive_commit`` fetches one commit (shallow, into memory) and packs its tree, or one
  subdirectory of it, as the .tar.gz the ingest path reads.

The token travels as HTTP basic auth; the username each provider expects is in
``BASIC_AUTH_USERNAMES``. Nothing here logs a token or puts it in an error message.

The clone URL is an organization owner's: every connection (redirects included) goes
through ``core.outbound``, to the URL's own origin only (a redirect elsewhere is refused
unless REGISTRY_OUTBOUND_ALLOW lists it) and to public addresses only (unless listed). An
error names the repository and what git's protocol said (authentication failed, not found),
never what a socket answered.
"""

from __future__ import annotations

import io
import logging
import posixpath
import re
import stat
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

from chalicelib.core import outbound
from chalicelib.vcs import providers

log = logging.getLogger("registry.vcs")

DEFAULT_MAX_PACK_BYTES = 50 * 1024 * 1024
DEFAULT_MAX_ARCHIVE_BYTES = 50 * 1024 * 1024
TIMEOUT_SECONDS = 30.0
TAG_REF = b"refs/tags/"
BRANCH_REF = b"refs/heads/"
PEELED = b"^{}"

# Username of the basic-auth pair that carries the token, per service provider.
BASIC_AUTH_USERNAMES: dict[str, str] = {p.name: p.git_username for p in providers.ALL}
DEFAULT_USERNAME = providers.get("github").git_username

_PART = re.compile(r"^[A-Za-z0-9._~-]+\Z")


class GitError(Exception):
    """Fetching from the repository failed; ``str(error)`` is safe to show to a publisher."""


class IdentifierError(ValueError):
    """A repository identifier does not fit its service provider's format."""


# ----- repository URLs ----------------------------------------------------------------------


def identifier_parts(service_provider: str, identifier: Any) -> list[str]:
    """Validate ``identifier`` for the provider and return its path segments.

    ``<org>/<repo>`` everywhere (for Bitbucket Server/Data Center ``<org>`` is the project
    key); Azure DevOps uses ``<org>/<project>/_git/<repo>``. The provider's
    ``identifier_format`` names the form in error messages.
    """
    if not isinstance(identifier, str) or not identifier.strip():
        raise IdentifierError("the repository identifier must be a non-empty string")
    parts = identifier.split("/")
    provider = providers.find(service_provider)
    what = provider.identifier_format if provider else providers.ORG_REPO
    if _is_ado(service_provider):
        if len(parts) != 4 or parts[2] != "_git":
            raise IdentifierError(f"{identifier!r} is not an Azure DevOps identifier: use {what}")
    elif len(parts) != 2:
        raise IdentifierError(f"{identifier!r} is not a repository identifier: use {what}")
    for part in parts:
        if not part:
            raise IdentifierError(f"{identifier!r} has an empty part")
        if part in (".", "..") or not _PART.match(part):
            raise IdentifierError(
                f"{identifier!r} has an invalid part {part!r}: letters, digits, '.', '_', "
                "'-' and '~' only (no spaces)"
            )
    return parts


def repository_url(client: Any, identifier: str) -> str:
    """``<http-url>/<identifier>.git`` for a connection (anything with ``service_provider``
    and ``http_url``). Azure DevOps clone URLs carry no ``.git`` suffix."""
    provider = client.service_provider
    parts = identifier_parts(provider, identifier)
    base = (client.http_url or "").rstrip("/")
    if urlsplit(base).scheme not in ("http", "https"):
        raise IdentifierError("the VCS connection has no http(s) URL")
    path = "/".join(quote(part, safe="") for part in parts)
    return f"{base}/{path}" if _is_ado(provider) else f"{base}/{path}.git"


def _is_ado(service_provider: str) -> bool:
    """Azure DevOps identifiers have four parts, and its clone URLs no ``.git`` suffix."""
    provider = providers.find(service_provider)
    return provider is not None and provider.family == "ado"


# ----- tags ---------------------------------------------------------------------------------


def _client(repo_url: str, token: str | None, username: str) -> tuple[Any, str]:
    from dulwich.client import Urllib3HttpGitClient, default_user_agent_string

    parts = urlsplit(repo_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise GitError("the repository URL must be an http(s) URL")
    if parts.username or parts.password:
        raise GitError("the repository URL must not contain credentials")
    base = f"{parts.scheme}://{parts.netloc}"
    try:
        destinations = outbound.Destinations.of(base)
    except outbound.Refused as exc:
        raise GitError(str(exc)) from None
    manager = outbound.pool_manager(
        destinations, timeout=TIMEOUT_SECONDS, headers={"User-agent": default_user_agent_string()}
    )
    client = Urllib3HttpGitClient(
        base,
        username=username if token else None,
        password=token or None,
        timeout=TIMEOUT_SECONDS,
        quiet=True,
        pool_manager=manager,
    )
    return client, parts.path


# What dulwich says of an answer that is HTTP but not git's: the status, no body.
_UNEXPECTED_STATUS = re.compile(r"^unexpected http resp (\d{3}) ")


def _describe(exc: BaseException, repo_url: str) -> GitError:
    """What went wrong, as git's protocol tells it; a transport failure only as failed
    (its details go to the log: they may describe a port that does not speak git)."""
    from dulwich.client import HTTPUnauthorized
    from dulwich.errors import GitProtocolError, HangupException, NotGitRepository

    if isinstance(exc, outbound.OutboundError):
        return GitError(f"{repo_url}: {exc}")
    if isinstance(exc, HTTPUnauthorized):
        return GitError(f"{repo_url}: authentication failed (is the connection's token valid?)")
    if isinstance(exc, NotGitRepository):
        return GitError(f"{repo_url}: not found, or not a git repository")
    if isinstance(exc, HangupException):
        return GitError(f"{repo_url}: the server hung up")
    status = _UNEXPECTED_STATUS.match(str(exc)) if isinstance(exc, GitProtocolError) else None
    if status:
        return GitError(f"{repo_url}: the git host answered {status.group(1)}")
    log.warning("git fetch of %s failed: %s", repo_url, str(exc)[:300] or type(exc).__name__)
    return GitError(f"{repo_url}: the fetch failed (not a git repository, or no answer)")


def _refs(repo_url: str, token: str | None, username: str) -> dict[bytes, bytes]:
    client, path = _client(repo_url, token, username)
    try:
        result = client.get_refs(path)
    except Exception as exc:  # noqa: BLE001 - every transport/protocol failure is a GitError
        raise _describe(exc, repo_url) from None
    return {bytes(k): bytes(v) for k, v in result.refs.items() if v is not None}


def list_tags(
    repo_url: str, token: str | None, *, username: str = DEFAULT_USERNAME
) -> dict[str, str]:
    """Tag name -> commit sha (hex); annotated tags are peeled to the commit they tag."""
    refs = _refs(repo_url, token, username)
    tags: dict[str, str] = {}
    for ref, sha in refs.items():
        if not ref.startswith(TAG_REF) or ref.endswith(PEELED):
            continue
        name = ref[len(TAG_REF) :].decode("utf-8", "replace")
        tags[name] = refs.get(ref + PEELED, sha).decode("ascii")
    return dict(sorted(tags.items()))


def branch_head(
    repo_url: str, token: str | None, branch: str, *, username: str = DEFAULT_USERNAME
) -> str:
    """The commit sha at the tip of ``branch``."""
    return _head(_refs(repo_url, token, username), repo_url, branch)


def _head(refs: dict[bytes, bytes], repo_url: str, branch: str | None) -> str:
    """The tip of ``branch`` (of the remote's HEAD when None) in advertised ``refs``."""
    sha = refs.get(BRANCH_REF + branch.encode("utf-8") if branch else b"HEAD")
    if sha is None:
        raise GitError(
            f"{repo_url}: there is no branch {branch!r}" if branch else f"{repo_url}: empty"
        )
    return sha.decode("ascii")


# ----- archives -----------------------------------------------------------------------------


class _CappedBuffer(io.BytesIO):
    def __init__(self, cap: int, repo_url: str) -> None:
        super().__init__()
        self.cap = cap
        self.repo_url = repo_url

    def write(self, data: Any) -> int:
        if self.tell() + len(data) > self.cap:
            raise GitError(f"{self.repo_url}: the fetched data exceeds {self.cap} bytes")
        return super().write(data)


def _fetch_commit(
    repo_url: str,
    token: str | None,
    sha: str,
    username: str,
    max_pack_bytes: int,
    depth: int = 1,
    refs: dict[bytes, bytes] | None = None,
) -> tuple[Any, Any]:
    """A MemoryRepo holding ``sha`` and ``depth - 1`` generations of history, and the commit.
    ``refs``: the remote's refs when the caller has just read them (saves a round trip)."""
    from dulwich.object_store import MemoryObjectStore
    from dulwich.objects import Commit, ObjectID, Tag
    from dulwich.repo import MemoryRepo

    if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", sha or ""):
        raise GitError(f"{sha!r} is not a full commit sha")
    target = ObjectID(sha.encode("ascii"))
    if refs is None:
        refs = _refs(repo_url, token, username)
    # Servers without allow-reachable-sha1-in-want accept only advertised objects: want the
    # tag (or branch) that points at the commit when there is one.
    want: bytes = target
    for ref, value in refs.items():
        if ref.endswith(PEELED):
            if value == target:
                want = refs.get(ref[: -len(PEELED)], target)
                break
        elif value == target:
            break

    client, path = _client(repo_url, token, username)
    repo = MemoryRepo()
    assert isinstance(repo.object_store, MemoryObjectStore)  # dulwich types the base class
    buffer = _CappedBuffer(max_pack_bytes, repo_url)
    try:
        client.fetch_pack(
            path,
            lambda refs, depth=None: [want],
            repo.get_graph_walker(),
            buffer.write,
            depth=depth,
        )
        if buffer.tell():
            buffer.seek(0)
            repo.object_store.add_thin_pack(buffer.read, None)
    except GitError:
        raise
    except Exception as exc:  # noqa: BLE001 - every transport/protocol failure is a GitError
        raise _describe(exc, repo_url) from None
    try:
        obj = repo.object_store[target]
    except KeyError:
        raise GitError(f"{repo_url}: commit {sha} was not found") from None
    while isinstance(obj, Tag):
        obj = repo.object_store[obj.object[1]]
    if not isinstance(obj, Commit):
        raise GitError(f"{repo_url}: {sha} is not a commit")
    return repo, obj


def archive_commit(
    repo_url: str,
    token: str | None,
    sha: str,
    *,
    subdirectory: str | None = None,
    username: str = DEFAULT_USERNAME,
    max_pack_bytes: int = DEFAULT_MAX_PACK_BYTES,
    max_archive_bytes: int = DEFAULT_MAX_ARCHIVE_BYTES,
) -> bytes:
    """A .tar.gz of the commit's tree, files at the root (or ``subdirectory``'s contents).

    Regular files only: symlinks and submodules are left out. The fetched pack and the
    unpacked files are each capped.
    """
    # Only the ingest function packs trees: the others keep tarfile (and grp, pwd) unloaded.
    import tarfile

    repo, commit = _fetch_commit(repo_url, token, sha, username, max_pack_bytes)
    store = repo.object_store
    tree = store[commit.tree]
    prefix = clean_subdirectory(subdirectory)
    if prefix:
        for part in prefix.split("/"):
            entry = _entry(tree, part)
            if entry is None or not stat.S_ISDIR(entry[0]):
                raise GitError(f"{repo_url}: commit {sha} has no directory {prefix!r}")
            tree = store[entry[1]]

    buffer = io.BytesIO()
    total = 0
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        stack = [("", tree)]
        while stack:
            base, current = stack.pop()
            for item in current.iteritems():
                name = item.path.decode("utf-8", "surrogateescape")
                path = posixpath.join(base, name) if base else name
                if stat.S_ISDIR(item.mode):
                    stack.append((path, store[item.sha]))
                elif stat.S_ISREG(item.mode):
                    data = store[item.sha].as_raw_string()
                    total += len(data)
                    if total > max_archive_bytes:
                        raise GitError(
                            f"{repo_url}: the files of {sha} exceed {max_archive_bytes} bytes"
                        )
                    info = tarfile.TarInfo(path)
                    info.size = len(data)
                    info.mode = 0o755 if item.mode & 0o111 else 0o644
                    info.mtime = commit.commit_time
                    archive.addfile(info, io.BytesIO(data))
                # Symlinks (0o120000) and submodules (0o160000) are skipped.
    return buffer.getvalue()


def clean_subdirectory(subdirectory: str | None) -> str:
    if not subdirectory:
        return ""
    clean = subdirectory.strip("/")
    parts = clean.split("/")
    if any(part in ("", ".", "..") for part in parts) or "\\" in clean:
        raise GitError(f"{subdirectory!r} is not a valid source directory")
    return clean


def _entry(tree: Any, name: str) -> tuple[int, bytes] | None:
    try:
        return tree[name.encode("utf-8")]
    except KeyError:
        return None


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    date: int
    author: str
    message: str


def recent_commits(
    repo_url: str,
    token: str | None,
    branch: str | None,
    *,
    limit: int = 20,
    username: str = DEFAULT_USERNAME,
    max_pack_bytes: int = DEFAULT_MAX_PACK_BYTES,
) -> list[CommitInfo]:
    """The newest ``limit`` commits of ``branch`` (the remote's HEAD when None), newest first,
    following first parents, from one shallow fetch."""
    refs = _refs(repo_url, token, username)
    head = _head(refs, repo_url, branch)
    repo, commit = _fetch_commit(
        repo_url, token, head, username, max_pack_bytes, depth=limit, refs=refs
    )
    store = repo.object_store
    found: list[CommitInfo] = []
    while commit is not None and len(found) < limit:
        author = commit.author.decode("utf-8", "replace")
        found.append(
            CommitInfo(
                sha=commit.id.decode("ascii"),
                date=commit.author_time,
                author=author.split(" <", 1)[0],
                message=commit.message.decode("utf-8", "replace").strip(),
            )
        )
        parent = commit.parents[0] if commit.parents else None
        commit = store[parent] if parent is not None and parent in store else None
    return found
