"""boto3 clients, created lazily and once per process, pointed at moto when configured."""

from __future__ import annotations

from functools import cache
from typing import Any

from chalicelib.core.settings import get_settings


@cache
def client(service: str) -> Any:
    import boto3
    from botocore.config import Config

    settings = get_settings()
    config = Config(
        signature_version="s3v4" if service == "s3" else None,
        s3={"addressing_style": "path"} if settings.aws_endpoint_url else None,
        retries={"max_attempts": 3, "mode": "standard"},
    )
    return boto3.client(
        service,
        region_name=settings.region,
        endpoint_url=settings.aws_endpoint_url,
        config=config,
    )


def reset_clients() -> None:
    """Forget cached clients (tests that switch endpoints or settings)."""
    client.cache_clear()
