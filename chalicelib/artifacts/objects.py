"""The archive bucket: presigned upload and download links, existence, deletion, and
gzipped JSON metadata. Shared by every artifact type; where each type keeps its objects is
its own (``modules.keys``)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from typing import Any

from chalicelib.core.data.aws import client
from chalicelib.core.settings import get_settings


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


def delete_objects(keys: Sequence[str | None]) -> None:
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
