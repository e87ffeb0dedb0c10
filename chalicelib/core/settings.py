"""Settings read from the environment, once per process.

Every deployment-specific value lives here so the rest of the code never reads ``os.environ``.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field
from functools import lru_cache

from chalicelib import __version__

EDITIONS = ("self-hosted", "hosted")

# Caps on what one module archive may put into the registry's metadata (see the ingest's
# ``limits`` module for how each is applied and measured).
DEFAULT_MAX_PARSED_BYTES = 8 * 1024 * 1024  # all .tf/.tf.json the parser reads, per archive
DEFAULT_MAX_HCL_FILE_BYTES = 1024 * 1024  # one .tf file (tree-sitter's memory is per file)
DEFAULT_MAX_README_BYTES = 1024 * 1024  # one README; longer ones are truncated with a note
DEFAULT_MAX_TEXT_BYTES = 64 * 1024  # one description, default or type expression
DEFAULT_MAX_NAME_BYTES = 1024  # one name, resource type, module source, version constraint
DEFAULT_MAX_METADATA_BYTES = 2 * 1024 * 1024  # a version's whole metadata, as JSON


@dataclass(frozen=True)
class OutboundAllow:
    """``REGISTRY_OUTBOUND_ALLOW``, parsed: what every outbound fetch may reach besides its
    own origin and public addresses (the rules are ``core.outbound``'s). Hosts are lowercase,
    without a trailing dot; an IP literal in its compressed form (IPv6 without brackets)."""

    hosts: frozenset[str] = frozenset()
    host_ports: frozenset[tuple[str, int]] = frozenset()
    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()


def host_key(host: str) -> str:
    """``host`` as ``OutboundAllow`` and ``core.outbound`` compare it: lowercase, no trailing
    dot, no brackets, an IP literal compressed (an IPv4-mapped IPv6 one as its IPv4)."""
    host = host.strip().strip("[]").rstrip(".").lower()
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).compressed


def outbound_allow(raw: str) -> OutboundAllow:
    """Comma-separated hosts (``git.corp``), host:port pairs (``git.corp:8443``,
    ``[fd00::1]:443``) and CIDRs (``10.20.0.0/16``); a RuntimeError names a malformed entry."""
    hosts: set[str] = set()
    host_ports: set[tuple[str, int]] = set()
    networks = []
    for entry in (e.strip() for e in raw.split(",")):
        try:
            if not entry:
                continue
            if "/" in entry:
                networks.append(ipaddress.ip_network(entry, strict=False))
            elif entry.startswith("[") and "]:" in entry:
                host, port = entry[1:].split("]:", 1)
                host_ports.add((host_key(host), _port(port)))
            elif entry.count(":") == 1:
                host, port = entry.split(":")
                host_ports.add((host_key(host), _port(port)))
            elif host_key(entry):
                hosts.add(host_key(entry))
        except ValueError:
            raise RuntimeError(
                f"REGISTRY_OUTBOUND_ALLOW: {entry!r} is no host, host:port or CIDR"
            ) from None
    return OutboundAllow(frozenset(hosts), frozenset(host_ports), tuple(networks))


def _port(raw: str) -> int:
    port = int(raw)
    if not 0 < port < 65536:
        raise ValueError(raw)
    return port


@dataclass(frozen=True)
class Settings:
    edition: str
    region: str
    aws_endpoint_url: str | None
    table_prefix: str
    bucket: str
    ingest_queue: str
    public_base_url: str | None
    max_archive_bytes: int
    max_unpacked_bytes: int
    upload_url_ttl: int
    download_url_ttl: int
    app_version: str
    public_registry_url: str
    public_cache_ttl: int
    kms_key: str
    smtp_timeout: float
    sms_api_url: str
    sms_timeout: float
    admin_settings_cache_ttl: float
    token_cache_ttl: float
    rate_limiting_default: bool
    max_parsed_bytes: int
    max_hcl_file_bytes: int
    max_readme_bytes: int
    max_text_bytes: int
    max_name_bytes: int
    max_metadata_bytes: int
    # A private provider's platform archive (terraform-provider-aws is about 150 MB zipped).
    provider_max_archive_bytes: int = 400 * 1024 * 1024
    # The provider network mirror's pull-through cache (chalicelib.providers.mirror).
    mirror_upstream_url: str | None = None
    mirror_cache_ttl: int = 3600
    mirror_max_archive_bytes: int = 512 * 1024 * 1024
    mirror_timeout: float = 10.0
    mirror_platforms: tuple[str, ...] = ()
    mirror_max_seed_bytes: int = 5 * 1024 * 1024
    # What outbound fetches may reach besides public addresses (chalicelib.core.outbound).
    outbound_allow: OutboundAllow = field(default_factory=OutboundAllow)
    # The module scan (chalicelib.trust.trivy): the scanner's binary (unset: found beside the
    # interpreter, in the scan function's layer or on PATH) and each scan's bounds.
    trivy_path: str | None = None
    scan_seconds: float = 60.0
    scan_memory_mb: int = 1024
    scan_max_findings: int = 500
    # The KMS key (id, ARN or alias; ECC_NIST_P256) that signs provenance, and the keys that
    # signed before a rotation, still listed for verifiers (chalicelib.trust.provenance).
    signing_key: str = "alias/registry-dev-signing"
    previous_signing_keys: tuple[str, ...] = ()
    # The scan jobs' queue (chalicelib.artifacts.queue.request_scan): the scan function's.
    scan_queue: str = "registry-dev-scan"
    # The notifications' queue (chalicelib.notifications.fanout and worker): one delivery of
    # one notice to one destination, or one mail to a deprecated version's consumers.
    notify_queue: str = "registry-dev-notify"
    # The transfers' queue (chalicelib.artifacts.queue.transfer): bundle jobs and the module
    # cache's background fetches, the Transfers function's (chalicelib.entry.transfers).
    transfers_queue: str = "registry-dev-transfers"
    # How long an audit event is kept (chalicelib.audit; its item's TTL), in days: never
    # fewer than 400 (the site's general settings may say more: ``audit-retention-days``).
    audit_retention_days: int = 400
    # Where the audit events are exported (chalicelib.audit.export), each as one JSON line:
    # the bucket (empty: no S3 export) and the CloudWatch Logs group (empty: none).
    audit_bucket: str = ""
    audit_log_group: str = ""
    # The protocol function's URL (infrastructure.template: ProtocolFunctionUrl), which
    # discovery names for modules.v1 when set (empty: the API's own path).
    protocol_url: str | None = None

    @property
    def hosted(self) -> bool:
        return self.edition == "hosted"

    def table_name(self, short: str) -> str:
        return f"{self.table_prefix}{short}"


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return int(raw) if raw else default


def _float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    return float(raw) if raw else default


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    edition = os.environ.get("EDITION", "self-hosted")
    if edition not in EDITIONS:
        raise RuntimeError(f"EDITION must be one of {EDITIONS}, not {edition!r}")
    return Settings(
        edition=edition,
        region=os.environ.get("AWS_DEFAULT_REGION") or os.environ.get("AWS_REGION") or "us-east-1",
        aws_endpoint_url=os.environ.get("AWS_ENDPOINT_URL") or None,
        table_prefix=os.environ.get("REGISTRY_TABLE_PREFIX", "registry-dev-"),
        bucket=os.environ.get("REGISTRY_BUCKET", "registry-dev-archives"),
        ingest_queue=os.environ.get("REGISTRY_INGEST_QUEUE", "registry-dev-ingest"),
        public_base_url=(os.environ.get("REGISTRY_PUBLIC_URL") or "").rstrip("/") or None,
        max_archive_bytes=_int("REGISTRY_MAX_ARCHIVE_BYTES", 50 * 1024 * 1024),
        max_unpacked_bytes=_int("REGISTRY_MAX_UNPACKED_BYTES", 250 * 1024 * 1024),
        upload_url_ttl=_int("REGISTRY_UPLOAD_URL_TTL", 3600),
        download_url_ttl=_int("REGISTRY_DOWNLOAD_URL_TTL", 300),
        app_version=__version__,
        public_registry_url=(
            os.environ.get("REGISTRY_PUBLIC_UPSTREAM") or "https://registry.terraform.io"
        ).rstrip("/"),
        public_cache_ttl=_int("REGISTRY_PUBLIC_CACHE_TTL", 300),
        kms_key=os.environ.get("REGISTRY_KMS_KEY") or "alias/registry-dev-secrets",
        smtp_timeout=_float("REGISTRY_SMTP_TIMEOUT", 10.0),
        sms_api_url=(os.environ.get("REGISTRY_SMS_API_URL") or "https://api.twilio.com").rstrip(
            "/"
        ),
        sms_timeout=_float("REGISTRY_SMS_TIMEOUT", 10.0),
        admin_settings_cache_ttl=_float("REGISTRY_SETTINGS_CACHE_SECONDS", 5.0),
        # How long an instance trusts a token it verified (and what it read for it) before
        # reading it again: a revocation elsewhere takes effect within this many seconds.
        token_cache_ttl=_float("REGISTRY_TOKEN_CACHE_SECONDS", 5.0),
        # The default of the api-rate-limiting-enabled admin setting until an admin sets it.
        rate_limiting_default=os.environ.get("REGISTRY_RATE_LIMITING", "on").lower() != "off",
        max_parsed_bytes=_int("REGISTRY_MAX_PARSED_BYTES", DEFAULT_MAX_PARSED_BYTES),
        max_hcl_file_bytes=_int("REGISTRY_MAX_HCL_FILE_BYTES", DEFAULT_MAX_HCL_FILE_BYTES),
        max_readme_bytes=_int("REGISTRY_MAX_README_BYTES", DEFAULT_MAX_README_BYTES),
        max_text_bytes=_int("REGISTRY_MAX_TEXT_BYTES", DEFAULT_MAX_TEXT_BYTES),
        max_name_bytes=_int("REGISTRY_MAX_NAME_BYTES", DEFAULT_MAX_NAME_BYTES),
        max_metadata_bytes=_int("REGISTRY_MAX_METADATA_BYTES", DEFAULT_MAX_METADATA_BYTES),
        provider_max_archive_bytes=_int("REGISTRY_PROVIDER_MAX_ARCHIVE_BYTES", 400 * 1024 * 1024),
        # The public registries' base URL for the mirror's pull-through cache: unset, each
        # public host name is its own upstream (https://registry.terraform.io).
        mirror_upstream_url=(os.environ.get("REGISTRY_MIRROR_UPSTREAM_URL") or "").rstrip("/")
        or None,
        mirror_cache_ttl=_int("REGISTRY_MIRROR_CACHE_TTL", 3600),
        mirror_max_archive_bytes=_int("REGISTRY_MIRROR_MAX_ARCHIVE_BYTES", 512 * 1024 * 1024),
        mirror_timeout=_float("REGISTRY_MIRROR_TIMEOUT", 10.0),
        # os_arch pairs the cache fetches (e.g. linux_amd64,darwin_arm64); empty: every one.
        mirror_platforms=tuple(
            p.strip()
            for p in os.environ.get("REGISTRY_MIRROR_PLATFORMS", "").split(",")
            if p.strip()
        ),
        mirror_max_seed_bytes=_int("REGISTRY_MIRROR_MAX_SEED_BYTES", 5 * 1024 * 1024),
        outbound_allow=outbound_allow(os.environ.get("REGISTRY_OUTBOUND_ALLOW", "")),
        trivy_path=os.environ.get("REGISTRY_TRIVY_PATH") or None,
        protocol_url=(os.environ.get("REGISTRY_PROTOCOL_URL") or "").rstrip("/") or None,
        scan_seconds=_float("REGISTRY_SCAN_SECONDS", 60.0),
        scan_memory_mb=_int("REGISTRY_SCAN_MEMORY_MB", 1024),
        scan_max_findings=_int("REGISTRY_SCAN_MAX_FINDINGS", 500),
        signing_key=os.environ.get("REGISTRY_SIGNING_KEY") or "alias/registry-dev-signing",
        previous_signing_keys=tuple(
            k.strip()
            for k in os.environ.get("REGISTRY_PREVIOUS_SIGNING_KEYS", "").split(",")
            if k.strip()
        ),
        scan_queue=os.environ.get("REGISTRY_SCAN_QUEUE", "registry-dev-scan"),
        notify_queue=os.environ.get("REGISTRY_NOTIFY_QUEUE", "registry-dev-notify"),
        transfers_queue=os.environ.get("REGISTRY_TRANSFERS_QUEUE", "registry-dev-transfers"),
        audit_retention_days=max(400, _int("REGISTRY_AUDIT_RETENTION_DAYS", 400)),
        audit_bucket=os.environ.get("REGISTRY_AUDIT_BUCKET", "").strip(),
        audit_log_group=os.environ.get("REGISTRY_AUDIT_LOG_GROUP", "").strip(),
    )
