"""The module and version statuses as the pages show them: the module pages (``pages``) and
the publishing pages share them, without either loading the other's services."""

from __future__ import annotations

from chalicelib.artifacts.statuses import VersionStatus

FAILED = {
    VersionStatus.INGRESS_FAILED,
    VersionStatus.CLONE_FAILED,
    VersionStatus.INGRESS_REQUEST_FAILED,
}
STATUS_LABELS = {
    "ok": "OK",
    "pending": "Pending",
    "cloning": "Cloning",
    "clone_failed": "Clone failed",
    "reg_ingress_req_failed": "Ingest request failed",
    "reg_ingressing": "Ingesting",
    "reg_ingress_failed": "Ingest failed",
    "quarantined": "Quarantined",
    "setup_complete": "Published",
    "no_version_tags": "No version tags",
    "setup_failed": "Setup failed",
}


def status_label(status: str | None) -> str:
    return STATUS_LABELS.get(status or "", status or "unknown")
