"""Rules of SCIM provisioning: the site-wide settings, SCIM tokens, the users and groups an
identity provider pushes, and the teams that follow a group.

* Enabling SCIM needs SAML enabled (SAML signs users in, SCIM provisions them); pausing needs
  SCIM enabled. While SCIM is disabled or paused, ``/scim/v2/Users`` and ``/scim/v2/Groups``
  answer 403 and change nothing (the identity provider retries later); the discovery
  documents keep answering.
* A provisioned user is a user of the instance: its username is the SCIM ``userName`` made
  valid (``jane.doe@example.com`` -> ``jane-doe``, numbered when taken), and an existing
  user with that username and the same email is linked instead of duplicated. Deactivating
  (``active: false``) or deleting a SCIM user suspends the instance user, as TFE does (no
  sign-in of any kind: ``UserModel.may_sign_in``), deletes every API token of that user and
  takes it out of linked teams and of the site-admin group's grant; the instance user
  record stays (what it published keeps an author). Reactivating it (or provisioning it
  again) lifts that suspension, never one a site admin made.
* The site keeps an active site admin: deactivating or deleting the last one, or taking
  the flag SCIM gave the last one (leaving the site-admin group, deleting or changing that
  group, disabling SCIM), is a 422 (``accounts.users.service``'s setters keep the rule), made
  before SCIM writes anything of that request.
* A team linked to a group has exactly the group's active members, kept so on every change
  the identity provider makes (unless the link's sync is paused; resuming reconciles). The
  owners team cannot be linked, nor can the site-admin group.
* Members of the site-admin group (``site-admin-group-scim-id``) are site admins; SCIM takes
  the flag back only from users it granted it to.
"""

from __future__ import annotations

import contextlib
import json
import re
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from chalicelib.accounts.teams import service as teams_service
from chalicelib.accounts.tokens import service as tokens_service
from chalicelib.accounts.users import service as users_service
from chalicelib.core.api import bounds
from chalicelib.core.api.bounds import utf8_length
from chalicelib.core.api.errors import Conflict, NotFound, Unprocessable, attribute_pointer
from chalicelib.core.auth import TokenModel, generate_token
from chalicelib.core.data.ids import new_id, now
from chalicelib.scim import protocol, store
from chalicelib.scim.errors import ScimError, bad_request, not_found
from chalicelib.scim.store import ScimGroupModel, ScimMappingModel, ScimSettingsModel, ScimUserModel

if TYPE_CHECKING:
    from pynamodb.expressions.update import Action

TOKEN_MIN_DAYS = 29
TOKEN_MAX_DAYS = 365
MAX_NAME = 256
# A member's value (a User's SCIM id: ours are far shorter).
MAX_ID = bounds.IDENTIFIER
MAX_ATTRIBUTES_BYTES = 32_000
MAX_MEMBERS_PER_REQUEST = 1000
_USERNAME_INVALID = re.compile(r"[^A-Za-z0-9_-]+")

# Top-level User attributes kept as sent (besides userName, externalId, active), by the
# lower-cased name the identity provider may use.
USER_ATTRIBUTES = {
    name.lower(): name
    for name in (
        "name",
        "displayName",
        "nickName",
        "profileUrl",
        "title",
        "userType",
        "preferredLanguage",
        "locale",
        "timezone",
        "emails",
        "phoneNumbers",
        "ims",
        "photos",
        "addresses",
        "entitlements",
        "roles",
        "x509Certificates",
        protocol.ENTERPRISE_SCHEMA,
    )
}
_READ_ONLY = {"id", "meta", "schemas", "groups", "password"}


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


