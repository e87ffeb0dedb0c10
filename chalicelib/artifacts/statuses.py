"""The statuses of an uploaded artifact: a module version, a provider version, a provider
platform. One enum for every artifact type, because one pipeline (``artifacts.pipeline``)
leaves them; each type keeps the values it has always stored and shown, so clients see
what they saw before:

* a module version: TFE's values (``reg_ingressing`` and friends, so clients that compare
  them keep working); its VCS steps (``cloning``) come before the pipeline;
* a provider version or platform: ``pending`` (stored as no status), ``verified``,
  ``failed``.

A ``StrEnum``: equal to its text, and stored as that text (the stores write ``str(status)``:
PynamoDB's raw maps accept only plain ``str``).
"""

from __future__ import annotations

from enum import StrEnum


class VersionStatus(StrEnum):
    PENDING = "pending"
    # A module version (TFE's values).
    CLONING = "cloning"  # VCS versions: the commit is being fetched and packed
    CLONE_FAILED = "clone_failed"
    INGRESS_REQUEST_FAILED = "reg_ingress_req_failed"
    INGRESSING = "reg_ingressing"
    INGRESS_FAILED = "reg_ingress_failed"
    OK = "ok"
    # Held back by its organization's publishing policy (``trust.policy``): not served until
    # an owner releases it (then ``ok``).
    QUARANTINED = "quarantined"
    # A provider version (its SHA256SUMS signature) or platform (its archive).
    VERIFIED = "verified"
    FAILED = "failed"
