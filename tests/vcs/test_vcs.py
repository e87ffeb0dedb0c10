"""VCS connections through the API, and the git fetcher against a real smart-HTTP server."""

from __future__ import annotations

import io
import json
import logging
import tarfile
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from chalicelib.core.settings import get_settings
from chalicelib.modules.ingest import hcl
from chalicelib.modules.ingest.archive import read_archive
from chalicelib.modules.publishing.versions import semver_tags
from chalicelib.vcs import git
from tests.conftest import Api, doc, make_org, make_team
from tests.support import vcs_git_server
from tests.support.mirror_upstream import Listener
from tests.support.vcs_git_server import TOKEN, GitServer

V2 = "/api/v2"
GH_TOKEN = "ghp_supersecrettokenvalue123"
PRIVATE_KEY = "-----BEGIN RSA PRIVATE KEY-----\nsecretkeymaterial\n-----END RSA PRIVATE KEY-----"
CLIENT_SECRET = "client-secret-value-xyz"
SSH_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nsshsecretmaterial\n-----END"
SECRETS = (GH_TOKEN, "secretkeymaterial", CLIENT_SECRET, "sshsecretmaterial")


def client_doc(**attributes: Any) -> dict[str, Any]:
    base = {
        "service-provider": "github_enterprise",
        "http-url": "https://git.example.com",
        "api-url": "https://git.example.com/api/v3",
        "oauth-token-string": GH_TOKEN,
        "name": "corp",
    }
    base.update(attributes)
    return doc("oauth-clients", **{k: v for k, v in base.items() if v is not None})


def assert_no_secrets(*replies: Any) -> None:
    for reply in replies:
        text = reply.body.decode()
        for secret in SECRETS:
            assert secret not in text


@pytest.fixture
def org(api: Api) -> str:
    return make_org(api, "acme")


def count_clients(api: Api, org: str) -> int:
    reply = api.get(f"{V2}/organizations/{org}/oauth-clients")
    assert reply.status == 200, reply.json
    return reply.json["meta"]["pagination"]["total-count"]


# ----- OAuth clients and tokens -------------------------------------------------------------


