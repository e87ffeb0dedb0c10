"""Who a checked assertion signs in: the user, their teams and their site-admin flag.

``sign_in(config, posted, browser_secret)`` runs the whole ACS rule after ``response.check``:

* InResponseTo, when the Response has one, must name an outstanding request of this browser
  (``store.take_request``: once only); without one the sign-in is IdP-initiated (accepted,
  as TFE does). Each assertion is accepted once (``store.first_use``, kept until it expires).
* The username is the ``attr-username`` attribute; the email the NameID when it is an email
  address, else an ``email``/``mail`` attribute. An existing user of that username (any
  case: a SCIM-provisioned or invited one) is the same person; else the user is created.
  Everything goes through the accounts services. A suspended user is refused, and so is a
  user whose email is unconfirmed (made through an invitation link no mail carried: whoever
  held the link chose its password, so it is not known to be this person's), before
  anything changes.
* Site admin: the ``attr-site-admin`` attribute when the assertion has it (true/false),
  else whether ``site-admin-role`` is among the groups. A flag SAML gave is taken back when
  a later assertion no longer grants it (never the site's last active admin); a flag given
  another way is left alone.
* Teams, with ``team-management-enabled``: the person joins every team whose ``sso-team-id``
  (else its name; the owners team only by an ``sso-team-id``, as TFE) is among the
  ``attr-groups`` values, in every organization, and leaves the
  teams SAML put them on that the groups no longer name. Memberships made another way, and
  teams that follow a SCIM group, are left alone.

The ``grant#<user>`` item of ``store`` remembers what SAML gave.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from chalicelib.accounts.organizations import service as organizations_service
from chalicelib.accounts.teams import service as teams_service
from chalicelib.accounts.users import service as users_service
from chalicelib.core.api.errors import ApiError, Unprocessable
from chalicelib.core.audit import events, trail
from chalicelib.core.auth import Principal
from chalicelib.core.data.ids import now
from chalicelib.saml import authn, store
from chalicelib.saml.config import CLOCK_SKEW_SECONDS, SamlConfig
from chalicelib.saml.errors import SamlRefused

if TYPE_CHECKING:
    from chalicelib.accounts.teams.store import TeamModel
    from chalicelib.accounts.users.store import UserModel

log = logging.getLogger("registry.saml")

_EMAIL = re.compile(r"^[^@\s<>]+@[^@\s<>]+\.[^@\s<>]+\Z")
EMAIL_ATTRIBUTES = ("email", "Email", "mail", "emailAddress")
_TRUE = {"true", "1", "yes"}
_REPLAY_FALLBACK_SECONDS = 10 * 60  # an assertion without NotOnOrAfter is still refused a while
_DEBUG_XML_CHARS = 100_000


@dataclass(frozen=True)
class Taken:
    """What a sign-in took from the assertion (the ``debug`` page shows it)."""

    username: str
    email: str
    groups: list[str]
    site_admin: bool
    unknown_groups: list[str]  # groups naming no team (ignored, as TFE does)


@dataclass(frozen=True)
class SignedIn:
    user_id: str
    session_seconds: int
    return_to: str | None  # the outstanding request's page, else the IdP's RelayState
    name_id: str
    name_id_format: str | None
    session_index: str | None
    taken: Taken
    issuer: str | None = None


def sign_in(config: SamlConfig, posted: str, browser_secret: str | None, relay: str) -> SignedIn:
    from chalicelib.saml import response  # lxml + signxml: only signing in pays for them

    if not config.enabled:
        raise SamlRefused(
            "Single sign-on is not enabled on this registry.",
            "Ask your administrator to enable SAML single sign-on, or sign in another way.",
            status=404,
        )
    moment = now()
    assertion = response.check(config, posted, moment)
    return_to: str | None = relay or None
    if assertion.in_response_to:
        hashed = authn.browser_hash(browser_secret)
        request = store.take_request(assertion.in_response_to, hashed) if hashed else None
        if request is None:
            raise SamlRefused(
                "This sign-in answers a request this browser did not make, or one already "
                "answered or expired.",
                "Start again from this registry's sign-in page. If it keeps happening, tell "
                "your administrator (the browser may be blocking this site's cookies).",
                log_detail="unknown InResponseTo",
            )
        return_to = request.return_to
    until = assertion.valid_until or moment + timedelta(seconds=_REPLAY_FALLBACK_SECONDS)
    if not store.first_use(assertion.assertion_id, until + timedelta(seconds=CLOCK_SKEW_SECONDS)):
        raise SamlRefused(
            "This sign-in response was used already.",
            "Sign in again from this registry's sign-in page.",
            log_detail="replayed assertion",
        )
    user_id, taken = _person(config, assertion.name_id, assertion.attributes)
    log.info("saml sign-in of %s", user_id)
    return SignedIn(
        user_id,
        config.session_seconds,
        return_to,
        assertion.name_id,
        assertion.name_id_format,
        assertion.session_index,
        taken,
        assertion.issuer,
    )


def _first(attributes: dict[str, list[str]], name: str) -> str:
    return next((v for v in attributes.get(name, ()) if v), "")


def _email(name_id: str, attributes: dict[str, list[str]]) -> str:
    if _EMAIL.match(name_id):
        return name_id
    for name in EMAIL_ATTRIBUTES:
        value = _first(attributes, name)
        if _EMAIL.match(value):
            return value
    raise SamlRefused(
        "The identity provider sent no email address for you.",
        "Ask your administrator to send the email address as the NameID (format "
        "emailAddress) or as an 'email' attribute.",
        log_detail="no email address in the assertion",
    )


def _on_the_idps_word(user: UserModel, action: str) -> None:
    """Record a change a sign-in made to ``user`` on the identity provider's word (its
    account made at the first sign-in, its site-admin flag): the registry acts (System);
    the sign-in itself is recorded with the session (``web.session``)."""
    event = events.event(
        None,
        organization=None,
        resource_type="user",
        resource_id=user.id,
        action=action,
        meta={"username": user.username, "via": "sso"},
    )
    trail.record(event)


def _person(
    config: SamlConfig, name_id: str, attributes: dict[str, list[str]]
) -> tuple[str, Taken]:
    attr_username = config.text("attr-username") or "Username"
    username = _first(attributes, attr_username)
    if not username:
        raise SamlRefused(
            "The identity provider sent no username for you.",
            f"Ask your administrator to send the username as the attribute {attr_username!r} "
            "(the attr-username setting).",
            log_detail="no username attribute",
        )
    user = users_service.find_user_by_name(username)
    if user is None:
        try:
            user = users_service.create_user(username, _email(name_id, attributes))
        except ApiError as refused:
            raise SamlRefused(
                f"Your username cannot be used here: {refused.detail}",
                "Ask your administrator to send a username of letters, numbers, - and _.",
                status=422,
                log_detail="username refused",
            ) from None
        _on_the_idps_word(user, "created")
    if user.email_unconfirmed:
        raise SamlRefused(
            "An account with your username exists on this registry, but its email address is "
            "not confirmed, so single sign-on cannot sign you in to it.",
            "The account's owner can confirm the address from the account page (a link is "
            "mailed to it); until then, ask a site administrator.",
            log_detail=f"user {user.id} has an unconfirmed email",
        )
    if not user.may_sign_in:
        raise SamlRefused(
            "Your account on this registry is suspended.",
            "Ask a site administrator to restore it.",
            log_detail=f"suspended user {user.id}",
        )
    groups = [g for g in attributes.get(config.text("attr-groups") or "MemberOf", []) if g]
    granted = store.grant(user.id)
    had = bool(granted.site_admin)
    admin = _site_admin(config, user, attributes, groups, had)
    team_ids = set(granted.team_ids or ())
    unknown: list[str] = []
    if config.values.get("team-management-enabled"):
        team_ids, unknown = _follow_groups(user.id, groups, team_ids)
    if admin != bool(granted.site_admin) or team_ids != set(granted.team_ids or ()):
        store.save_grant(granted, team_ids, admin)
    is_admin = admin or (not had and bool(user.is_site_admin))  # else SAML took it back
    return user.id, Taken(user.username, user.email, groups, is_admin, unknown)


def _site_admin(
    config: SamlConfig,
    user: UserModel,
    attributes: dict[str, list[str]],
    groups: list[str],
    had: bool,
) -> bool:
    """Whether SAML holds the site-admin flag of ``user`` after this sign-in."""
    attr = config.text("attr-site-admin")
    if attr and attr in attributes:
        wanted = _first(attributes, attr).lower() in _TRUE
    else:
        wanted = bool(config.text("site-admin-role")) and config.text("site-admin-role") in groups
    user_id, is_admin = user.id, bool(user.is_site_admin)
    if wanted and not is_admin:
        users_service.set_site_admin(user_id, True)
        _on_the_idps_word(user, "admin-granted")
        return True
    if not wanted and is_admin and had:
        try:
            users_service.set_site_admin(user_id, False)  # never the last one: a 422 (kept)
        except Unprocessable:
            log.warning("saml would take the site-admin flag of the last site admin: kept")
            return True
        _on_the_idps_word(user, "admin-revoked")
        return False
    return had and is_admin


def _sso_name(team: TeamModel) -> str | None:
    """The group name that puts people on ``team``: its sso-team-id, else its name; the
    owners team only by an sso-team-id (as TFE: SAML leaves owners alone unless told)."""
    if team.sso_team_id:
        return str(team.sso_team_id)
    return None if team.is_owners else str(team.name)


def _teams_named(groups: list[str]) -> list[TeamModel]:
    """Every team, in every organization, whose ``_sso_name`` is a group. Each
    organization's teams are read as the organization sees them (all of them)."""
    wanted = set(groups)
    found = []
    for organization in organizations_service.all_organizations():
        viewer = Principal("organization", organization.name, "saml", organization.name)
        for team in teams_service.list_teams(viewer, organization.name, None):
            if _sso_name(team) in wanted:
                found.append(team)
    return found