def update_settings(changes: dict[str, Any]) -> ScimSettingsModel:
    """``changes``: the attributes sent (``site-admin-group-scim-id`` may be None: unlink).
    Everything is checked before anything is written."""
    item = store.load_settings()
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
            _take_back_grants(
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
            _sync_site_admin(user, item)
    return item


def disable() -> ScimSettingsModel:
    """Turn provisioning off (idempotent). As TFE (pausing keeps SCIM's data, disabling does
    not): SCIM tokens, groups (their teams are unlinked and keep their members, the
    site-admin group is forgotten and the flags it gave are taken back) and SCIM users go;
    the instance users stay, with their tokens."""
    users = store.all_users()
    _take_back_grants(users)  # first: the last active site admin's is a 422
    item = store.load_settings()
    item.enabled, item.paused, item.site_admin_group_id = False, False, None
    store.save_versioned(item)
    for user in users:
        user.delete()
    for group in store.all_groups():
        for mapping in store.mappings_of_group(group.id):
            mapping.delete()
            teams_service.set_team_scim_link(mapping.team_id, None)
        group.delete()
    for token in store.all_tokens():
        token.delete()
    return item


def ensure_provisioning(path: str) -> None:
    """Users and Groups are served only while SCIM is enabled and not paused (403)."""
    item = store.load_settings()
    if not item.enabled:
        raise ScimError(403, f"SCIM provisioning is disabled on this instance ({path})")
    if item.paused:
        raise ScimError(403, f"SCIM provisioning is paused on this instance: retry later ({path})")


# ----- tokens ----------------------------------------------------------------------------------


def authenticate(header: str | None) -> TokenModel:
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


def create_token(
    description: str | None, expired_at: datetime | None, created_by: str
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
        created_by=created_by,
        created_at=moment,
        expired_at=expired_at,
    )
    token.save(condition=TokenModel.token_hash.does_not_exist())
    return token, secret


def list_tokens() -> list[TokenModel]:
    return store.all_tokens()


def get_token(token_id: str) -> TokenModel:
    token = store.token_by_id(token_id)
    if token is None:
        raise NotFound(f"SCIM token {token_id} not found")
    return token


def delete_token(token_id: str) -> None:
    get_token(token_id).delete()


# ----- users -----------------------------------------------------------------------------------


def get_user(scim_id: str) -> ScimUserModel:
    user = store.get_user(scim_id)
    if user is None:
        raise not_found(f"User {scim_id} not found")
    return user


def _string(value: Any, name: str, *, required: bool = False) -> str | None:
    if value is None:
        if required:
            raise bad_request(f"{name} is required")
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise bad_request(f"{name} must be a non-empty string")
    if len(value) > MAX_NAME:
        raise bad_request(f"{name} must be at most {MAX_NAME} characters")
    return value


def _user_fields(body: Any) -> tuple[str, str | None, bool, dict[str, Any]]:
    """``(userName, externalId, active, other attributes)`` of a User document."""
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object", "invalidSyntax")
    user_name = _string(protocol.lookup(body, "username"), "userName", required=True)
    external_id = _string(protocol.lookup(body, "externalid"), "externalId")
    active_raw = protocol.lookup(body, "active")
    active = True if active_raw is None else protocol.boolean(active_raw, "active")
    attributes: dict[str, Any] = {}
    for key, value in body.items():
        canonical = USER_ATTRIBUTES.get(key.lower())
        if canonical and value is not None:
            attributes[canonical] = value
    _check_attributes(attributes)
    return user_name.strip(), external_id, active, attributes  # type: ignore[union-attr]


def _check_attributes(attributes: dict[str, Any]) -> None:
    if len(json.dumps(attributes)) > MAX_ATTRIBUTES_BYTES:
        raise ScimError(413, "the user's attributes are too large")
    emails = attributes.get("emails")
    if emails is not None and not (
        isinstance(emails, list) and all(isinstance(e, dict) for e in emails)
    ):
        raise bad_request("emails must be an array of objects")
    for email in emails or ():
        value = email.get("value")
        if isinstance(value, str) and utf8_length(value) > bounds.EMAIL:  # the by-email key
            raise bad_request(f"emails: a value is at most {bounds.EMAIL} bytes in UTF-8")
    name = attributes.get("name")
    if name is not None and not isinstance(name, dict):
        raise bad_request("name must be an object")


def _primary_email(user_name: str, attributes: dict[str, Any]) -> str:
    emails = [e for e in attributes.get("emails") or [] if isinstance(e.get("value"), str)]
    chosen = next((e for e in emails if e.get("primary") is True), emails[0] if emails else None)
    if chosen:
        return chosen["value"]
    return user_name if "@" in user_name else f"{_username_base(user_name)}@scim.invalid"


def _username_base(user_name: str) -> str:
    local = user_name.split("@", 1)[0] if "@" in user_name else user_name
    base = _USERNAME_INVALID.sub("-", local).strip("-_")[:56]
    return base or "user"


def _instance_user(user_name: str, email: str) -> str:
    """The instance user a new SCIM user provisions: a new user under the first free
    ``base``, ``base-2`` ... (any case: usernames are unique case-insensitively), or an
    unlinked existing one that ``_may_link`` allows.

    SCIM never takes over a user it did not provision unless a site admin allowed linking
    (``link-existing-users``), never a site admin, and never a user whose email is
    unconfirmed (``UserModel.email_unconfirmed``): a ``userName`` whose username an
    existing user holds otherwise is a 409 ``uniqueness`` that changes nothing."""
    base = _username_base(user_name)
    link_allowed = bool(store.load_settings().link_existing_users)
    for n in range(1, 100):
        candidate = base if n == 1 else f"{base}-{n}"
        existing = users_service.find_user_by_name(candidate)
        if existing is None:
            try:
                return users_service.create_user(candidate, email, scim=True).id
            except Unprocessable:  # claimed meanwhile, in some case
                continue
        if store.user_of_instance_user(existing.id):
            continue  # another SCIM user's: the next number
        if _may_link(existing, email, link_allowed):
            if existing.email_unconfirmed:
                raise ScimError(
                    409,
                    f"userName {user_name!r} is the username of an existing user whose email "
                    "address is not confirmed: SCIM does not link to it",
                    "uniqueness",
                )
            return existing.id
        if n == 1 and not existing.scim_provisioned:
            raise ScimError(
                409,
                f"userName {user_name!r} is the username of an existing user that SCIM did not "
                "provision",
                "uniqueness",
            )
    raise ScimError(409, f"no free username for {user_name!r}", "uniqueness")


def _may_link(existing: Any, email: str, link_allowed: bool) -> bool:
    """An unlinked existing user with the same email: one SCIM provisioned before
    (deprovisioned, now back: it keeps its history), or, when a site admin allowed it, one
    made another way. Never a site admin (SCIM holds no grant of an unlinked user's flag)."""
    if existing.is_site_admin or existing.email.lower() != email.lower():
        return False
    return bool(existing.scim_provisioned) or link_allowed


def _protected(user: ScimUserModel) -> bool:
    """A site admin SCIM did not make (linked before links were refused): SCIM changes
    neither its email nor its tokens."""
    instance = users_service.find_user(user.user_id)
    return bool(
        instance
        and instance.is_site_admin
        and not user.granted_site_admin
        and not instance.scim_provisioned
    )


def create_user(body: Any) -> ScimUserModel:
    user_name, external_id, active, attributes = _user_fields(body)
    if store.users_by_name(user_name):
        raise ScimError(409, f"userName {user_name!r} is already provisioned", "uniqueness")
    moment = now()
    user = ScimUserModel(
        str(uuid.uuid4()),
        user_name=user_name,
        user_name_lower=user_name.lower(),
        external_id=external_id,
        user_id=_instance_user(user_name, _primary_email(user_name, attributes)),
        active=active,
        attributes=attributes,
        group_ids=set(),
        created_at=moment,
        updated_at=moment,
    )
    protected = _protected(user)
    if not protected:  # SCIM's own suspension follows active (a linked user may have one)
        _suspend(user, not active)
    user.save(condition=ScimUserModel.id.does_not_exist())
    users_service.set_scim_identity(user.user_id, user_name)
    if not active and not protected:
        tokens_service.revoke_user_tokens(user.user_id)
    return user


def _write_user(
    user: ScimUserModel, user_name: str, external_id: str | None, active: bool, attrs: dict
) -> ScimUserModel:
    if user_name.lower() != user.user_name_lower and any(
        other.id != user.id for other in store.users_by_name(user_name)
    ):
        raise ScimError(409, f"userName {user_name!r} is already provisioned", "uniqueness")
    _check_attributes(attrs)
    was_active = user.active
    email_before = _primary_email(user.user_name, user.attributes or {})
    if was_active and not active and not _protected(user):
        # First: the last active site admin is a 422 before anything is written.
        _suspend(user, True)
    actions: list[Action] = [
        ScimUserModel.user_name.set(user_name),
        ScimUserModel.user_name_lower.set(user_name.lower()),
        ScimUserModel.active.set(active),
        ScimUserModel.attributes.set(attrs),
        ScimUserModel.updated_at.set(now()),
        ScimUserModel.external_id.set(external_id)
        if external_id
        else ScimUserModel.external_id.remove(),
    ]
    user.update(actions=actions)
    users_service.set_scim_identity(user.user_id, user_name)
    email = _primary_email(user_name, attrs)
    changes_account = email != email_before or (was_active and not active)
    protected = changes_account and _protected(user)
    if email != email_before and not protected:  # the instance user's email follows
        users_service.set_user_email(user.user_id, email)
    if was_active and not active and not protected:
        tokens_service.revoke_user_tokens(user.user_id)
    if active and not was_active:
        _suspend(user, False)
    if was_active != active:
        _sync_user_everywhere(user)
    return user


def replace_user(scim_id: str, body: Any) -> ScimUserModel:
    user = get_user(scim_id)
    user_name, external_id, active, attributes = _user_fields(body)
    return _write_user(user, user_name, external_id, active, attributes)


def patch_user(scim_id: str, body: Any) -> ScimUserModel:
    user = get_user(scim_id)
    state: dict[str, Any] = {
        "userName": user.user_name,
        "externalId": user.external_id,
        "active": user.active,
        **(user.attributes or {}),
    }
    for operation in protocol.patch_operations(body):
        if operation.path is None:
            for key, value in operation.value.items():
                _apply_user(state, operation.op, key, value)
        else:
            _apply_user(state, operation.op, operation.path, operation.value)
    user_name = _string(state.get("userName"), "userName", required=True)
    external_id = _string(state.get("externalId"), "externalId")
    active = protocol.boolean(state.get("active", True), "active")
    attributes = {k: v for k, v in state.items() if k not in ("userName", "externalId", "active")}
    return _write_user(user, user_name.strip(), external_id, active, attributes)  # type: ignore[union-attr]


def _canonical_user_attribute(name: str) -> str:
    lowered = name.lower()
    if lowered in ("username", "externalid", "active"):
        return {"username": "userName", "externalid": "externalId", "active": "active"}[lowered]
    if lowered in _READ_ONLY:
        raise bad_request(f"{name} cannot be changed", "mutability")
    canonical = USER_ATTRIBUTES.get(lowered)
    if canonical is None:
        raise bad_request(f"unknown attribute {name!r}", "invalidPath")
    return canonical


def _apply_user(state: dict[str, Any], op: str, path_text: str, value: Any) -> None:
    path = protocol.parse_path(path_text)
    attribute = _canonical_user_attribute(path.attribute)
    if attribute == "userName" and op == "remove":
        raise bad_request("userName is required and cannot be removed", "mutability")
    if path.filter is None and path.sub is None:
        if op == "remove":
            state.pop(attribute, None)
        elif op == "add" and isinstance(state.get(attribute), list) and isinstance(value, list):
            state[attribute] = state[attribute] + value
        elif op == "add" and isinstance(state.get(attribute), dict) and isinstance(value, dict):
            state[attribute] = {**state[attribute], **value}
        else:
            state[attribute] = value
        return
    if path.filter is None:  # name.givenName, urn:...:enterprise:2.0:User:department
        current = state.get(attribute)
        current = dict(current) if isinstance(current, dict) else {}
        if op == "remove":
            current.pop(path.sub, None)
        else:
            current[path.sub] = value
        state[attribute] = current
        return
    # emails[type eq "work"].value and the like: a multi-valued attribute's element(s)
    elements = [dict(e) for e in state.get(attribute) or [] if isinstance(e, dict)]
    chosen = [e for e in elements if protocol.matches(e, path.filter)]
    if op == "remove":
        if path.sub is None:
            elements = [e for e in elements if e not in chosen]
        else:
            for element in chosen:
                element.pop(path.sub, None)
    else:
        if not chosen:  # add the element the filter describes (Entra ID does this)
            element = _element_from_filter(path.filter)
            elements.append(element)
            chosen = [element]
        for element in chosen:
            if path.sub is None:
                if isinstance(value, dict):
                    element.update(value)
            else:
                element[path.sub] = value
    state[attribute] = elements


def _element_from_filter(node: Any) -> dict[str, Any]:
    if isinstance(node, protocol.Comparison) and node.op == "eq":
        return {node.path: node.value}
    if isinstance(node, protocol.Logical) and node.op == "and":
        return {**_element_from_filter(node.left), **_element_from_filter(node.right)}
    raise bad_request("the path's filter does not describe an element to add", "noTarget")


def delete_user(scim_id: str) -> None:
    """Deprovision: the instance user is suspended (SCIM's suspension) and its API tokens
    deleted, it leaves its groups (and so their linked teams) and any site-admin grant SCIM
    gave it; the instance user record stays."""
    user = get_user(scim_id)
    if not _protected(user):
        # First: the last active site admin is a 422 before anything is written.
        _suspend(user, True)
        tokens_service.revoke_user_tokens(user.user_id)
    groups = store.groups_by_ids(set(user.group_ids or ()))
    for group in groups:
        group.update(actions=[ScimGroupModel.member_ids.delete({user.id})])
    user.active = False
    _sync_site_admin(user, store.load_settings())
    user.delete()
    for group in groups:
        _sync_group_teams(store.get_group(group.id) or group)


def list_users(node: protocol.Filter | None) -> list[ScimUserModel]:
    """The users a list with filter ``node`` may show: an index lookup for an ``eq`` on an
    indexed attribute, else every user (the route applies the whole filter)."""
    return _candidates(
        node,
        {
            "username": store.users_by_name,
            "externalid": store.users_by_external_id,
            "id": _one_or_none(store.get_user),
        },
        store.all_users,
    )


def _candidates(
    node: protocol.Filter | None,
    lookups: dict[str, Callable[[str], list[Any]]],
    everything: Callable[[], list[Any]],
) -> list[Any]:
    """What a filtered list reads: the lookup for an ``eq`` on one of ``lookups``' attributes
    (lower-cased SCIM names), else ``everything``."""
    indexed = protocol.simple_equality(node, *lookups)
    if indexed is None:
        return everything()
    attribute, value = indexed
    return lookups[attribute](value)


def _one_or_none(get: Callable[[str], Any]) -> Callable[[str], list[Any]]:
    return lambda value: [found] if (found := get(value)) else []


# ----- groups ----------------------------------------------------------------------------------


def get_group(scim_id: str) -> ScimGroupModel:
    group = store.get_group(scim_id)
    if group is None:
        raise not_found(f"Group {scim_id} not found")
    return group


def _member_ids(value: Any) -> set[str]:
    """The user ids of a ``members`` value: ``[{"value": id}, ...]`` (a single object too)."""
    items = value if isinstance(value, list) else [value] if isinstance(value, dict) else None
    if items is None:
        raise bad_request('members must be an array of {"value": "<user id>"} objects')
    if len(items) > MAX_MEMBERS_PER_REQUEST:
        raise _too_many_members(len(items))
    ids = set()
    for item in items:
        member = protocol.lookup(item, "value") if isinstance(item, dict) else None
        if not isinstance(member, str) or not member:
            raise bad_request('each member needs a "value": the SCIM id of a User')
        if utf8_length(member) > MAX_ID:
            raise bad_request(f"a member's value is at most {MAX_ID} bytes", "invalidValue")
        ids.add(member)
    return ids


def _existing_users(ids: set[str]) -> set[str]:
    found = {user.id for user in store.users_by_ids(ids)}
    missing = ids - found
    if missing:
        raise bad_request(f"no such User: {', '.join(sorted(missing))}", "invalidValue")
    return found


def _group_fields(body: Any) -> tuple[str, str | None, set[str] | None]:
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object", "invalidSyntax")
    display = _string(protocol.lookup(body, "displayname"), "displayName", required=True)
    external_id = _string(protocol.lookup(body, "externalid"), "externalId")
    members_raw = protocol.lookup(body, "members")
    members = None if members_raw is None else _member_ids(members_raw)
    return display.strip(), external_id, members  # type: ignore[union-attr]


def create_group(body: Any) -> ScimGroupModel:
    display, external_id, members = _group_fields(body)
    if store.groups_by_name(display):
        raise ScimError(409, f"displayName {display!r} is already provisioned", "uniqueness")
    members = _existing_users(members or set())
    moment = now()
    group = ScimGroupModel(
        str(uuid.uuid4()),
        display_name=display,
        display_name_lower=display.lower(),
        external_id=external_id,
        member_ids=members,
        created_at=moment,
        updated_at=moment,
    )
    group.save(condition=ScimGroupModel.id.does_not_exist())
    _members_changed(group, added=members, removed=set())
    return group


def _write_group(
    group: ScimGroupModel, display: str, external_id: str | None, members: set[str]
) -> ScimGroupModel:
    if display.lower() != group.display_name_lower and any(
        other.id != group.id for other in store.groups_by_name(display)
    ):
        raise ScimError(409, f"displayName {display!r} is already provisioned", "uniqueness")
    before = set(group.member_ids or ())
    added = _existing_users(members - before)
    removed = before - members
    actions: list[Action] = [
        ScimGroupModel.display_name.set(display),
        ScimGroupModel.display_name_lower.set(display.lower()),
        ScimGroupModel.updated_at.set(now()),
        ScimGroupModel.external_id.set(external_id)
        if external_id
        else ScimGroupModel.external_id.remove(),
    ]
    if added:
        actions.append(ScimGroupModel.member_ids.add(added))
    if removed and store.load_settings().site_admin_group_id == group.id:
        _take_back_grants(store.users_by_ids(removed))  # first: the last admin's is a 422
    renamed = display != group.display_name
    group.update(actions=actions)
    if removed:  # DynamoDB takes one action per attribute and update
        group.update(actions=[ScimGroupModel.member_ids.delete(removed)])
    if renamed:  # linked teams show their group's name
        for mapping in store.mappings_of_group(group.id):
            teams_service.set_team_scim_link(mapping.team_id, display, mapping.paused)
    _members_changed(group, added=added, removed=removed)
    return group


def replace_group(scim_id: str, body: Any) -> ScimGroupModel:
    group = get_group(scim_id)
    display, external_id, members = _group_fields(body)
    return _write_group(group, display, external_id, members or set())


def _too_many_members(count: int) -> ScimError:
    return ScimError(413, f"at most {MAX_MEMBERS_PER_REQUEST} members per request, not {count}")


def _members_named(operations: list[protocol.Operation]) -> int:
    """How many members a PatchOp names, all operations together (a Group's only
    multi-valued attribute is ``members``)."""
    values = [o.value for o in operations]
    values += [v for value in values if isinstance(value, dict) for v in value.values()]
    return sum(len(v) for v in values if isinstance(v, list))


def patch_group(scim_id: str, body: Any) -> ScimGroupModel:
    group = get_group(scim_id)
    display = group.display_name
    external_id: str | None = group.external_id
    members = set(group.member_ids or ())
    operations = protocol.patch_operations(body)
    if (named := _members_named(operations)) > MAX_MEMBERS_PER_REQUEST:
        raise _too_many_members(named)
    for operation in operations:
        if operation.path is None:
            for key, value in operation.value.items():
                display, external_id, members = _apply_group(
                    operation.op, key, value, display, external_id, members
                )
        else:
            display, external_id, members = _apply_group(
                operation.op, operation.path, operation.value, display, external_id, members
            )
    display = _string(display, "displayName", required=True)  # type: ignore[assignment]
    return _write_group(group, display.strip(), external_id, members)


def _apply_group(
    op: str, path_text: str, value: Any, display: str, external_id: str | None, members: set[str]
) -> tuple[str, str | None, set[str]]:
    path = protocol.parse_path(path_text)
    attribute = path.attribute.lower()
    if attribute == "displayname":
        if op == "remove":
            raise bad_request("displayName is required and cannot be removed", "mutability")
        return _string(value, "displayName", required=True), external_id, members  # type: ignore[return-value]
    if attribute == "externalid":
        return display, None if op == "remove" else _string(value, "externalId"), members
    if attribute in ("id", "meta", "schemas"):
        if op == "replace" and path.filter is None:
            return display, external_id, members  # Entra ID repeats the id: harmless
        raise bad_request(f"{path_text} cannot be changed", "mutability")
    if attribute != "members":
        raise bad_request(f"unknown attribute {path_text!r}", "invalidPath")
    if path.filter is not None:  # members[value eq "id"]
        chosen = {m for m in members if protocol.matches({"value": m}, path.filter)}
        if op != "remove":
            raise bad_request("only remove takes a members[...] path", "invalidPath")
        return display, external_id, members - chosen
    if op == "remove":
        return display, external_id, members - _member_ids(value) if value is not None else set()
    given = _member_ids(value)
    return display, external_id, (members | given) if op == "add" else given


def delete_group(scim_id: str) -> None:
    """Delete the group: its teams are unlinked (keeping the members they have), and when it
    was the site-admin group, the admins it granted lose the flag."""
    group = get_group(scim_id)
    item = store.load_settings()
    was_admin_group = item.site_admin_group_id == group.id
    if was_admin_group:  # first: the last active site admin's grant is a 422
        _take_back_grants(store.users_by_ids(set(group.member_ids or ())))
    for mapping in store.mappings_of_group(group.id):
        mapping.delete()
        teams_service.set_team_scim_link(mapping.team_id, None)
    if was_admin_group:
        item.site_admin_group_id = None
        store.save_versioned(item)
    members = store.users_by_ids(set(group.member_ids or ()))
    for user in members:
        user.update(actions=[ScimUserModel.group_ids.delete({group.id})])
    group.delete()
    if was_admin_group:
        for user in members:
            _sync_site_admin(user, item)


def list_groups(node: protocol.Filter | None) -> list[ScimGroupModel]:
    """The groups a list with filter ``node`` may show (see ``list_users``)."""
    return _candidates(
        node,
        {
            "displayname": store.groups_by_name,
            "externalid": store.groups_by_external_id,
            "id": _one_or_none(store.get_group),
        },
        store.all_groups,
    )


def search_groups(q: str | None) -> list[ScimGroupModel]:
    """The admin API's list: ``q`` matches part of the name, case-insensitively."""
    groups = store.all_groups()
    if q:
        needle = q.lower()
        groups = [g for g in groups if needle in g.display_name_lower]
    return groups


# ----- keeping teams and site admins in step ------------------------------------------------


def _members_changed(group: ScimGroupModel, *, added: set[str], removed: set[str]) -> None:
    """Record the membership on the users' side, then bring linked teams and the site-admin
    grant in line."""
    for user_id in added:
        store.update_user_if_present(user_id, ScimUserModel.group_ids.add({group.id}))
    for user_id in removed:
        store.update_user_if_present(user_id, ScimUserModel.group_ids.delete({group.id}))
    fresh = store.get_group(group.id) or group
    _sync_group_teams(fresh)
    item = store.load_settings()
    if item.site_admin_group_id == group.id:
        for user in store.users_by_ids(added | removed):
            _sync_site_admin(user, item)


def _sync_group_teams(group: ScimGroupModel) -> None:
    for mapping in store.mappings_of_group(group.id):
        if not mapping.paused:
            _sync_team(mapping, group)


def _sync_team(mapping: ScimMappingModel, group: ScimGroupModel) -> None:
    team = teams_service.find_team(mapping.team_id)
    if team is None:  # the team was deleted: the link goes with it
        mapping.delete()
        return
    members = store.users_by_ids(set(group.member_ids or ()))
    teams_service.set_team_members(team, {user.user_id for user in members if user.active})


def _sync_user_everywhere(user: ScimUserModel) -> None:
    fresh = store.get_user(user.id) or user
    for group in store.groups_by_ids(set(fresh.group_ids or ())):
        _sync_group_teams(group)
    _sync_site_admin(fresh, store.load_settings())


def _sync_site_admin(user: ScimUserModel, item: ScimSettingsModel) -> None:
    should = bool(
        user.active
        and item.site_admin_group_id
        and item.site_admin_group_id in (user.group_ids or set())
    )
    if should and not user.granted_site_admin:
        instance = users_service.get_user(user.user_id)
        if not instance.is_site_admin:
            users_service.set_site_admin(user.user_id, True)
            _mark_granted(user, True)
    elif not should and user.granted_site_admin:
        _take_back_grants([user])


def _suspend(user: ScimUserModel, flag: bool) -> None:
    """Suspend (or restore) the instance user as SCIM (``users_service.set_suspended``: the last
    active site admin is a 422; SCIM lifts only its own suspension). An instance user a
    site admin deleted has nothing to suspend."""
    with contextlib.suppress(NotFound):
        users_service.set_suspended(user.user_id, flag, scim=True)


def _take_back_grants(users: Iterable[ScimUserModel]) -> None:
    """Take back the site-admin flag SCIM gave these users (``users_service.set_site_admin``:
    the last active site admin's is a 422). Called first in a request that ends grants, so
    a refusal comes before SCIM writes anything else. A user deleted meanwhile has no flag."""
    for user in users:
        if not user.granted_site_admin:
            continue
        with contextlib.suppress(NotFound):
            users_service.set_site_admin(user.user_id, False)
        _mark_granted(user, False)


def _mark_granted(user: ScimUserModel, flag: bool) -> None:
    store.update_user_if_present(user.id, ScimUserModel.granted_site_admin.set(flag))
    user.granted_site_admin = flag


# ----- team mappings ---------------------------------------------------------------------------

# TFE's texts, which go-tfe's errors compare whole ("<title>\n\n<detail>").
ALREADY_LINKED = "Team is already linked to a SCIM group"
NOT_LINKED = "Team is not linked to a SCIM group"


def _refused(detail: str) -> Unprocessable:
    return Unprocessable(
        detail, pointer=attribute_pointer("scim-group-id"), title="unprocessable entity"
    )


def _team(team_id: str):  # noqa: ANN202
    team = teams_service.find_team(team_id) if store.MAX_KEY >= len(team_id) > 0 else None
    if team is None:
        raise NotFound(f"team {team_id} not found")
    return team


def create_mapping(team_id: str, group_id: str) -> ScimMappingModel:
    team = _team(team_id)
    if team.is_owners:
        raise _refused("Owners team SCIM linking is not yet supported")
    group = store.get_group(group_id)
    if group is None:
        raise NotFound(f"SCIM group {group_id} not found")
    if store.load_settings().site_admin_group_id == group_id:
        raise _refused("The site admin group cannot be linked to a team")
    mapping = ScimMappingModel(team.id, group_id=group.id, paused=False, created_at=now())
    if not store.insert_mapping(mapping):
        raise Conflict(ALREADY_LINKED)
    teams_service.set_team_scim_link(team.id, group.display_name)
    _sync_team(mapping, group)
    return mapping


def mapping_of(team_id: str) -> ScimMappingModel:
    _team(team_id)
    mapping = store.get_mapping(team_id)
    if mapping is None:
        raise Conflict(NOT_LINKED)
    return mapping


def update_mapping(team_id: str, paused: bool) -> ScimMappingModel:
    mapping = mapping_of(team_id)
    resumed = mapping.paused and not paused
    mapping.update(actions=[ScimMappingModel.paused.set(paused)])
    group = store.get_group(mapping.group_id)
    teams_service.set_team_scim_link(team_id, group.display_name if group else None, paused)
    if resumed and group is not None:  # resuming reconciles what changed while paused
        _sync_team(mapping, group)
    return mapping


def delete_mapping(team_id: str) -> None:
    """Unlink: the team keeps its members, and stops following the group."""
    mapping_of(team_id).delete()
    teams_service.set_team_scim_link(team_id, None)


def team_link(team_id: str) -> tuple[ScimMappingModel | None, ScimGroupModel | None]:
    mapping = store.get_mapping(team_id)
    group = store.get_group(mapping.group_id) if mapping else None
    return mapping, group
