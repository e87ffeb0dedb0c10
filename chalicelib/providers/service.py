"""Private providers, their versions and platforms: validation, permissions, cascades.

Permissions as TFE has them: the owners and teams with ``manage-providers`` publish
(create, delete, upload); every member of the organization reads; anyone else gets a 404,
as if the organization did not exist.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from chalicelib.accounts import authorization
from chalicelib.artifacts import objects, queue, semver
from chalicelib.artifacts.statuses import VersionStatus
from chalicelib.core import tagbindings
from chalicelib.core.api.errors import Conflict, Forbidden, NotFound, Unprocessable
from chalicelib.core.audit import trail
from chalicelib.core.audit.events import Event
from chalicelib.core.auth import Principal
from chalicelib.core.data import db
from chalicelib.core.data.ids import new_id, now
from chalicelib.core.settings import get_settings
from chalicelib.core.tagbindings import Binding
from chalicelib.providers import audited, keys, store
from chalicelib.providers.store import (
    ProviderModel,
    ProviderPlatformModel,
    ProviderVersionModel,
    Taken,
)

# Provider names and public namespaces: lowercase letters, digits, dashes and underscores
# (Terraform lowercases what it reads, so an upper-case name could never be installed). TFE
# accepts the underscore: go-tfe's TestRegistryProvidersCreate makes ``provider_name`` in
# ``public_namespace``.
NAME = re.compile(r"^[0-9a-z](?:[0-9a-z_-]{0,62}[0-9a-z])?\Z")
# Platforms: go-tfe's tests send random UUIDs; no underscore, which separates the two in
# the binary's object key.
PLATFORM_PART = re.compile(r"^[0-9A-Za-z-]{1,64}\Z")
FILENAME = re.compile(r"^[0-9A-Za-z+-][0-9A-Za-z._+-]{0,254}\Z")
SHASUM = re.compile(r"^[0-9A-Za-z]{1,128}\Z")
KEY_ID = re.compile(r"^[0-9A-Za-z]{1,64}\Z")
PROTOCOL = re.compile(r"^[0-9]{1,3}\.[0-9]{1,3}\Z")
MAX_PROTOCOLS = 10
REGISTRIES = ("private", "public")


@dataclass(frozen=True)
class ProviderRef:
    organization: str
    registry: str
    namespace: str
    name: str

    @property
    def key(self) -> str:
        return store.provider_key(self.registry, self.namespace, self.name)


@dataclass(frozen=True)
class Rights:
    """What the caller may do with an organization's providers."""

    read: bool
    publish: bool


# ----- permissions --------------------------------------------------------------------------


def rights(principal: Principal, organization: str) -> Rights:
    """The caller's rights, or a 404 when the organization is missing or not theirs: the
    owners, site admins and teams with ``manage-providers`` publish (``OrgAccess``), as
    ``manage-modules`` decides for modules."""
    access = authorization.organization_access(principal, organization)
    return Rights(read=True, publish=authorization.allows(access, "manage-providers"))


def require_publish(rights_: Rights, what: str) -> None:
    if not rights_.publish:
        raise NotFound(
            f"not found: {what} needs a user or team token of the owners team or a team "
            "with the manage-providers permission"
        )


# ----- validation ---------------------------------------------------------------------------


def _required(value: str | None, field: str) -> str:
    if not value:
        raise Unprocessable(f"{field} is required", pointer=f"/data/attributes/{field}")
    return value


def _matching(value: str | None, field: str, pattern: re.Pattern[str], rule: str) -> str:
    value = _required(value, field)
    if not pattern.match(value):
        raise Unprocessable(f"{field} {rule}", pointer=f"/data/attributes/{field}")
    return value


def _registry_name(registry: str | None) -> str:
    """The ``registry-name`` of a new provider, refused as TFE words it (go-tfe's
    TestRegistryProvidersCreate compares the texts): a 422 for each failed rule."""
    pointer = "/data/attributes/registry-name"
    if registry in REGISTRIES:
        return registry
    not_listed = Unprocessable("Registry name is not included in the list", pointer=pointer)
    if not registry:
        raise Unprocessable("Registry name can't be blank", pointer=pointer, more=(not_listed,))
    raise not_listed