def _follow_groups(
    user_id: str, groups: list[str], granted: set[str]
) -> tuple[set[str], list[str]]:
    """Join the teams the groups name; leave the ones SAML gave that they no longer name.
    Returns the teams SAML now holds the membership of, and the groups that name no team:
    ignored, as TFE ignores them (no team is created), and logged so an administrator
    sees a misspelt group or team."""
    named = _teams_named(groups) if groups else []
    matched = {team.id: team for team in named}
    unknown = sorted(set(groups) - {_sso_name(team) for team in named})
    if unknown:
        log.info(
            "saml groups of %s naming no team (ignored): %s", user_id, ", ".join(unknown)[:500]
        )
    holds = set()
    for team_id, team in matched.items():
        members = set(team.user_ids or ())
        if team.scim_group_name and not team.scim_sync_paused:
            continue  # its members follow SCIM
        if user_id not in members:
            teams_service.set_team_members(team, members | {user_id})
            holds.add(team_id)
        elif team_id in granted:
            holds.add(team_id)
    for team_id in granted - set(matched):
        held = teams_service.find_team(team_id)
        if held is None or user_id not in (held.user_ids or ()):
            continue
        members = set(held.user_ids or ())
        if held.is_owners and members == {user_id}:
            holds.add(team_id)  # the owners team keeps a member
            continue
        teams_service.set_team_members(held, members - {user_id})
    return holds, unknown


