"""The registry's main flow through the real local stack, as a CI pipeline would use it."""

from __future__ import annotations

import pytest
import requests

from tests.conftest import doc, tar_gz
from tests.e2e.conftest import Stack, wait_for

pytestmark = pytest.mark.e2e

MODULE_TF = """
terraform {
  required_providers {
    aws = { source = "hashicorp/aws", version = ">= 5.0" }
  }
}
variable "name" {
  type        = string
  description = "Name prefix"
}
variable "tags" {
  type    = map(string)
  default = { team = "platform" }
}
resource "aws_s3_bucket" "this" { bucket = var.name }
output "arn" {
  value       = aws_s3_bucket.this.arn
  description = "Bucket ARN"
}
"""


def test_publish_ingest_and_delete_through_the_local_stack(stack: Stack):
    admin = stack.session()
    assert admin.get(f"{stack.url}/api/v2/ping").status_code == 204
    assert (
        admin.post(
            stack.api("/organizations"), json=doc("organizations", name="flow", email="ops@flow.io")
        ).status_code
        == 201
    )
    team = admin.post(
        stack.api("/organizations/flow/teams"),
        json=doc("teams", name="publishers", **{"organization-access": {"manage-modules": True}}),
    )
    assert team.status_code == 201, team.text
    token = admin.post(stack.api(f"/teams/{team.json()['data']['id']}/authentication-token"))
    ci = stack.session(token.json()["data"]["attributes"]["token"])
    modules = stack.api("/organizations/flow/registry-modules")

    created = ci.post(modules, json=doc("registry-modules", name="bucket", provider="aws"))
    assert created.status_code == 201, created.text

    def publish(version: str, archive: bytes) -> requests.Response:
        reply = ci.post(
            stack.api("/registry-modules/flow/bucket/aws/versions"),
            json=doc("registry-module-versions", version=version),
        )
        assert reply.status_code == 201, reply.text
        upload = reply.json()["data"]["links"]["upload"]
        # Exactly as go-tfe does it: a plain PUT, no Authorization header.
        put = requests.put(
            upload, data=archive, headers={"Content-Type": "application/octet-stream"}
        )
        assert put.status_code == 200, put.text
        return reply

    def version_status(version: str) -> dict:
        reply = ci.get(
            f"{modules}/private/flow/bucket/aws/version", params={"module_version": version}
        )
        return reply.json()["data"]["attributes"]

    publish(
        "1.0.0",
        tar_gz(
            {
                "main.tf": MODULE_TF,
                "README.md": "# Bucket\n",
                "modules/policy/main.tf": 'variable "arn" {}',
            }
        ),
    )
    publish("1.1.0", tar_gz({"main.tf": MODULE_TF}))
    ok = wait_for(lambda: version_status("1.0.0"), lambda a: a["status"] == "ok")
    assert ok["status"] == "ok" and len(ok["sha256"]) == 64
    assert (
        wait_for(lambda: version_status("1.1.0"), lambda a: a["status"] == "ok")["status"] == "ok"
    )

    # A hostile archive is refused with a reason the publisher can read.
    publish("1.2.0", tar_gz({"../../etc/passwd.tf": "x"}))
    failed = wait_for(
        lambda: version_status("1.2.0"),
        lambda a: a["status"] != "pending" and a["status"] != "reg_ingressing",
    )
    assert failed["status"] == "reg_ingress_failed"
    assert "passwd.tf" in failed["error"]

    module = ci.get(f"{modules}/private/flow/bucket/aws").json()["data"]["attributes"]
    assert module["status"] == "setup_complete"
    assert [(s["version"], s["status"]) for s in module["version-statuses"]] == [
        ("1.0.0", "ok"),
        ("1.1.0", "ok"),
        ("1.2.0", "reg_ingress_failed"),
    ]

    # A second provider of the same name, then the cascades (deletes need the owners team).
    assert (
        ci.post(modules, json=doc("registry-modules", name="bucket", provider="google")).status_code
        == 201
    )
    assert ci.delete(f"{modules}/private/flow/bucket/aws/1.2.0").status_code == 404
    assert admin.delete(f"{modules}/private/flow/bucket/aws/1.2.0").status_code == 204
    remaining = ci.get(f"{modules}/private/flow/bucket/aws").json()["data"]["attributes"]
    assert [s["version"] for s in remaining["version-statuses"]] == ["1.0.0", "1.1.0"]
    assert admin.delete(f"{modules}/private/flow/bucket/aws").status_code == 204
    assert ci.get(f"{modules}/private/flow/bucket/aws").status_code == 404
    assert ci.get(f"{modules}/private/flow/bucket/google").status_code == 200
    assert admin.delete(f"{modules}/private/flow/bucket").status_code == 204
    listing = ci.get(modules).json()
    assert listing["data"] == [] and listing["meta"]["pagination"]["total-count"] == 0


def test_unknown_routes_and_bad_requests_are_json_api_errors(stack: Stack):
    anonymous = stack.session(None)
    missing = anonymous.get(stack.api("/no/such/thing"))
    assert missing.status_code == 404
    assert missing.json()["errors"][0]["status"] == "404"
    assert anonymous.get(stack.api("/organizations")).status_code == 401
    discovery = anonymous.get(f"{stack.url}/.well-known/terraform.json")
    assert discovery.headers["Content-Type"] == "application/json"
    assert discovery.json()["modules.v1"] == "/api/registry/v1/modules/"
    assert stack.startup_seconds < 30