def check_registry(registry: str) -> str:
    if registry not in REGISTRIES:
        raise NotFound(f"registry {registry!r} not found: use 'private' or 'public'")
    if registry == "public" and not get_settings().hosted:
        raise Forbidden("public provider curation is disabled on this instance")
    return registry


# What a publisher's create answers with (the create checked the right).
PUBLISHER = Rights(read=True, publish=True)


def require_private(ref: ProviderRef) -> None:
    if ref.registry != "private":
        raise Unprocessable("only private providers have versions and platforms here")


# ----- providers ----------------------------------------------------------------------------


def create_provider(
    principal: Principal,
    organization: str,
    registry: str | None,
    namespace: str | None,
    name: str | None,
) -> tuple[ProviderModel, Rights]:
    rights_ = rights(principal, organization)
    require_publish(rights_, "creating a provider")
    registry = check_registry(_registry_name(registry))
    name = _matching(
        name,
        "name",
        NAME,
        "may contain lowercase letters, digits, dashes and underscores (at most 64)",
    )
    namespace = _required(namespace, "namespace")
    if registry == "private" and namespace != organization:
        raise Unprocessable(
            f"namespace of a private provider must be the organization ({organization!r})",
            pointer="/data/attributes/namespace",
        )
    if registry == "public" and not NAME.match(namespace):
        raise Unprocessable("namespace is not a valid name", pointer="/data/attributes/namespace")
    moment = now()
    provider = ProviderModel(
        organization,
        store.provider_key(registry, namespace, name),
        id=new_id("prov"),
        registry_name=registry,
        namespace=namespace,
        name=name,
        created_at=moment,
        updated_at=moment,
    )
    try:
        store.insert(provider, audited.provider_event(principal, provider, "created"))
    except Taken:
        raise Unprocessable(
            f"provider {namespace}/{name} has already been taken in the {registry} registry",
            pointer="/data/attributes/name",
        ) from None
    return provider, rights_


def list_providers(
    principal: Principal, organization: str, registry: str | None, q: str | None
) -> tuple[list[ProviderModel], Rights]:
    rights_ = rights(principal, organization)
    found = store.providers_of(organization, registry)
    if q:
        needle = q.lower()
        found = [p for p in found if needle in p.name or needle in p.namespace.lower()]
    return found, rights_


def get_provider(principal: Principal, ref: ProviderRef) -> tuple[ProviderModel, Rights]:
    rights_ = rights(principal, ref.organization)
    found = store.provider(ref.organization, ref.key)
    if found is None:
        raise NotFound(f"provider {ref.namespace}/{ref.name} not found")
    return found, rights_


def get_provider_by_id(principal: Principal, provider_id: str) -> tuple[ProviderModel, Rights]:
    found = store.provider_by_id(provider_id)
    if found is None or not authorization.can_read_organization(principal, found.organization):
        raise NotFound(f"registry provider {provider_id!r} not found")
    return found, rights(principal, found.organization)


def update_provider(
    principal: Principal, ref: ProviderRef, tag_bindings: Sequence[Binding] | None
) -> tuple[ProviderModel, Rights]:
    """Tag bindings are all a provider's PATCH changes (as go-tfe's ``Update`` says):
    ``tag_bindings`` (already validated, bounded as modules' are) replaces the set, kept keys
    keeping their ids; None leaves it. Publishers only, like every other change."""
    provider, rights_ = get_provider(principal, ref)
    require_publish(rights_, "updating a provider")
    moment = now()
    actions = [ProviderModel.updated_at.set(moment)]
    changed = []
    if tag_bindings is not None:
        replaced = tagbindings.replace(provider.tag_bindings or [], tag_bindings)
        actions.append(ProviderModel.tag_bindings.set(replaced))
        changed.append("tag-bindings")
    event = audited.provider_event(principal, provider, "updated", changed=changed)
    try:
        store.update_provider(provider, actions, event)
    except store.Gone:
        raise NotFound("the provider was deleted while it was being updated") from None
    provider.updated_at = moment
    if tag_bindings is not None:
        provider.tag_bindings = replaced
    return provider, rights_


