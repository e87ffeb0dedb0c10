"""PynamoDB models of registry modules and module versions.

A module item is keyed by organization and ``<registry>#<namespace>#<name>#<provider>``, so
one Query lists an organization's modules and a ``begins_with`` finds every provider of a
name. Versions live one item each in the module's partition, ordered by a SemVer sort key.
The module keeps ``version_statuses`` (version -> status/error) so reads of a module never
touch the versions table.
"""

from __future__ import annotations

from pynamodb.attributes import (
    BooleanAttribute,
    JSONAttribute,
    MapAttribute,
    NumberAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
)
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex

from chalicelib.core import db


def module_key(registry: str, namespace: str, name: str, provider: str) -> str:
    return f"{registry}#{namespace}#{name}#{provider}"


def name_prefix(registry: str, namespace: str, name: str) -> str:
    return f"{registry}#{namespace}#{name}#"


class ModuleById(GlobalSecondaryIndex):
    class Meta:
        index_name = "by-id"
        projection = AllProjection()

    id = UnicodeAttribute(hash_key=True)


class ModuleByWebhook(GlobalSecondaryIndex):
    """Sparse: only VCS-backed modules have a webhook id."""

    class Meta:
        index_name = "by-webhook"
        projection = AllProjection()

    webhook_id = UnicodeAttribute(hash_key=True)


@db.register
class ModuleModel(db.Model):
    Meta = db.table("registry-modules")

    organization = UnicodeAttribute(hash_key=True)
    key = UnicodeAttribute(range_key=True)
    id = UnicodeAttribute()
    registry_name = UnicodeAttribute()
    namespace = UnicodeAttribute()
    name = UnicodeAttribute()
    provider = UnicodeAttribute()
    status = UnicodeAttribute(default="pending")
    publishing_mechanism = UnicodeAttribute(default="non_vcs")
    no_code = BooleanAttribute(default=False)
    test_config = JSONAttribute(null=True)
    # version -> {"status": ..., "error": ...}; updated with per-key SET/REMOVE so concurrent
    # writers of different versions never overwrite each other.
    version_statuses = MapAttribute(default=dict)
    # VCS-backed modules only: the repository settings (chalicelib.registry.publishing.service), the
    # webhook id in the webhook URL, its KMS-sealed secret, the webhook's registration at
    # the VCS host (status, the host's hook id, the URL registered) and the last tag sync's
    # report.
    vcs_repo = JSONAttribute(null=True)
    webhook_id = UnicodeAttribute(null=True)
    webhook_secret = JSONAttribute(null=True)
    webhook_registration = JSONAttribute(null=True)
    vcs_sync = JSONAttribute(null=True)
    created_at = UTCDateTimeAttribute()
    updated_at = UTCDateTimeAttribute()
    by_id = ModuleById()
    by_webhook = ModuleByWebhook()

    def statuses(self) -> dict[str, dict[str, str]]:
        """version -> {"status", "error"?, "published-at"?} as a plain dict."""
        return self.version_statuses.as_dict() if self.version_statuses else {}


@db.register
class ModuleVersionModel(db.Model):
    Meta = db.table("registry-module-versions")

    module_id = UnicodeAttribute(hash_key=True)
    order_key = UnicodeAttribute(range_key=True)
    id = UnicodeAttribute()
    version = UnicodeAttribute()
    status = UnicodeAttribute(default="pending")
    error = UnicodeAttribute(null=True)
    source = UnicodeAttribute(default="tfe-api")
    commit_sha = UnicodeAttribute(null=True)
    tag = UnicodeAttribute(null=True)
    organization = UnicodeAttribute()
    module_key = UnicodeAttribute()
    upload_key = UnicodeAttribute()
    archive_key = UnicodeAttribute(null=True)
    metadata_key = UnicodeAttribute(null=True)
    sha256 = UnicodeAttribute(null=True)
    size = NumberAttribute(null=True)
    created_at = UTCDateTimeAttribute()
    updated_at = UTCDateTimeAttribute()
