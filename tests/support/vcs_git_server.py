"""A real git smart-HTTP server on 127.0.0.1 for the VCS tests, built with dulwich.

``GitServer`` holds in-memory repositories (built here, commit by commit, with blobs, trees,
lightweight and annotated tags) and serves them with ``dulwich.web`` in a background thread.
Every request needs HTTP basic auth with ``TOKEN`` as the password (any username);
anything else gets a 401 with a ``WWW-Authenticate`` challenge.
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Iterator
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from dulwich.objects import Blob, Commit, Tag, Tree
from dulwich.repo import MemoryRepo
from dulwich.server import DictBackend
from dulwich.web import make_wsgi_chain

TOKEN = "vcs-test-token-3f9a"
SYMLINK = 0o120000
SUBMODULE = 0o160000

MAIN_TF = """
variable "cidr" {
  type        = string
  description = "The network's CIDR block."
}

output "id" {
  value       = "net-1"
  description = "The network id."
}
"""


class RepoBuilder:
    """Builds commits and tags in a MemoryRepo. Files are ``path -> bytes | str``; a value
    ``("symlink", target)`` or ``("submodule", sha)`` makes that kind of entry."""

    def __init__(self) -> None:
        self.repo = MemoryRepo()
        self.head: bytes | None = None
        self.clock = 1_700_000_000

    def _tree(self, files: dict[str, Any]) -> bytes:
        nested: dict[str, Any] = {}
        for path, value in files.items():
            parts = path.split("/")
            node = nested
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            node[parts[-1]] = value
        return self._write_tree(nested)

    def _write_tree(self, node: dict[str, Any]) -> bytes:
        tree = Tree()
        for name, value in node.items():
            if isinstance(value, dict):
                tree.add(name.encode(), 0o040000, self._write_tree(value))
            elif isinstance(value, tuple) and value[0] == "submodule":
                tree.add(name.encode(), SUBMODULE, value[1].encode())
            else:
                mode = 0o100644
                if isinstance(value, tuple):
                    mode, value = SYMLINK, value[1]
                blob = Blob.from_string(value.encode() if isinstance(value, str) else value)
                self.repo.object_store.add_object(blob)
                tree.add(name.encode(), mode, blob.id)
        self.repo.object_store.add_object(tree)
        return tree.id

    def commit(self, files: dict[str, Any], message: str = "change") -> str:
        commit = Commit()
        commit.tree = self._tree(files)
        commit.parents = [self.head] if self.head else []
        commit.author = commit.committer = b"Test <test@example.com>"
        self.clock += 60
        commit.author_time = commit.commit_time = self.clock
        commit.author_timezone = commit.commit_timezone = 0
        commit.encoding = b"UTF-8"
        commit.message = message.encode()
        self.repo.object_store.add_object(commit)
        self.head = commit.id
        self.repo.refs[b"refs/heads/main"] = commit.id
        self.repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
        return commit.id.decode()

    def tag(self, name: str, *, annotated: bool = False) -> None:
        assert self.head is not None
        target = self.head
        if annotated:
            tag = Tag()
            tag.tagger = b"Test <test@example.com>"
            tag.message = f"release {name}".encode()
            tag.name = name.encode()
            tag.object = (Commit, self.head)
            tag.tag_time = self.clock
            tag.tag_timezone = 0
            self.repo.object_store.add_object(tag)
            target = tag.id
        self.repo.refs[b"refs/tags/" + name.encode()] = target


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


class GitServer:
    """``anonymous``: no credentials asked (a public host's repositories, as the module
    cache clones them)."""

    def __init__(self, repos: dict[str, MemoryRepo], *, anonymous: bool = False) -> None:
        self.repos = repos
        self.anonymous = anonymous
        self.requests = 0
        git_app = make_wsgi_chain(DictBackend({f"/{k}.git": v for k, v in repos.items()}))
        expected = "Basic "
        self._git_app = git_app
        self._expected = expected
        self.server = make_server("127.0.0.1", 0, self._app, WSGIServer, handler_class=_Quiet)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def _app(self, environ: dict[str, Any], start_response: Any) -> Any:
        self.requests += 1
        header = environ.get("HTTP_AUTHORIZATION", "")
        password = None
        if header.startswith("Basic "):
            try:
                decoded = base64.b64decode(header[6:]).decode()
                password = decoded.split(":", 1)[1]
            except (ValueError, IndexError):
                password = None
        if password != TOKEN and not self.anonymous:
            start_response(
                "401 Unauthorized",
                [("WWW-Authenticate", 'Basic realm="git"'), ("Content-Type", "text/plain")],
            )
            return [b"authentication required\n"]
        return self._git_app(environ, start_response)

    def __enter__(self) -> GitServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def build_repos() -> tuple[dict[str, MemoryRepo], dict[str, str]]:
    """The test repositories and the commit shas the tests check against, by label."""
    shas: dict[str, str] = {}

    module = RepoBuilder()
    shas["net-1.0.0"] = module.commit(
        {
            "main.tf": MAIN_TF,
            "README.md": "# net\n\nA network.\n",
            "modules/sub/main.tf": 'variable "x" {}\n',
            "link.tf": ("symlink", "/etc/passwd"),
            "vendor/lib": ("submodule", "a" * 40),
        },
        "first",
    )
    module.tag("v1.0.0", annotated=True)
    module.tag("not-a-version")
    shas["net-1.1.0"] = module.commit(
        {"main.tf": MAIN_TF + 'variable "extra" {\n  default = 1\n}\n', "README.md": "# net\n"},
        "second",
    )
    module.tag("1.1.0")
    module.tag("v1.1.0-rc.1", annotated=True)
    # A broken release: its HCL does not parse, so that version must fail visibly.
    shas["net-1.2.0"] = module.commit({"main.tf": 'variable "x" {\n', "README.md": "# net\n"})
    module.tag("v1.2.0")
    shas["net-main"] = module.commit(
        {"main.tf": MAIN_TF, "README.md": "# net (main)\n"}, "unreleased"
    )

    mono = RepoBuilder()
    shas["mono-net-0.1.0"] = mono.commit(
        {
            "README.md": "# monorepo\n",
            "modules/net/main.tf": MAIN_TF,
            "modules/net/README.md": "# net module\n",
            "modules/dns/main.tf": 'variable "zone" {}\n',
        },
        "monorepo",
    )
    mono.tag("net/v0.1.0", annotated=True)
    mono.tag("dns/v0.2.0")
    mono.tag("v9.9.9")
    untagged = RepoBuilder()
    untagged.commit({"main.tf": MAIN_TF}, "no releases")
    untagged.tag("release-one")
    repos = {
        "acme/terraform-aws-net": module.repo,
        "acme/infra": mono.repo,
        "acme/terraform-aws-untagged": untagged.repo,
    }
    return repos, shas


def serve() -> Iterator[tuple[GitServer, dict[str, str]]]:
    repos, shas = build_repos()
    with GitServer(repos) as server:
        deadline = time.monotonic() + 5
        while not server.thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        yield server, shas