def delete_provider(principal: Principal, ref: ProviderRef) -> None:
    provider, rights_ = get_provider(principal, ref)
    require_publish(rights_, "deleting a provider")
    _delete_provider_record(provider, audited.provider_event(principal, provider, "deleted"))


def _delete_provider_record(provider: ProviderModel, event: Event | None = None) -> None:
    """The provider with its versions, platforms and their files (the provider last, so an
    interrupted delete can be repeated), with ``event`` (one for the whole delete; None: a
    part of the organization's delete, which records its own)."""
    for version in store.versions_of(provider.id):
        _delete_version(provider, version)
    _delete_last(provider, event)


def _delete_last(item: db.Model, event: Event | None) -> None:
    """The change's last item, deleted with its event (a 404 when it went meanwhile: the
    concurrent delete recorded its own)."""
    if event is None:
        item.delete()
        return
    try:
        store.delete(item, event)
    except store.Gone:
        raise NotFound("it was deleted meanwhile") from None


def delete_all_for_organization(organization: str) -> None:
    """Every provider (public entries too) and GPG key of an organization being deleted
    (``lifecycle.delete_organization``): a new organization of that name starts empty."""
    for provider in store.providers_of(organization):
        _delete_provider_record(provider)
    store.delete_all(store.gpg_keys(organization))


# ----- versions -----------------------------------------------------------------------------


def _publishable(principal: Principal, ref: ProviderRef, what: str) -> ProviderModel:
    require_private(ref)
    provider, rights_ = get_provider(principal, ref)
    require_publish(rights_, what)
    return provider


def create_version(
    principal: Principal,
    ref: ProviderRef,
    version: str | None,
    key_id: str | None,
    protocols: list[str] | None,
) -> tuple[ProviderModel, ProviderVersionModel]:
    provider = _publishable(principal, ref, "creating a provider version")
    version = _required(version, "version")
    try:
        parsed = semver.parse(version)
    except semver.InvalidVersion as exc:
        raise Unprocessable(str(exc), pointer="/data/attributes/version") from None
    key_id = _matching(key_id, "key-id", KEY_ID, "must be a GPG key id (letters and digits)")
    protocols = list(protocols or [])
    if len(protocols) > MAX_PROTOCOLS:
        raise Unprocessable(
            f"protocols: at most {MAX_PROTOCOLS} items", pointer="/data/attributes/protocols"
        )
    for index, protocol in enumerate(protocols):
        if not PROTOCOL.match(protocol):
            raise Unprocessable(
                f"protocols: {protocol!r} is not a protocol version such as '5.0' or '6.0'",
                pointer=f"/data/attributes/protocols/{index}",
            )
    moment = now()
    item = ProviderVersionModel(
        provider.id,
        parsed.order_key,
        id=new_id("provver"),
        version=version,
        key_id=key_id,
        protocols=protocols,
        created_by={"type": principal.kind, "id": principal.id},
        created_at=moment,
        updated_at=moment,
    )
    try:
        store.insert(item, audited.version_event(principal, provider, item, "created"))
    except Taken:
        raise Unprocessable(
            f"version {version} has already been taken", pointer="/data/attributes/version"
        ) from None
    return provider, item


def list_versions(
    principal: Principal, ref: ProviderRef
) -> tuple[ProviderModel, list[ProviderVersionModel], Rights]:
    provider, rights_ = get_provider(principal, ref)
    return provider, store.versions_of(provider.id), rights_