def test_empty_path_segments_in_deletes_over_http(stack: Stack):
    """terrasnek builds delete URLs as ``<ns>/<name>/`` + ``/<provider>`` + ``/<version>``:
    ``name//provider/version``, ``name//provider`` and ``name/`` must reach the same deletes
    through the real HTTP server as through the test client."""
    admin = stack.session()
    org = admin.post(
        stack.api("/organizations"), json=doc("organizations", name="snek", email="s@x.io")
    )
    assert org.status_code == 201, org.text
    modules = stack.api("/organizations/snek/registry-modules")
    for name, provider in [("net", "aws"), ("net", "google"), ("dns", "aws")]:
        created = admin.post(modules, json=doc("registry-modules", name=name, provider=provider))
        assert created.status_code == 201, created.text
    for version in ("1.0.0", "1.1.0"):
        reply = admin.post(
            stack.api("/registry-modules/snek/net/aws/versions"),
            json=doc("registry-module-versions", version=version),
        )
        assert reply.status_code == 201, reply.text

    def names() -> list[str]:
        listed = admin.get(modules).json()["data"]
        return sorted(f"{m['attributes']['name']}/{m['attributes']['provider']}" for m in listed)

    base = f"{modules}/private/snek"
    assert admin.delete(f"{base}/net//aws/1.1.0").status_code == 204
    statuses = admin.get(f"{base}/net/aws").json()["data"]["attributes"]["version-statuses"]
    assert [s["version"] for s in statuses] == ["1.0.0"]
    assert admin.delete(f"{base}/net//google").status_code == 204
    assert names() == ["dns/aws", "net/aws"]
    assert admin.delete(f"{base}/net/").status_code == 204
    assert names() == ["dns/aws"]
    # Too many segments is still a JSON:API 404, not a server error.
    extra = admin.delete(f"{base}/dns/aws/1.0.0/extra")
    assert extra.status_code == 404 and extra.json()["errors"]


def test_what_the_http_server_refuses_itself_is_a_json_api_4xx(stack: Stack):
    """An unknown method used to get http.server's HTML 501; a request line too long its 414."""
    traced = requests.request("TRACE", f"{stack.url}/api/v2/ping")
    assert traced.status_code == 405
    assert traced.headers["Content-Type"] == "application/vnd.api+json"
    assert traced.json()["errors"][0]["status"] == "405"
    too_long = requests.get(f"{stack.url}/api/v2/{'a' * 70_000}")
    assert too_long.status_code == 414
    assert too_long.json()["errors"][0]["title"] == "request-uri too long"
    assert requests.get(f"{stack.url}/api/v2/ping").status_code == 204  # still serving


def test_a_chunked_body_is_read_and_the_connection_stays_usable(stack: Stack):
    """A chunked request body (schemathesis sends one; API Gateway accepts it) reaches the
    route whole, and the next request on the same keep-alive connection is read as the
    request it is (the chunks used to stay in the stream: a raw 0.9-style reply followed)."""
    import http.client
    import json
    from urllib.parse import urlsplit

    address = urlsplit(stack.url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
    body = json.dumps(doc("organizations", name="chunky", email="c@x.io")).encode()
    headers = {
        "Authorization": "Bearer e2e-admin-token",
        "Content-Type": "application/vnd.api+json",
        "Transfer-Encoding": "chunked",
    }
    chunks = (body[:10], body[10:])  # each piece framed as one chunk
    connection.request(
        "POST", "/api/v2/organizations", body=iter(chunks), headers=headers, encode_chunked=True
    )
    created = connection.getresponse()
    assert created.status == 201, created.read()
    assert json.loads(created.read())["data"]["id"] == "chunky"
    connection.request(
        "GET", "/api/v2/organizations/chunky", headers={"Authorization": headers["Authorization"]}
    )
    again = connection.getresponse()
    assert again.status == 200 and json.loads(again.read())["data"]["id"] == "chunky"
    connection.close()
    # A request line that cannot be read still gets an HTTP reply with a status line.
    import socket

    with socket.create_connection((address.hostname, address.port), timeout=30) as raw:
        raw.sendall(b"0\r\n\r\n")
        reply = raw.recv(65536)
    assert reply.startswith(b"HTTP/1.1 400"), reply[:200]


def test_go_tfe_cleanup_deletes_a_curated_public_module_over_http() -> None:
    """go-tfe's cleanup (`POST /registry-modules/actions/delete/:org/:name`) on the hosted
    edition, where curated public modules exist, through the real HTTP server."""
    from infrastructure import spawn

    running = spawn.start("hosted-admin", EDITION="hosted", REGISTRY_RATE_LIMITING="off")
    try:
        admin = requests.Session()
        admin.headers.update(
            {"Authorization": "Bearer hosted-admin", "Content-Type": "application/vnd.api+json"}
        )
        api = f"{running.url}/api/v2"
        org = doc("organizations", name="curators", email="c@x.io")
        assert admin.post(f"{api}/organizations", json=org).status_code == 201
        public = doc(
            "registry-modules",
            name="vpc",
            provider="aws",
            namespace="terraform-aws-modules",
            **{"registry-name": "public"},
        )
        modules = f"{api}/organizations/curators/registry-modules"
        assert admin.post(modules, json=public).status_code == 201, "curation"
        deleted = admin.post(f"{api}/registry-modules/actions/delete/curators/vpc", json={})
        assert deleted.status_code == 204, deleted.text
        assert admin.get(modules).json()["data"] == []
    finally:
        spawn.stop(running)