def session_opened(
    config: SamlConfig, session_hash: str, signed: SignedIn, posted: str, return_to: str
) -> bool:
    """Remember the UI session SAML opened (for single logout) and, with ``debug`` on and a
    site admin signed in, what the sign-in received (for ``debug_record``). True when the
    debug page is to be shown first."""
    moment = now()
    store.remember_session(
        session_hash,
        signed.name_id,
        signed.name_id_format,
        signed.session_index,
        moment + timedelta(seconds=signed.session_seconds),
        signed.issuer,
    )
    if not (config.values.get("debug") and signed.taken.site_admin):
        return False
    from chalicelib.saml import response

    xml = response.readable(posted)
    if len(xml) > _DEBUG_XML_CHARS:  # a DynamoDB item holds 400 KB
        xml = xml[:_DEBUG_XML_CHARS] + "\n(cut: the Response is longer)"
    body = {
        "xml": xml,
        "next": return_to,
        **asdict(signed.taken),
    }
    until = moment + timedelta(seconds=min(store.DEBUG_SECONDS, signed.session_seconds))
    store.remember_debug(session_hash, signed.user_id, json.dumps(body), until)
    log.info("saml debug: the sign-in of %s kept for its debug page", signed.user_id)
    return True


def debug_record(session_hash: str, user_id: str) -> dict[str, Any] | None:
    """What the sign-in of this session received, for its own user only (see
    ``session_opened``); None for anyone else or once expired."""
    body = store.debug_of(session_hash, user_id)
    return json.loads(body) if body else None


def single_logout(config: SamlConfig, session_hash: str, browser_secret: str) -> str | None:
    """Where signing out of the UI session ``session_hash`` sends the browser: the IdP's
    single logout with a LogoutRequest for the person (recorded for the browser holding
    ``browser_secret``), when SAML opened the session and ``slo-endpoint-url`` is set;
    else None. The record is taken either way."""
    opened = store.take_session(session_hash)
    if opened is None or not opened.name_id:
        return None
    try:
        return authn.single_logout(
            config,
            opened.name_id,
            opened.name_id_format,
            opened.session_index,
            browser_secret,
            opened.issuer,
        )
    except SamlRefused as refusal:  # e.g. signing on but no private key: sign out locally
        log.warning("saml single logout skipped: %s", refusal.log_detail)
        return None