def latest_verified(versions: Iterable[ProviderVersionModel]) -> ProviderVersionModel | None:
    """The provider's latest version: among the verified ones, ``semver.latest_of`` (a
    release before any pre-release), as for modules; None when none verified."""
    verified = {v.version: v for v in versions if v.status == VersionStatus.VERIFIED}
    latest = semver.latest_of(semver.parse(text) for text in verified)
    return verified[latest.text] if latest else None


def _version_of(provider: ProviderModel, version: str) -> ProviderVersionModel:
    found = store.version_of(provider.id, version)
    if found is None:
        raise NotFound(f"version {version} of {provider.namespace}/{provider.name} not found")
    return found


def get_version(
    principal: Principal, ref: ProviderRef, version: str
) -> tuple[ProviderModel, ProviderVersionModel, Rights]:
    require_private(ref)
    provider, rights_ = get_provider(principal, ref)
    return provider, _version_of(provider, version), rights_


def delete_version(principal: Principal, ref: ProviderRef, version: str) -> None:
    provider = _publishable(principal, ref, "deleting a provider version")
    found = _version_of(provider, version)
    _delete_version(provider, found, audited.version_event(principal, provider, found, "deleted"))


def _delete_version(
    provider: ProviderModel, version: ProviderVersionModel, event: Event | None = None
) -> None:
    platforms = store.platforms_of(version.id)
    store.unserve_version(provider, version.version, platforms)  # the protocol stops first
    objects.delete_objects(
        [keys.shasums_key(provider.id, version.version)]
        + [keys.shasums_sig_key(provider.id, version.version)]
        + [_binary_key(provider, version, p) for p in platforms]
        + [keys.provenance_key(provider.id, version.version)]
    )
    store.delete_all(platforms)
    _delete_last(version, event)


# ----- platforms ----------------------------------------------------------------------------


def _binary_key(
    provider: ProviderModel, version: ProviderVersionModel, platform: ProviderPlatformModel
) -> str:
    return keys.binary_key(
        provider.id, version.version, platform.os, platform.arch, platform.filename
    )


def create_platform(
    principal: Principal,
    ref: ProviderRef,
    version: str,
    os_: str | None,
    arch: str | None,
    shasum: str | None,
    filename: str | None,
) -> tuple[ProviderModel, ProviderVersionModel, ProviderPlatformModel]:
    provider = _publishable(principal, ref, "creating a provider platform")
    found = _version_of(provider, version)
    rule = "may contain letters, digits and dashes (at most 64)"
    os_ = _matching(os_, "os", PLATFORM_PART, rule)
    arch = _matching(arch, "arch", PLATFORM_PART, rule)
    shasum = _matching(shasum, "shasum", SHASUM, "must be the archive's SHA-256 in hex")
    filename = _matching(
        filename, "filename", FILENAME, "must be a file name (letters, digits, '.', '_', '-', '+')"
    )
    moment = now()
    platform = ProviderPlatformModel(
        found.id,
        store.platform_key(os_, arch),
        id=new_id("provpltfrm"),
        os=os_,
        arch=arch,
        shasum=shasum.lower(),
        filename=filename,
        created_at=moment,
        updated_at=moment,
    )
    event = audited.platform_event(principal, provider, found, platform, "created")
    try:
        store.insert(platform, event)
    except Taken:
        raise Unprocessable(
            f"platform {os_}/{arch} has already been taken for version {found.version}",
            pointer="/data/attributes/os",
        ) from None
    return provider, found, platform


def list_platforms(
    principal: Principal, ref: ProviderRef, version: str
) -> tuple[ProviderModel, ProviderVersionModel, list[ProviderPlatformModel], Rights]:
    provider, found, rights_ = get_version(principal, ref, version)
    return provider, found, store.platforms_of(found.id), rights_


def platforms_read(version: ProviderVersionModel) -> list[ProviderPlatformModel]:
    """The platforms of a version the caller has just read through this service (its
    rights checked then, as ``list_versions`` does): one Query, without reading the
    organization, the provider and the version a second time (the provider page)."""
    return store.platforms_of(version.id)


