"""Where a version's objects live in S3, and presigned URLs for them.

``v1/object/<module>/<version>/<version id>.tar.gz`` is the upload target (links.upload);
the ingest handler validates it, copies it to ``v1/archives/...`` (what downloads serve, so a
late re-upload can never replace a published archive) and stores the parsed metadata under
``v1/metadata/...``.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from typing import Any

from chalicelib.core.data.aws import client
from chalicelib.core.settings import get_settings

UPLOAD_PREFIX = "v1/object/"


@dataclass(frozen=True)
class UploadKey:
    module_id: str
    version: str
    version_id: str

    @property
    def key(self) -> str:
        return f"{UPLOAD_PREFIX}{self.module_id}/{self.version}/{self.version_id}.tar.gz"

    @property
    def archive_key(self) -> str:
        return f"v1/archives/{self.module_id}/{self.version_id}.tar.gz"

    @property
    def metadata_key(self) -> str:
        return f"v1/metadata/{self.module_id}/{self.version_id}.json.gz"

    @classmethod
    def parse(cls, key: str) -> UploadKey | None:
        if not key.startswith(UPLOAD_PREFIX) or not key.endswith(".tar.gz"):
            return None
        parts = key[len(UPLOAD_PREFIX) : -len(".tar.gz")].split("/")
        if len(parts) != 3 or not all(parts):
            return None
        return cls(*parts)


def bucket() -> str:
    return get_settings().bucket


def presigned_upload_url(key: str) -> str:
    return client("s3").generate_presigned_url(
        "put_object",
        Params={"Bucket": bucket(), "Key": key},
        ExpiresIn=get_settings().upload_url_ttl,
    )


def presigned_download_url(key: str) -> str:
    return client("s3").generate_presigned_url(
        "get_object",
        Params={"Bucket": bucket(), "Key": key},
        ExpiresIn=get_settings().download_url_ttl,
    )


def exists(key: str) -> bool:
    from botocore.exceptions import ClientError

    try:
        client("s3").head_object(Bucket=bucket(), Key=key)
    except ClientError as exc:
        if exc.response["Error"]["Code"] in ("404", "NoSuchKey", "NotFound"):
            return False
        raise
    return True


def delete_objects(keys: list[str | None]) -> None:
    wanted = [{"Key": k} for k in keys if k]
    for start in range(0, len(wanted), 1000):
        client("s3").delete_objects(
            Bucket=bucket(), Delete={"Objects": wanted[start : start + 1000], "Quiet": True}
        )


def put_metadata(key: str, metadata: dict[str, Any]) -> None:
    body = gzip.compress(json.dumps(metadata, separators=(",", ":")).encode())
    client("s3").put_object(
        Bucket=bucket(),
        Key=key,
        Body=body,
        ContentType="application/json",
        ContentEncoding="gzip",
    )


def get_metadata(key: str) -> dict[str, Any]:
    body = client("s3").get_object(Bucket=bucket(), Key=key)["Body"].read()
    return json.loads(gzip.decompress(body))
