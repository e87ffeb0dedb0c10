"""SCIM Users (``/scim/v2/Users``): the users an identity provider pushes, each the user of
this instance it provisions.

* A provisioned user is a user of the instance: its username is the SCIM ``userName`` made
  valid (``jane.doe@example.com`` -> ``jane-doe``, numbered when taken), and an existing
  user with that username and the same email is linked instead of duplicated. Deactivating
  (``active: false``) or deleting a SCIM user suspends the instance user, as TFE does (no
  sign-in of any kind: ``UserModel.may_sign_in``), deletes every API token of that user and
  takes it out of linked teams and of the site-admin group's grant (``scim.sync``); the
  instance user record stays (what it published keeps an author). Reactivating it (or
  provisioning it again) lifts that suspension, never one a site admin made.
* Deactivating or deleting the last active site admin is a 422 (``accounts.users.service``'s
  setters keep the rule), made before SCIM writes anything of that request.
"""

from __future__ import annotations

import contextlib
import json
import re
import uuid
from typing import TYPE_CHECKING, Any

from chalicelib.accounts.tokens import service as tokens_service
from chalicelib.accounts.users import service as users_service
from chalicelib.core.api import bounds
from chalicelib.core.api.bounds import utf8_length
from chalicelib.core.api.errors import NotFound, Unprocessable
from chalicelib.core.data.ids import now
from chalicelib.scim import protocol, resources, store, sync
from chalicelib.scim.errors import ScimError, bad_request, not_found
from chalicelib.scim.store import ScimGroupModel, ScimUserModel

if TYPE_CHECKING:
    from pynamodb.expressions.update import Action

MAX_ATTRIBUTES_BYTES = 32_000
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


def get_user(scim_id: str) -> ScimUserModel:
    user = store.get_user(scim_id)
    if user is None:
        raise not_found(f"User {scim_id} not found")
    return user


def _user_fields(body: Any) -> tuple[str, str | None, bool, dict[str, Any]]:
    """``(userName, externalId, active, other attributes)`` of a User document."""
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object", "invalidSyntax")
    user_name = resources.string(protocol.lookup(body, "username"), "userName", required=True)
    external_id = resources.string(protocol.lookup(body, "externalid"), "externalId")
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


def _suspend(user: ScimUserModel, flag: bool) -> None:
    """Suspend (or restore) the instance user as SCIM (``users_service.set_suspended``: the last
    active site admin is a 422; SCIM lifts only its own suspension). An instance user a
    site admin deleted has nothing to suspend."""
    with contextlib.suppress(NotFound):
        users_service.set_suspended(user.user_id, flag, scim=True)


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
        sync.user_everywhere(user)
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
    user_name = resources.string(state.get("userName"), "userName", required=True)
    external_id = resources.string(state.get("externalId"), "externalId")
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
    sync.site_admin_flag(user, store.load_settings())
    user.delete()
    for group in groups:
        sync.linked_teams(store.get_group(group.id) or group)


def list_users(node: protocol.Filter | None) -> list[ScimUserModel]:
    """The users a list with filter ``node`` may show: an index lookup for an ``eq`` on an
    indexed attribute, else every user (the route applies the whole filter)."""
    return resources.candidates(
        node,
        {
            "username": store.users_by_name,
            "externalid": store.users_by_external_id,
            "id": resources.one_or_none(store.get_user),
        },
        store.all_users,
    )