def test_create_read_update_delete_client_and_token(
    api: Api, org: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    created = api.post(
        f"{V2}/organizations/{org}/oauth-clients",
        client_doc(**{"private-key": PRIVATE_KEY, "secret": CLIENT_SECRET, "key": "app-key"}),
    )
    assert created.status == 201, created.json
    client = created.data
    assert client["type"] == "oauth-clients" and client["id"].startswith("oc-")
    attrs = client["attributes"]
    assert attrs["service-provider"] == "github_enterprise"
    assert attrs["service-provider-display-name"] == "GitHub Enterprise"
    assert attrs["http-url"] == "https://git.example.com"
    assert attrs["api-url"] == "https://git.example.com/api/v3"
    assert attrs["name"] == "corp" and attrs["key"] == "app-key" and attrs["secret"] is None
    assert "oauth-token-string" not in attrs and "private-key" not in attrs
    assert client["relationships"]["organization"]["data"] == {"id": org, "type": "organizations"}
    tokens = client["relationships"]["oauth-tokens"]["data"]
    assert len(tokens) == 1 and tokens[0]["type"] == "oauth-tokens"
    token_id = tokens[0]["id"]
    assert token_id.startswith("ot-")

    one = api.get(f"{V2}/oauth-clients/{client['id']}")
    assert one.status == 200 and one.data["relationships"] == client["relationships"]
    listed = api.get(f"{V2}/organizations/{org}/oauth-clients")
    assert [c["id"] for c in listed.data] == [client["id"]]
    assert listed.json["meta"]["pagination"]["total-count"] == 1

    token_list = api.get(f"{V2}/oauth-clients/{client['id']}/oauth-tokens")
    assert [t["id"] for t in token_list.data] == [token_id]
    token = api.get(f"{V2}/oauth-tokens/{token_id}")
    assert token.status == 200
    assert token.data["attributes"]["has-ssh-key"] is False
    assert token.data["relationships"]["oauth-client"]["data"] == {
        "id": client["id"],
        "type": "oauth-clients",
    }

    ssh = api.patch(f"{V2}/oauth-tokens/{token_id}", doc("oauth-tokens", **{"ssh-key": SSH_KEY}))
    assert ssh.status == 200 and ssh.data["attributes"]["has-ssh-key"] is True

    renamed = api.patch(
        f"{V2}/oauth-clients/{client['id']}",
        doc("oauth-clients", name="renamed", **{"oauth-token-string": GH_TOKEN + "2"}),
    )
    assert renamed.status == 200, renamed.json
    assert renamed.data["attributes"]["name"] == "renamed"
    assert renamed.data["attributes"]["http-url"] == "https://git.example.com"
    assert [t["id"] for t in renamed.data["relationships"]["oauth-tokens"]["data"]] == [token_id]

    # The stored token is sealed and opens to the replaced value.
    from chalicelib.vcs.service import resolve_connection
    from chalicelib.vcs.store import OAuthTokenModel

    stored = OAuthTokenModel.get(token_id)
    assert GH_TOKEN not in json.dumps(stored.token)
    connection = resolve_connection(org, token_id)
    assert connection.token == GH_TOKEN + "2"
    assert connection.username == "x-access-token"
    assert connection.repository_url("acme/terraform-aws-net") == (
        "https://git.example.com/acme/terraform-aws-net.git"
    )

    assert_no_secrets(created, one, listed, token_list, token, ssh, renamed)
    for secret in SECRETS:
        assert secret not in caplog.text

    assert api.delete(f"{V2}/oauth-tokens/{token_id}").status == 204
    assert api.get(f"{V2}/oauth-tokens/{token_id}").status == 404
    assert api.get(f"{V2}/oauth-clients/{client['id']}/oauth-tokens").data == []
    assert api.delete(f"{V2}/oauth-clients/{client['id']}").status == 204
    assert api.get(f"{V2}/oauth-clients/{client['id']}").status == 404
    assert count_clients(api, org) == 0


def test_deleting_a_client_deletes_its_tokens_and_hosted_defaults(api: Api, org: str) -> None:
    created = api.post(
        f"{V2}/organizations/{org}/oauth-clients",
        client_doc(**{"service-provider": "github", "http-url": None, "api-url": None}),
    )
    assert created.status == 201, created.json
    assert created.data["attributes"]["http-url"] == "https://github.com"
    assert created.data["attributes"]["api-url"] == "https://api.github.com"
    token_id = created.data["relationships"]["oauth-tokens"]["data"][0]["id"]
    assert api.delete(f"{V2}/oauth-clients/{created.data['id']}").status == 204
    assert api.get(f"{V2}/oauth-tokens/{token_id}").status == 404


def test_clients_do_not_survive_their_organization(api: Api, org: str) -> None:
    from chalicelib.core.api.errors import Unprocessable
    from chalicelib.vcs.service import resolve_connection
    from chalicelib.vcs.store import OAuthClientModel, OAuthTokenModel

    created = api.post(f"{V2}/organizations/{org}/oauth-clients", client_doc())
    token_id = created.data["relationships"]["oauth-tokens"]["data"][0]["id"]
    assert api.delete(f"{V2}/organizations/{org}").status == 204
    # Deleting the organization deletes its connections and their (sealed) tokens.
    assert list(OAuthClientModel.by_organization.query(org)) == []
    assert OAuthTokenModel.count() == 0
    make_org(api, org)  # same name, new organization
    assert count_clients(api, org) == 0
    assert api.get(f"{V2}/oauth-clients/{created.data['id']}").status == 404
    assert api.get(f"{V2}/oauth-tokens/{token_id}").status == 404
    with pytest.raises(Unprocessable):
        resolve_connection(org, token_id)


def test_pagination_of_clients(api: Api, org: str) -> None:
    for n in range(3):
        reply = api.post(f"{V2}/organizations/{org}/oauth-clients", client_doc(name=f"c{n}"))
        assert reply.status == 201
    page = api.get(f"{V2}/organizations/{org}/oauth-clients?page[size]=2&page[number]=2")
    assert page.status == 200
    assert [c["attributes"]["name"] for c in page.data] == ["c2"]
    assert page.json["meta"]["pagination"]["total-pages"] == 2


INVALID_CLIENTS: list[tuple[dict[str, Any], str]] = [
    ({"service-provider": "svn"}, "service-provider"),
    ({"service-provider": None}, "service-provider"),
    ({"http-url": "ftp://git.example.com"}, "http-url"),
    ({"http-url": None}, "http-url"),
    ({"api-url": "git.example.com/api"}, "api-url"),
    ({"http-url": "https://user:pw@git.example.com"}, "http-url"),
    ({"oauth-token-string": None}, "oauth-token-string"),
    ({"oauth-token-string": " "}, "oauth-token-string"),
    ({"oauth-token-string": 12}, "oauth-token-string"),
    (
        {"service-provider": "bitbucket_server", "oauth-token-string": None, "key": "k"},
        "oauth-token-string",
    ),
]


def oauth_events(org: str) -> list[dict[str, Any]]:
    from chalicelib.core.audit import trail

    found, _ = trail.read_page(org, None, 1, 1000)
    return [e for e in found if e["resource"]["type"].startswith("oauth-")]


def test_each_connection_change_records_one_event_without_secrets(api: Api, org: str) -> None:
    created = api.post(
        f"{V2}/organizations/{org}/oauth-clients",
        client_doc(**{"private-key": PRIVATE_KEY, "secret": CLIENT_SECRET, "key": "app-key"}),
    )
    client_id = created.data["id"]
    token_id = created.data["relationships"]["oauth-tokens"]["data"][0]["id"]
    # Refused: invalid, or not the owners': no event.
    _, reader = make_team(api, org, "readers")
    assert (
        api.patch(
            f"{V2}/oauth-clients/{client_id}", doc("oauth-clients", **{"http-url": "x"})
        ).status
        == 422
    )
    assert api.as_(reader).delete(f"{V2}/oauth-clients/{client_id}").status == 404
    assert api.as_(reader).delete(f"{V2}/oauth-tokens/{token_id}").status == 404
    assert len(oauth_events(org)) == 1

    ssh = doc("oauth-tokens", **{"ssh-key": SSH_KEY})
    assert api.patch(f"{V2}/oauth-tokens/{token_id}", ssh).status == 200
    renamed = doc("oauth-clients", name="renamed", **{"oauth-token-string": GH_TOKEN + "2"})
    assert api.patch(f"{V2}/oauth-clients/{client_id}", renamed).status == 200
    assert api.delete(f"{V2}/oauth-tokens/{token_id}").status == 204
    assert api.delete(f"{V2}/oauth-clients/{client_id}").status == 204

    found = oauth_events(org)
    assert [
        (e["resource"]["type"], e["resource"]["id"], e["resource"]["action"]) for e in found
    ] == [
        ("oauth-client", client_id, "created"),
        ("oauth-token", token_id, "updated"),
        ("oauth-client", client_id, "updated"),
        ("oauth-token", token_id, "deleted"),
        ("oauth-client", client_id, "deleted"),
    ]
    me = api.get(f"{V2}/account/details").data["id"]
    assert all(
        e["auth"]["accessor_id"] == me and e["auth"]["organization_id"] == org for e in found
    )
    assert found[0]["resource"]["meta"]["oauth-token-id"] == token_id
    assert found[1]["resource"]["meta"]["changed"] == ["ssh-key"]
    assert found[2]["resource"]["meta"]["changed"] == ["name", "oauth-token-string"]
    text = json.dumps(found)
    for secret in SECRETS:
        assert secret not in text


def test_invalid_clients_are_422_and_change_nothing(api: Api, org: str) -> None:
    # One organization for every case (the api fixture is the slow part of this file).
    for attributes, name in INVALID_CLIENTS:
        body = client_doc(**{k: v for k, v in attributes.items() if v is not None})
        for key, value in attributes.items():
            if value is None:
                body["data"]["attributes"].pop(key, None)
        reply = api.post(f"{V2}/organizations/{org}/oauth-clients", body)
        assert reply.status == 422, (attributes, reply.json)
        assert reply.error["source"]["pointer"] == f"/data/attributes/{name}", attributes
        assert_no_secrets(reply)
    assert count_clients(api, org) == 0


def test_bitbucket_server_application_link_needs_no_token(api: Api, org: str) -> None:
    reply = api.post(
        f"{V2}/organizations/{org}/oauth-clients",
        client_doc(
            **{
                "service-provider": "bitbucket_server",
                "oauth-token-string": None,
                "key": "link-key",
                "private-key": PRIVATE_KEY,
            }
        ),
    )
    assert reply.status == 201, reply.json
    assert reply.data["relationships"]["oauth-tokens"]["data"] == []
    assert_no_secrets(reply)


def test_invalid_updates_change_nothing(api: Api, org: str) -> None:
    created = api.post(f"{V2}/organizations/{org}/oauth-clients", client_doc())
    path = f"{V2}/oauth-clients/{created.data['id']}"
    for attributes, pointer in (
        ({"name": "x", "http-url": "mailto:a@b"}, "/data/attributes/http-url"),
        ({"name": "x", "service-provider": "gitlab_hosted"}, "/data/attributes/service-provider"),
        ({"name": "x", "oauth-token-string": ""}, "/data/attributes/oauth-token-string"),
    ):
        reply = api.patch(path, doc("oauth-clients", **attributes))
        assert reply.status == 422, reply.json
        assert reply.error["source"]["pointer"] == pointer
    assert api.get(path).data == created.data


def test_permissions(api: Api, org: str) -> None:
    make_org(api, "other")
    created = api.post(f"{V2}/organizations/{org}/oauth-clients", client_doc())
    client_id = created.data["id"]
    token_id = created.data["relationships"]["oauth-tokens"]["data"][0]["id"]
    _, member = make_team(api, org, "devs", manage_modules=True)
    _, outsider = make_team(api, "other", "owners-ish", manage_modules=True)

    dev = api.as_(member)
    # Members read; only owners write.
    assert dev.get(f"{V2}/organizations/{org}/oauth-clients").status == 200
    assert dev.get(f"{V2}/oauth-clients/{client_id}").status == 200
    assert dev.get(f"{V2}/oauth-tokens/{token_id}").status == 200
    assert dev.post(f"{V2}/organizations/{org}/oauth-clients", client_doc()).status == 404
    assert (
        dev.patch(f"{V2}/oauth-clients/{client_id}", doc("oauth-clients", name="x")).status == 404
    )
    assert dev.delete(f"{V2}/oauth-clients/{client_id}").status == 404
    assert (
        dev.patch(f"{V2}/oauth-tokens/{token_id}", doc("oauth-tokens", **{"ssh-key": "k"})).status
        == 404
    )
    assert dev.delete(f"{V2}/oauth-tokens/{token_id}").status == 404

    # Another organization's team sees nothing.
    out = api.as_(outsider)
    assert out.get(f"{V2}/organizations/{org}/oauth-clients").status == 404
    assert out.get(f"{V2}/oauth-clients/{client_id}").status == 404
    assert out.get(f"{V2}/oauth-clients/{client_id}/oauth-tokens").status == 404
    assert out.get(f"{V2}/oauth-tokens/{token_id}").status == 404
    assert out.delete(f"{V2}/oauth-clients/{client_id}").status == 404
    assert api.as_(None).get(f"{V2}/oauth-clients/{client_id}").status == 401

    # Nothing changed.
    assert api.get(f"{V2}/oauth-clients/{client_id}").data == created.data
    assert api.get(f"{V2}/oauth-tokens/{token_id}").data["attributes"]["has-ssh-key"] is False

    # A token of another organization does not resolve for publishing there.
    from chalicelib.core.api.errors import Unprocessable
    from chalicelib.vcs.service import resolve_connection

    with pytest.raises(Unprocessable):
        resolve_connection("other", token_id)


# ----- repository URLs ----------------------------------------------------------------------


def conn(provider: str, http_url: str = "https://git.example.com/") -> Any:
    return SimpleNamespace(service_provider=provider, http_url=http_url)


def test_repository_urls() -> None:
    assert git.repository_url(conn("github"), "acme/net") == "https://git.example.com/acme/net.git"
    assert (
        git.repository_url(conn("bitbucket_server", "https://bb.example.com/scm"), "PROJ/net")
        == "https://bb.example.com/scm/PROJ/net.git"
    )
    assert (
        git.repository_url(conn("ado_services", "https://dev.azure.com"), "acme/infra/_git/net")
        == "https://dev.azure.com/acme/infra/_git/net"
    )
    bad = [
        ("github", "acme"),
        ("github", "acme/net/extra"),
        ("github", "acme/"),
        ("github", "/net"),
        ("github", "acme/my repo"),
        ("github", "acme/.."),
        ("github", ""),
        ("github", None),
        ("ado_server", "acme/net"),
        ("ado_services", "acme/infra/git/net"),
        ("ado_services", "acme//_git/net"),
    ]
    for provider, identifier in bad:
        with pytest.raises(git.IdentifierError):
            git.repository_url(conn(provider), identifier)
    with pytest.raises(git.IdentifierError, match="project key"):
        git.repository_url(conn("bitbucket_data_center"), "PROJ")


def test_semver_tags_and_skip_reasons() -> None:
    tags = {
        "v1.0.0": "a" * 40,
        "1.1.0": "b" * 40,
        "1.0.0": "c" * 40,
        "v2.0.0-rc.1": "d" * 40,
        "not-a-version": "e" * 40,
        "V3.0.0": "f" * 40,
        "1.2": "0" * 40,
    }
    versions, skipped = semver_tags(tags, None)
    assert versions[0].tag == "1.0.0"
    assert [v[:2] for v in versions] == [
        ("1.0.0", "c" * 40),
        ("1.1.0", "b" * 40),
        ("2.0.0-rc.1", "d" * 40),
    ]
    reasons = {s.tag: s.reason for s in skipped}
    assert set(reasons) == {"v1.0.0", "not-a-version", "V3.0.0", "1.2"}
    assert "already taken by tag '1.0.0'" in reasons["v1.0.0"]
    assert "not a semantic version" in reasons["not-a-version"]

    versions, skipped = semver_tags({"net/v0.1.0": "a" * 40, "v1.0.0": "b" * 40}, "net/")
    assert versions == [("0.1.0", "a" * 40, "net/v0.1.0")]
    assert [s.tag for s in skipped] == ["v1.0.0"]
    assert "tag prefix" in skipped[0].reason


# ----- the git fetcher against a real server ------------------------------------------------


@pytest.fixture(scope="module")
def git_server() -> Iterator[tuple[GitServer, dict[str, str]]]:
    yield from vcs_git_server.serve()


def unpack(data: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        return {
            m.name: archive.extractfile(m).read()  # type: ignore[union-attr]
            for m in archive.getmembers()
            if m.isfile()
        }


def test_list_tags_peels_annotated_tags(git_server: tuple[GitServer, dict[str, str]]) -> None:
    server, shas = git_server
    tags = git.list_tags(f"{server.url}/acme/terraform-aws-net.git", TOKEN)
    assert tags == {
        "v1.0.0": shas["net-1.0.0"],
        "not-a-version": shas["net-1.0.0"],
        "1.1.0": shas["net-1.1.0"],
        "v1.1.0-rc.1": shas["net-1.1.0"],
        "v1.2.0": shas["net-1.2.0"],
    }
    versions, skipped = semver_tags(tags, None)
    assert versions == [
        ("1.0.0", shas["net-1.0.0"], "v1.0.0"),
        ("1.1.0-rc.1", shas["net-1.1.0"], "v1.1.0-rc.1"),
        ("1.1.0", shas["net-1.1.0"], "1.1.0"),
        ("1.2.0", shas["net-1.2.0"], "v1.2.0"),
    ]
    assert [s.tag for s in skipped] == ["not-a-version"]


def test_archive_feeds_the_ingest_reader_and_parser(
    git_server: tuple[GitServer, dict[str, str]],
) -> None:
    server, shas = git_server
    url = f"{server.url}/acme/terraform-aws-net.git"
    data = git.archive_commit(url, TOKEN, shas["net-1.0.0"])
    files = unpack(data)
    # Files at the root; the symlink and the submodule are left out.
    assert set(files) == {"main.tf", "README.md", "modules/sub/main.tf"}
    contents = read_archive(io.BytesIO(data), max_compressed=10**7, max_unpacked=10**7)
    metadata = hcl.parse_module(contents.files)
    text = json.dumps(metadata)
    assert "cidr" in text and "The network id." in text

    later = unpack(git.archive_commit(url, TOKEN, shas["net-1.1.0"]))
    assert b"extra" in later["main.tf"] and set(later) == {"main.tf", "README.md"}


def test_archive_of_a_monorepo_subdirectory(git_server: tuple[GitServer, dict[str, str]]) -> None:
    server, shas = git_server
    url = f"{server.url}/acme/infra.git"
    tags = git.list_tags(url, TOKEN)
    versions, skipped = semver_tags(tags, "net/")
    assert versions == [("0.1.0", shas["mono-net-0.1.0"], "net/v0.1.0")]
    assert {s.tag for s in skipped} == {"dns/v0.2.0", "v9.9.9"}
    data = git.archive_commit(url, TOKEN, versions[0][1], subdirectory="modules/net")
    assert set(unpack(data)) == {"main.tf", "README.md"}
    contents = read_archive(io.BytesIO(data), max_compressed=10**7, max_unpacked=10**7)
    assert "cidr" in json.dumps(hcl.parse_module(contents.files))
    with pytest.raises(git.GitError, match="no directory"):
        git.archive_commit(url, TOKEN, versions[0][1], subdirectory="modules/nope")
    with pytest.raises(git.GitError, match="not a valid source directory"):
        git.archive_commit(url, TOKEN, versions[0][1], subdirectory="../etc")


def test_fetch_errors_are_clear(git_server: tuple[GitServer, dict[str, str]]) -> None:
    server, shas = git_server
    url = f"{server.url}/acme/terraform-aws-net.git"
    with pytest.raises(git.GitError, match="authentication failed") as wrong:
        git.list_tags(url, "wrong-token")
    assert "wrong-token" not in str(wrong.value)
    with pytest.raises(git.GitError, match="authentication failed"):
        git.archive_commit(url, "wrong-token", shas["net-1.0.0"])
    with pytest.raises(git.GitError, match="not found"):
        git.list_tags(f"{server.url}/acme/missing.git", TOKEN)
    with pytest.raises(git.GitError, match="full commit sha"):
        git.archive_commit(url, TOKEN, "v1.0.0")
    with pytest.raises(git.GitError, match="exceed"):
        git.archive_commit(url, TOKEN, shas["net-1.0.0"], max_archive_bytes=10)
    with pytest.raises(git.GitError, match="exceed"):
        git.archive_commit(url, TOKEN, shas["net-1.0.0"], max_pack_bytes=10)
    with pytest.raises(git.GitError, match="credentials"):
        git.list_tags(url.replace("http://", f"http://u:{TOKEN}@"), None)


# ----- where the VCS fetches may go (chalicelib.core.outbound) -------------------------------


def allow(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("REGISTRY_OUTBOUND_ALLOW", value)
    get_settings.cache_clear()


@pytest.fixture
def listener() -> Iterator[Listener]:
    running = Listener()
    yield running
    running.close()
    get_settings.cache_clear()


@pytest.mark.parametrize(
    "base", ["http://127.0.0.1:{port}", "http://[::ffff:127.0.0.1]:{port}", "http://10.0.0.1"]
)
def test_an_owners_git_url_at_a_non_public_address_is_refused_unconnected(
    listener: Listener, monkeypatch: pytest.MonkeyPatch, base: str
) -> None:
    """An organization owner names the VCS host: without the operator's listing, a
    loopback or private one is refused before any connection, and nothing of what the port
    would say reaches the error."""
    allow(monkeypatch, "")
    url = base.format(port=listener.port) + "/acme/terraform-aws-net.git"
    with pytest.raises(git.GitError, match="not an allowed destination") as refused:
        git.list_tags(url, TOKEN)
    with pytest.raises(git.GitError, match="not an allowed destination"):
        git.archive_commit(url, TOKEN, "a" * 40)
    assert listener.connections == []
    assert TOKEN not in str(refused.value) and not listener.told(str(refused.value))


@pytest.mark.parametrize("listed", ["127.0.0.1", "127.0.0.1:{port}", "127.0.0.0/8"])
def test_a_git_host_the_operator_lists_is_reached(
    git_server: tuple[GitServer, dict[str, str]], monkeypatch: pytest.MonkeyPatch, listed: str
) -> None:
    server, shas = git_server
    allow(monkeypatch, listed.format(port=server.url.rsplit(":", 1)[1]))
    tags = git.list_tags(f"{server.url}/acme/terraform-aws-net.git", TOKEN)
    assert tags["v1.0.0"] == shas["net-1.0.0"]
    get_settings.cache_clear()


def test_a_git_hosts_redirect_to_another_origin_is_refused(
    listener: Listener, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The owner's host is allowed (listed by host:port); where it redirects is not."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Redirect(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.1:{listener.port}{self.path}")
            self.send_header("Content-Length", "0")
            self.end_headers()

    redirector = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    threading.Thread(
        target=redirector.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    try:
        allow(monkeypatch, f"127.0.0.1:{redirector.server_address[1]}")
        url = f"http://127.0.0.1:{redirector.server_address[1]}/acme/terraform-aws-net.git"
        with pytest.raises(git.GitError, match="not an allowed destination"):
            git.list_tags(url, TOKEN)
    finally:
        redirector.shutdown()
        redirector.server_close()
    assert listener.connections == []


def test_a_git_answer_that_is_not_git_is_not_described(
    listener: Listener, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even a listed host's odd answer reaches the publisher as its status only."""
    allow(monkeypatch, "127.0.0.1")
    with pytest.raises(git.GitError) as failed:
        git.list_tags(f"http://127.0.0.1:{listener.port}/acme/x.git", TOKEN)
    assert "answered 418" in str(failed.value)
    assert "internal-secret" not in str(failed.value) and "AKIA" not in str(failed.value)


def test_an_owners_webhook_api_at_a_non_public_address_is_refused_unconnected(
    listener: Listener, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chalicelib.vcs import hooks

    allow(monkeypatch, "")
    for api_url in (f"http://127.0.0.1:{listener.port}/api/v3", "http://169.254.169.254/api"):
        with pytest.raises(hooks.HookError, match="not an allowed destination") as refused:
            hooks.register("github_enterprise", api_url, GH_TOKEN, "acme/net", "https://r/w", "s")
        assert GH_TOKEN not in str(refused.value)
    assert listener.connections == []
