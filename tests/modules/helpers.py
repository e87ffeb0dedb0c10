"""What the module tests, and other rooms' tests, build on: a module, a version, its archive
uploaded and ingested, a version published for the protocol to serve."""

from __future__ import annotations

from urllib.parse import unquote, urlparse

from chalicelib.core.data.aws import client
from chalicelib.core.settings import get_settings
from tests.conftest import Api, doc, tar_gz

ORG = "/api/v2/organizations/acme/registry-modules"


MAIN_TF = """
variable "region" {
  type        = string
  description = "Where to deploy"
  default     = "eu-west-1"
}
variable "cidr" { type = string }
resource "aws_vpc" "this" { cidr_block = var.cidr }
output "vpc_id" { value = aws_vpc.this.id }
"""


def create_module(api: Api, name: str = "vpc", provider: str = "aws", **extra) -> dict:
    reply = api.post(ORG, doc("registry-modules", name=name, provider=provider, **extra))
    assert reply.status == 201, reply.json
    return reply.data


def create_version(api: Api, version: str, name: str = "vpc", provider: str = "aws"):
    return api.post(
        f"/api/v2/registry-modules/acme/{name}/{provider}/versions",
        doc("registry-module-versions", version=version),
    )


def upload_key(version_reply) -> str:
    """The S3 key inside a presigned links.upload URL (virtual-host or path style)."""
    path = unquote(urlparse(version_reply.data["links"]["upload"]).path).lstrip("/")
    bucket_prefix = f"{get_settings().bucket}/"
    return path[len(bucket_prefix) :] if path.startswith(bucket_prefix) else path


def upload_and_ingest(version_reply, files: dict[str, str | bytes] | bytes) -> str:
    """PUT the archive where links.upload points and run the ingest handler on the event."""
    from chalicelib.modules.ingest.handler import handle_s3_record

    key = upload_key(version_reply)
    body = files if isinstance(files, bytes) else tar_gz(files)
    client("s3").put_object(Bucket=get_settings().bucket, Key=key, Body=body)
    return handle_s3_record({"s3": {"object": {"key": key}}})


V1 = "/api/registry/v1/modules"


def publish(api: Api, version: str, name: str = "vpc", provider: str = "aws", files=None):
    reply = create_version(api, version, name=name, provider=provider)
    assert reply.status == 201, reply.json
    assert upload_and_ingest(reply, files or {"main.tf": MAIN_TF}) == "ok"