def get_platform(
    principal: Principal, ref: ProviderRef, version: str, os_: str, arch: str
) -> tuple[ProviderModel, ProviderVersionModel, ProviderPlatformModel, Rights]:
    provider, found, rights_ = get_version(principal, ref, version)
    platform = store.platform_of(found.id, os_, arch)
    if platform is None:
        raise NotFound(f"platform {os_}/{arch} of version {version} not found")
    return provider, found, platform, rights_


def delete_platform(
    principal: Principal, ref: ProviderRef, version: str, os_: str, arch: str
) -> None:
    provider, found, platform, rights_ = get_platform(principal, ref, version, os_, arch)
    require_publish(rights_, "deleting a provider platform")
    store.serve_platform(provider, found.version, platform, None)  # the protocol stops first
    objects.delete_objects([_binary_key(provider, found, platform)])
    _delete_last(platform, audited.platform_event(principal, provider, found, platform, "deleted"))


def retry_platform(
    principal: Principal, ref: ProviderRef, version: str, os_: str, arch: str
) -> tuple[ProviderModel, ProviderVersionModel, ProviderPlatformModel, Rights]:
    """Check a platform's uploaded archive again (its S3 event was lost or dead-lettered,
    or its check failed for a reason since fixed), as a module's retry ingests its stuck
    uploads again: the upload's S3 event is queued again, and its version's too while the
    version is not verified (the platform is checked once it is). A 409 when the platform
    is verified, a 422 when nothing was uploaded to check."""
    provider, found, platform, rights_ = get_platform(principal, ref, version, os_, arch)
    require_publish(rights_, "retrying a provider platform's check")
    what = f"platform {platform.os}/{platform.arch} of version {found.version}"
    if platform.status == VersionStatus.VERIFIED:
        raise Conflict(f"{what} is verified: there is nothing to retry")
    archive = _binary_key(provider, found, platform)
    if not objects.exists(archive):
        raise Unprocessable(
            f"{what} has no uploaded archive to check: upload it to its provider-binary-upload link"
        )
    again = [archive]
    if found.status != VersionStatus.VERIFIED:
        files = [
            keys.shasums_key(provider.id, found.version),
            keys.shasums_sig_key(provider.id, found.version),
        ]
        if not all(objects.exists(key) for key in files):
            raise Unprocessable(
                f"version {found.version} has not both SHA256SUMS and SHA256SUMS.sig "
                f"uploaded: {what} is checked once they are"
            )
        again = files + again
    queue.enqueue_upload_events(again)
    # Asking for the check again is the caller's change (the queue, not a table): its event
    # is written once the events are queued.
    trail.record(audited.platform_event(principal, provider, found, platform, "retried"))
    return provider, found, platform, rights_


# ----- links --------------------------------------------------------------------------------


def version_links(
    provider: ProviderModel, version: ProviderVersionModel, rights_: Rights
) -> dict[str, str]:
    """Upload links for a publisher until the file has arrived; download links after."""
    out: dict[str, str] = {}
    files = (
        ("shasums", version.shasums_uploaded, keys.shasums_key(provider.id, version.version)),
        (
            "shasums-sig",
            version.shasums_sig_uploaded,
            keys.shasums_sig_key(provider.id, version.version),
        ),
    )
    for name, uploaded, key in files:
        if uploaded:
            out[f"{name}-download"] = objects.presigned_download_url(key)
        elif rights_.publish:
            out[f"{name}-upload"] = objects.presigned_upload_url(key)
    return out


def platform_links(
    provider: ProviderModel,
    version: ProviderVersionModel,
    platform: ProviderPlatformModel,
    rights_: Rights,
) -> dict[str, str]:
    key = _binary_key(provider, version, platform)
    if platform.provider_binary_uploaded:
        return {"provider-binary-download": objects.presigned_download_url(key)}
    if rights_.publish:
        return {"provider-binary-upload": objects.presigned_upload_url(key)}
    return {}
