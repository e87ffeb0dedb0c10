"""GPG keys of the private registry: a namespace (an organization) holds the public keys
its provider versions are signed with. Publishers (``providers.service.rights``) add,
move and delete keys; members read them."""

from __future__ import annotations

from chalicelib.core.api.errors import NotFound, Unprocessable
from chalicelib.core.auth import Principal
from chalicelib.core.data.ids import new_id, now
from chalicelib.providers import audited, gpg, service, store
from chalicelib.providers.store import GpgKeyModel, Taken

# filter[namespace] names at most this many organizations (one permission check each).
MAX_NAMESPACES = 20


def check_registry(registry: str) -> None:
    if registry != "private":
        raise NotFound(f"registry {registry!r} not found: GPG keys are in the 'private' registry")


def list_keys(principal: Principal, namespaces: list[str]) -> list[GpgKeyModel]:
    if not namespaces:
        raise Unprocessable(
            "filter[namespace] is required: one or more organization names",
            parameter="filter[namespace]",
        )
    if len(namespaces) > MAX_NAMESPACES:
        raise Unprocessable(
            f"filter[namespace]: at most {MAX_NAMESPACES} namespaces, not {len(namespaces)}",
            parameter="filter[namespace]",
        )
    found: list[GpgKeyModel] = []
    for namespace in namespaces:
        service.rights(principal, namespace)  # a 404 for one the caller cannot read
        found += store.gpg_keys(namespace)
    return found


def create_key(principal: Principal, namespace: str | None, armor: str | None) -> GpgKeyModel:
    if not namespace:
        raise Unprocessable("namespace is required", pointer="/data/attributes/namespace")
    if not armor:
        raise Unprocessable("ascii-armor is required", pointer="/data/attributes/ascii-armor")
    service.require_publish(service.rights(principal, namespace), "adding a GPG key")
    parsed = gpg.parse_public_key(armor)
    moment = now()
    key = GpgKeyModel(
        namespace,
        parsed.key_id,
        id=new_id("gpgkey"),
        ascii_armor=armor,
        created_at=moment,
        updated_at=moment,
    )
    try:
        store.insert(key, audited.gpg_key_event(principal, key, "created", namespace))
    except Taken:
        raise Unprocessable(
            f"key {parsed.key_id} has already been added to {namespace}",
            pointer="/data/attributes/ascii-armor",
        ) from None
    return key


def _find(namespace: str, key_id: str) -> GpgKeyModel:
    found = store.gpg_key(namespace, key_id)
    if found is None:
        raise NotFound(f"GPG key {key_id} not found in {namespace}")
    return found


def get_key(principal: Principal, namespace: str, key_id: str) -> GpgKeyModel:
    service.rights(principal, namespace)
    return _find(namespace, key_id)


def _managed(principal: Principal, namespace: str, key_id: str, what: str) -> GpgKeyModel:
    service.require_publish(service.rights(principal, namespace), what)
    return _find(namespace, key_id)


def update_key(
    principal: Principal, namespace: str, key_id: str, target: str | None
) -> GpgKeyModel:
    """Move a key to another namespace the caller publishes in (the only change TFE
    allows). A target the caller cannot manage, or that does not exist, is refused with
    ``namespace not authorized`` (go-tfe reads those words), the same for both."""
    if not target:
        raise Unprocessable("namespace is required", pointer="/data/attributes/namespace")
    key = _managed(principal, namespace, key_id, "updating a GPG key")
    if target == key.namespace:
        return key
    try:
        allowed = service.rights(principal, target).publish
    except NotFound:
        allowed = False
    if not allowed:
        raise Unprocessable(
            f"namespace not authorized: {target!r} is not an organization you publish providers in",
            pointer="/data/attributes/namespace",
        )
    moved = GpgKeyModel(
        target,
        key.key_id,
        id=key.id,
        ascii_armor=key.ascii_armor,
        created_at=key.created_at,
        updated_at=now(),
    )
    # Recorded where the key is now: the namespace whose providers it may sign from now on.
    event = audited.gpg_key_event(
        principal, moved, "updated", target, changed=["namespace"], **{"moved-from": namespace}
    )
    try:
        store.move_key(key, moved, event)
    except Taken:
        raise Unprocessable(
            f"key {key.key_id} is already in {target}", pointer="/data/attributes/namespace"
        ) from None
    return moved


def delete_key(principal: Principal, namespace: str, key_id: str) -> None:
    key = _managed(principal, namespace, key_id, "deleting a GPG key")
    try:
        store.delete(key, audited.gpg_key_event(principal, key, "deleted", namespace))
    except store.Gone:
        raise NotFound(f"GPG key {key_id} not found in {namespace}") from None
