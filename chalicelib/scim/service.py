"""Rules of SCIM provisioning's site-wide settings and of SCIM tokens (the admin API and the
site administration pages); the resources themselves are ``scim.users`` and ``scim.groups``,
and what follows their groups ``scim.sync``.

* Enabling SCIM needs SAML enabled (SAML signs users in, SCIM provisions them); pausing needs
  SCIM enabled. While SCIM is disabled or paused, ``/scim/v2/Users`` and ``/scim/v2/Groups``
  answer 403 and change nothing (the identity provider retries later); the discovery
  documents keep answering.
* The site keeps an active site admin: taking the flag SCIM gave the last one (changing the
  site-admin group, disabling SCIM) is a 422 (``accounts.users.service``'s setters keep the rule),
  made before SCIM writes anything of that request.
* Every change records its audit event (``core.audit``, the site's partition) after its
  writes: the settings (``setting`` ``scim``: the names changed), a SCIM token created or
  deleted (``scim-token``, never its value), and what the identity provider provisions
  (``scim-user``, ``scim-group``: the actor is the SCIM token, ``actor``).
* A SCIM token authenticates ``/scim/v2`` requests only (the ``Scim`` caller those routes
  declare), never an API request; it expires 29 to 365 days after it is made.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from chalicelib.accounts.teams import service as teams_service
from chalicelib.core.api.access import Access
from chalicelib.core.api.errors import NotFound, Unprocessable, attribute_pointer
from chalicelib.core.audit import events, trail
from chalicelib.core.auth import Principal, TokenModel, generate_token
from chalicelib.core.data.ids import new_id, now
from chalicelib.core.settings import get_settings
from chalicelib.scim import store, sync
from chalicelib.scim.errors import ScimError, not_found
from chalicelib.scim.store import ScimGroupModel, ScimSettingsModel

if TYPE_CHECKING:
    from chalicelib.core.audit.events import Event

TOKEN_MIN_DAYS = 29
TOKEN_MAX_DAYS = 365
SETTINGS_AREA = "scim"
SCIM_TOKEN = "scim-token"


def change_event(
    principal: Principal | None,
    resource_type: str,
    resource_id: str,
    action: str,
    meta: dict[str, Any] | None = None,
    description: str | None = None,
) -> Event:
    """The event of a change to SCIM provisioning (site-wide)."""
    return events.event(
        principal,
        organization=None,
        resource_type=resource_type,
        resource_id=resource_id,
        action=action,
        meta=meta,
        description=description,
    )


def _invalid(name: str, message: str) -> Unprocessable:
    return Unprocessable(f"{name} {message}", pointer=attribute_pointer(name))


# ----- settings --------------------------------------------------------------------------------


def settings() -> ScimSettingsModel:
    return store.load_settings()


def site_admin_group(item: ScimSettingsModel) -> ScimGroupModel | None:
    return store.get_group(item.site_admin_group_id) if item.site_admin_group_id else None


def _saml_enabled() -> bool:
    # Imported here: the site settings bring mail and SMS along, which only enabling needs.
    from chalicelib.admin import service as admin

    values = admin.with_defaults(admin.saml(), admin.SAML_DEFAULTS)
    return bool(values.get("enabled"))


def _settings_values(item: ScimSettingsModel) -> dict[str, Any]:
    return {
        "enabled": bool(item.enabled),
        "paused": bool(item.paused),
        "link-existing-users": bool(item.link_existing_users),
        "site-admin-group-scim-id": item.site_admin_group_id,
    }


def update_settings(principal: Principal, changes: dict[str, Any]) -> ScimSettingsModel:
    """``changes``: the attributes sent (``site-admin-group-scim-id`` may be None: unlink).
    Everything is checked before anything is written."""
    item = store.load_settings()
    before = _settings_values(item)
    enabled = changes.get("enabled")
    paused = changes.get("paused")
    enabled_after = item.enabled if enabled is None else enabled
    if enabled and not item.enabled and not _saml_enabled():
        raise _invalid("enabled", "needs SAML single sign-on enabled first (saml-settings)")
    if paused and not enabled_after:
        raise _invalid("paused", "needs SCIM enabled: a disabled SCIM cannot be paused")
    group_changed = False
    if "site-admin-group-scim-id" in changes:
        group_id = changes["site-admin-group-scim-id"] or None
        if group_id is not None:
            group = store.get_group(group_id)
            if group is None:
                raise _invalid("site-admin-group-scim-id", f"names no SCIM group ({group_id!r})")
            if store.mappings_of_group(group_id):
                raise _invalid(
                    "site-admin-group-scim-id",
                    "names a group linked to a team: unlink it from its teams first",
                )
        group_changed = group_id != item.site_admin_group_id
        if group_changed:  # first: the last active site admin's grant is a 422
            sync.take_back_grants(
                u for u in store.all_users() if group_id not in (u.group_ids or set())
            )
        item.site_admin_group_id = group_id
    if enabled is not None:
        item.enabled = enabled
    if changes.get("link-existing-users") is not None:
        item.link_existing_users = changes["link-existing-users"]
    if paused is not None:
        item.paused = paused
    if not item.enabled:
        item.paused = False
    store.save_versioned(item)
    if group_changed:
        for user in store.all_users():
            sync.site_admin_flag(user, item)
    changed = trail.changed(before, _settings_values(item))
    trail.record(change_event(principal, "setting", SETTINGS_AREA, "updated", {"changed": changed}))
    return item


def disable(principal: Principal) -> ScimSettingsModel:
    """Turn provisioning off (idempotent). As TFE (pausing keeps SCIM's data, disabling does
    not): SCIM tokens, groups (their teams are unlinked and keep their members, the
    site-admin group is forgotten and the flags it gave are taken back) and SCIM users go;
    the instance users stay, with their tokens."""
    users = store.all_users()
    sync.take_back_grants(users)  # first: the last active site admin's is a 422
    item = store.load_settings()
    before = _settings_values(item)
    item.enabled, item.paused, item.site_admin_group_id = False, False, None
    store.save_versioned(item)
    for user in users:
        user.delete()
    for group in store.all_groups():
        for mapping in store.mappings_of_group(group.id):
            mapping.delete()
            teams_service.set_team_scim_link(mapping.team_id, None)
        group.delete()
    tokens = store.all_tokens()
    for token in tokens:
        token.delete()
    meta = {
        "changed": trail.changed(before, _settings_values(item)),
        "scim-users-deleted": len(users),
        "scim-tokens-deleted": len(tokens),
    }
    trail.record(change_event(principal, "setting", SETTINGS_AREA, "deleted", meta))
    return item


def ensure_provisioning(path: str) -> None:
    """Users and Groups are served only while SCIM is enabled and not paused (403)."""
    item = store.load_settings()
    if not item.enabled:
        raise ScimError(403, f"SCIM provisioning is disabled on this instance ({path})")
    if item.paused:
        raise ScimError(403, f"SCIM provisioning is paused on this instance: retry later ({path})")


# ----- tokens ----------------------------------------------------------------------------------


def _authenticate(header: str | None) -> TokenModel:
    """The SCIM token of an ``Authorization: Bearer`` header, or a SCIM 401."""
    scheme, _, secret = (header or "").strip().partition(" ")
    secret = secret.strip()
    if scheme.lower() != "bearer" or not secret:
        raise ScimError(401, "send a SCIM token: 'Authorization: Bearer <token>'")
    token = store.token_by_secret(secret)
    if token is None:
        raise ScimError(401, "invalid or revoked SCIM token")
    if token.expired_at is not None and token.expired_at <= now():
        raise ScimError(401, "the SCIM token has expired")
    return token


def _admit(request: Any) -> None:
    """The ``Scim`` caller: a valid SCIM token (a SCIM 401), never on the hosted edition (404,
    before the token is read)."""
    if get_settings().hosted:
        raise not_found("SCIM is served by the self-hosted edition only")
    # Kept on the request: the actor of the changes the request makes (``actor``).
    request.scim_token = _authenticate(request.headers.get("authorization"))


# What every ``/scim/v2`` route declares (``scim.routes.scim_route``): the route wrapper admits
# the caller before the handler runs, as for every other kind (``chalicelib.core.api.access``).
Scim = Access(
    "scim",
    _admit,
    scheme="scimToken",
    description="a SCIM token (404 on the hosted edition)",
)


def actor(token: TokenModel) -> Principal:
    """The SCIM token as the actor of an audit event (``accessor_id``: its id; described as
    a SCIM token). Not a caller of anything else: no route admits it but ``/scim/v2``."""
    return Principal("organization", token.id, token.id)


def create_token(
    principal: Principal, description: str | None, expired_at: datetime | None
) -> tuple[TokenModel, str]:
    moment = now()
    if expired_at is None:
        expired_at = moment + timedelta(days=TOKEN_MAX_DAYS)
    elif expired_at < moment + timedelta(days=TOKEN_MIN_DAYS) or expired_at > moment + timedelta(
        days=TOKEN_MAX_DAYS, minutes=5
    ):
        raise _invalid(
            "expired-at",
            f"must be between {TOKEN_MIN_DAYS} and {TOKEN_MAX_DAYS} days from now",
        )
    secret = generate_token()
    token = TokenModel(
        store.scim_token_hash(secret),
        id=new_id("at"),
        kind=store.TOKEN_KIND,
        owner_id=store.TOKEN_OWNER,
        description=description,
        created_by=principal.id,
        created_at=moment,
        expired_at=expired_at,
    )
    token.save(condition=TokenModel.token_hash.does_not_exist())
    meta = {"description": description, "expired-at": expired_at.isoformat()}
    trail.record(change_event(principal, SCIM_TOKEN, token.id, "created", meta))
    return token, secret


def list_tokens() -> list[TokenModel]:
    return store.all_tokens()


def get_token(token_id: str) -> TokenModel:
    token = store.token_by_id(token_id)
    if token is None:
        raise NotFound(f"SCIM token {token_id} not found")
    return token


def delete_token(principal: Principal, token_id: str) -> None:
    token = get_token(token_id)
    token.delete()
    meta = {"description": token.description}
    trail.record(change_event(principal, SCIM_TOKEN, token.id, "deleted", meta))
