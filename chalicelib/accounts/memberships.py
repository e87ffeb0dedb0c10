"""Organization memberships and invitations, as TFE's ``organization-memberships``.

A member is a user with a ref to one of the organization's teams, or (joined through an
invitation) the organization's membership ref (``UserModel.is_member``). An invitation is a
``MembershipModel`` item, ``invited`` until the link it mailed is followed, then ``active``.
Who may invite and remove: the owners and teams with ``manage-membership`` (site admins
too); anyone else gets 404. Readers of the organization may list and read memberships; an
email address shows to those who manage membership and to the member.

The invitation link carries a random token (``secrets.token_urlsafe(32)``); only its
SHA-256 is stored, it works once and for ``INVITATION_DAYS``. It names the configured public
address (``core.api.links.link_base_url``), never the request's host; without one no
invitation is made (503, before any write). Delivery is the ``Mailer`` the app factory
gives (``entry.factory``: the site's SMTP, ``chalicelib.admin.mail``, since accounts may not
import admin).

A link never authenticates its holder (``accept``):

* An invitation of an existing user is accepted only by that user, signed in as themselves
  (the normal sign-in, two-factor included); anyone else holding the link is asked to sign
  in, and another user's session is refused.
* A new person chooses a username and password through the link. The link goes to the
  invited address; where no mail could carry it (no SMTP) only a site admin is shown it
  (``Invited.link``), and the invitation records that it was not mailed: the account made
  through it has an unconfirmed email (``UserModel.email_unconfirmed``) until a link mailed to
  the address confirms it (``account``), and single sign-on never links to it.

Each change records one audit event (``chalicelib.core.audit``) in the organization's
partition: an ``organization-membership`` ``invited`` (``outcome`` failed when its mail
failed and it was taken back), ``joined``, ``cancelled`` or ``removed``; members added to or
removed from a team by membership are the team's ``members-added``/``members-removed``. A
new person joining is also the site's ``user`` ``created``, in the same transaction.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Protocol

from chalicelib.accounts import authorization, passwords
from chalicelib.accounts.invitations import store as invitations_store
from chalicelib.accounts.invitations.store import MembershipModel
from chalicelib.accounts.organizations import service as organizations_service
from chalicelib.accounts.render import membership_id
from chalicelib.accounts.teams import service as teams_service
from chalicelib.accounts.teams import store as teams_store
from chalicelib.accounts.teams.store import TeamModel
from chalicelib.accounts.users import service as users_service
from chalicelib.accounts.users import store as users_store
from chalicelib.accounts.users.store import UserModel
from chalicelib.core.api.errors import Forbidden, NotFound, Unauthorized, Unprocessable
from chalicelib.core.api.links import link_base_url
from chalicelib.core.audit import events, trail
from chalicelib.core.auth import Principal, hash_token
from chalicelib.core.data.ids import new_id, now

INVITATION_DAYS = 7
INVITATION_PATH = "/app/invitations/"
# Memberships filtered by email in one request (``filter[email]``), and teams an invitation
# names: a 422 naming the bound, before any read.
MAX_EMAILS = 100
MAX_TEAMS = 100
# ``filter[status]``: TFE documents ``invited`` and ``active``; terrasnek's
# org_memberships_test filters on ``inactive`` for the invitation it just sent, and TFE
# answers with it: every membership not yet active.
STATUSES = ("invited", "active", "inactive")


class Mailer(Protocol):
    """What accounts mails its links through (invitations, password resets, email
    confirmations). The app factory gives the site's SMTP (``chalicelib.admin.mail``, a
    module that is one); each ``send_*`` is False when no mail is set up."""

    def configured(self) -> object | None: ...

    def send_invitation(self, recipient: str, organization: str, link: str) -> bool: ...

    def send_email_confirmation(self, recipient: str, link: str) -> bool: ...

    def send_password_reset(self, recipient: str, link: str) -> bool: ...


_mailer: list[Callable[[], Mailer]] = []


def use_mail(load: Callable[[], Mailer]) -> None:
    """Send mail with the ``Mailer`` that ``load`` gives (called by the app factory for the
    apps that declare they mail). Called with the first mail, so that the mailer (smtplib)
    never loads with a function's cold start."""
    _mailer[:] = [load]


def mail() -> Mailer | None:
    """The mailer ``use_mail`` was given (None: none, as in some tests)."""
    return _mailer[0]() if _mailer else None


def _send(email: str, organization: str, link: str) -> bool:
    """Whether a message went out (False: no mail set up)."""
    sender = mail()
    return bool(sender and sender.send_invitation(email, organization, link))


@dataclass
class Membership:
    id: str
    organization: str
    user_id: str
    email: str
    status: str
    team_ids: list[str] = field(default_factory=list)
    user: UserModel | None = None


def _of_user(organization: str, user: UserModel) -> Membership:
    return Membership(
        membership_id(organization, user.id),
        organization,
        user.id,
        user.email,
        "active",
        user.team_ids(organization),
        user,
    )


def _of_item(item: MembershipModel, user: UserModel | None = None) -> Membership:
    """An invitation's membership; ``user``: the existing user it invites, if any."""
    return Membership(
        item.id,
        item.organization,
        item.user_id,
        item.email,
        item.status,
        sorted(item.team_ids or ()),
        user,
    )


@dataclass(frozen=True)
class Invitee:
    """A person invited by email who has no user yet. TFE makes a user (with no username)
    at invitation; here it is made when they accept, under the id their invitation reserved
    (``user_id``): until then site admins find them by that email and may delete them,
    which withdraws their invitations (go-tfe's TestAdminUsers_List and _Delete)."""

    user_id: str
    email: str


def invitees_with_email(email: str) -> list[Invitee]:
    """The people invited as ``email`` (any case) who have no user: one Query of the
    ``by-email`` index and one BatchGetItem. Nothing for what is not an email address."""
    email = email.strip().lower()
    if len(email) > users_service.MAX_EMAIL or not users_service.EMAIL.match(email):
        return []
    invitations = invitations_store.invitations_of_email(email)
    reserved = {i.user_id for i in invitations if i.status == "invited"}
    if not reserved:
        return []
    users = {u.id for u in users_store.users_by_ids(sorted(reserved))}
    return [Invitee(user_id, email) for user_id in sorted(reserved - users)]


def withdraw_invitee(user_id: str) -> bool:
    """Delete the invitations that reserved ``user_id`` for a person with no user yet (a
    site admin deleting that person). False when the user exists or nothing reserved it."""
    if users_service.find_user(user_id) is not None:
        return False
    items = [i for i in invitations_store.invitations_of_user(user_id) if i.status == "invited"]
    for item in items:
        item.delete()
    return bool(items)


def organization_memberships(organization: str) -> list[Membership]:
    """Every membership of the organization: its teams' members and its invitations (an
    accepted invitation's member once), by email."""
    user_ids: set[str] = set()
    for team in teams_store.teams_of(organization):
        user_ids |= set(team.user_ids or ())
    items = invitations_store.invitations_of_organization(organization)
    user_ids |= {i.user_id for i in items}  # an invited existing user is matched by username
    users = {u.id: u for u in users_store.users_by_ids(sorted(user_ids))}
    found = {u.id: _of_user(organization, u) for u in users.values() if u.is_member(organization)}
    for item in items:
        if item.status == "invited":
            found[item.user_id] = _of_item(item, users.get(item.user_id))
    return sorted(found.values(), key=lambda m: (m.email.lower(), m.id))


def invitations_by_team(organization: str) -> dict[str, list[Membership]]:
    """The organization's invitations not yet accepted, by the ids of the teams they put
    their person on: TFE lists them among those teams' organization memberships (go-tfe's
    TestTeamMembersAddByOrganizationMembers adds an invitation to a team and finds it
    there). One Query of the organization's invitations."""
    found: dict[str, list[Membership]] = {}
    for item in invitations_store.invitations_of_organization(organization):
        if item.status == "invited":
            for team_id in sorted(item.team_ids or ()):
                found.setdefault(team_id, []).append(_of_item(item))
    return found


def readable(principal: Principal, organization: str) -> authorization.OrgAccess:
    return authorization.organization_access(principal, organization)


def managing(principal: Principal, organization: str) -> authorization.OrgAccess:
    """The caller's rights when they may manage the organization's members (the action
    ``manage-membership`` of ``accounts.authorization``), else 404. Only a user does: a team
    or organization token holding the role neither invites nor removes."""
    refusal = f"organization {organization!r} not found or you may not manage its members"
    rights = authorization.require(
        authorization.access(principal, organization), "manage-membership", refusal
    )
    if not principal.is_user or organizations_service.get_organization(organization) is None:
        raise NotFound(refusal)
    return rights


def list_memberships(
    principal: Principal,
    organization: str,
    query: str,
    emails: list[str],
    statuses: list[str],
) -> tuple[list[Membership], authorization.OrgAccess]:
    rights = readable(principal, organization)
    found = organization_memberships(organization)
    if query:
        q = query.lower()
        found = [
            m
            for m in found
            if q in m.email.lower() or (m.user is not None and q in m.user.username.lower())
        ]
    if emails:
        wanted = {e.lower() for e in emails}
        found = [m for m in found if m.email.lower() in wanted]
    if statuses:
        found = [m for m in found if _status_matches(m.status, statuses)]
    return found, rights


def _status_matches(status: str, wanted: list[str]) -> bool:
    return status in wanted or ("inactive" in wanted and status != "active")


def own_memberships(principal: Principal) -> list[Membership]:
    """The caller's memberships in every organization, invitations included."""
    if not principal.is_user:
        return []
    user = users_service.get_user(principal.id)
    found = {org: _of_user(org, user) for org in user.organizations()}
    for item in invitations_store.invitations_of_user(user.id):
        if item.status == "invited":
            found.setdefault(item.organization, _of_item(item))
    return [found[o] for o in sorted(found)]


def find(principal: Principal, membership_id_: str) -> tuple[Membership, authorization.OrgAccess]:
    """A membership the caller may read (its organization's readers, and the invited
    person), or 404."""
    missing = NotFound(f"organization membership {membership_id_} not found")
    item = invitations_store.find_invitation(membership_id_)
    if item is not None:
        rights = authorization.access(principal, item.organization)
        if item.status == "invited":
            if authorization.allows(rights, "read") or principal.id == item.user_id:
                return _of_item(item), rights
            raise missing
        user = users_service.find_user(item.user_id)
        readable = authorization.allows(rights, "read")
        if readable and user is not None and user.is_member(item.organization):
            return _of_user(item.organization, user), rights
        raise missing
    # A member added straight to teams: the id is derived from the organization and user.
    for org in authorization.readable_organization_names(principal):
        for membership in organization_memberships(org):
            if membership.id == membership_id_:
                return membership, authorization.access(principal, org)
    raise missing


@dataclass(frozen=True)
class Invited:
    """What an invitation's answer may tell its inviter: whether the link went by mail, and
    the link itself only when it did not and the inviter is a site admin (an owner holding
    the link could pass for the invited person)."""

    membership: Membership
    mailed: bool
    link: str | None


NOT_MAILED = (
    "This site sends no mail, so the invitation was not mailed; only a site admin can see its "
    "link. Ask a site admin to set up SMTP (then withdraw and invite again), or to invite "
    "this person."
)
SHOWN_TO_SITE_ADMIN = (
    "This site sends no mail, so the invitation was not mailed: give the link to the invited "
    "person yourself (it works once, for a week, and is shown only now). An account made "
    "through it has an unconfirmed email address until a mailed link confirms it."
)


def invite(
    principal: Principal, organization: str, email: str | None, team_ids: list[str]
) -> Invited:
    """Invite ``email`` (onto ``team_ids`` once accepted) and mail the link (see
    ``Invited``)."""
    managing(principal, organization)
    base_url = link_base_url("invitation links")
    email = users_service.validate_email(email).lower()
    teams = _teams_of(organization, team_ids, "/data/relationships/teams/data")
    existing = users_service.find_user_by_email(email)
    if existing is not None and existing.is_member(organization):
        raise Unprocessable(
            f"{email} is already a member of {organization}", pointer="/data/attributes/email"
        )
    if invitations_store.invitations_of_organization(organization, email):
        raise Unprocessable(
            f"{email} has already been invited to {organization}",
            pointer="/data/attributes/email",
        )
    user_id = existing.id if existing is not None else new_id("user")
    token = secrets.token_urlsafe(32)
    moment = now()
    item = MembershipModel(
        membership_id(organization, user_id),
        organization=organization,
        email=email,
        user_id=user_id,
        status="invited",
        team_ids={t.id for t in teams} or None,
        token_hash=hash_token(token),
        expires_at=moment + timedelta(days=INVITATION_DAYS),
        invited_by=principal.id,
        created_at=moment,
    )
    if not invitations_store.insert_membership(item):
        raise Unprocessable(
            f"{email} has already been invited to {organization}",
            pointer="/data/attributes/email",
        )
    link = base_url + INVITATION_PATH + token
    meta: dict[str, Any] = {"email": email, "team-ids": sorted(t.id for t in teams)}
    try:
        delivered = _send(email, organization, link)
    except Exception:
        item.delete()  # the mail did not go out: no invitation either
        trail.record(_event(principal, item, "invited", meta, outcome="failed"))
        raise
    meta["mailed"] = delivered
    event = _event(principal, item, "invited", meta)
    if delivered:
        invitations_store.mark_invitation_mailed(item, event)
        item.mailed = True
    else:
        trail.record(event)
    shown = not delivered and authorization.is_site_admin(principal)
    return Invited(_of_item(item), delivered, link if shown else None)


def _event(
    principal: Principal,
    membership: MembershipModel | Membership,
    action: str,
    meta: dict[str, Any] | None = None,
    **options: Any,
) -> events.Event:
    """The audit event of a change of an organization membership (an invitation sent,
    accepted or cancelled, a member removed), in its organization's partition. An email
    address is named, never an invitation's link or token."""
    return events.event(
        principal,
        organization=membership.organization,
        resource_type="organization-membership",
        resource_id=membership.id,
        action=action,
        meta={"user-id": membership.user_id, **(meta or {})},
        **options,
    )


def _teams_of(organization: str, team_ids: list[str], pointer: str) -> list[TeamModel]:
    if len(team_ids) > MAX_TEAMS:
        raise Unprocessable(f"at most {MAX_TEAMS} teams", pointer=pointer)
    found = {t.id: t for t in teams_store.teams_by_ids(list(dict.fromkeys(team_ids)))}
    for index, team_id in enumerate(team_ids):
        team = found.get(team_id)
        if team is None or team.organization != organization:
            raise Unprocessable(
                f"team {team_id} is not a team of {organization}", pointer=f"{pointer}/{index}/id"
            )
    return [found[t] for t in dict.fromkeys(team_ids)]


LAST_OWNER = "the owners team must keep at least one member"


def last_owner(membership: Membership, teams: list[TeamModel]) -> bool:
    """Whether ``membership`` is the only member left on its organization's owners team
    (among ``teams``): removing it is refused (``remove``), and the members page offers no
    button for it."""
    return membership.status == "active" and any(
        team.is_owners
        and team.id in membership.team_ids
        and set(team.user_ids or ()) <= {membership.user_id}
        for team in teams
    )


def remove(principal: Principal, membership_id_: str) -> None:
    """Remove a member from the organization (every team of it) or withdraw an invitation."""
    membership, _ = find(principal, membership_id_)
    org = membership.organization
    try:
        managing(principal, org)
    except NotFound:
        raise NotFound(f"organization membership {membership_id_} not found") from None
    if membership.status == "active":
        teams = teams_store.teams_by_ids(membership.team_ids)
        if last_owner(membership, teams):
            raise Unprocessable(LAST_OWNER)
        for team in teams:
            teams_store.remove_team_members(team, [membership.user_id])
        users_store.remove_member_ref(membership.user_id, org)
    action = "removed" if membership.status == "active" else "cancelled"
    meta: dict[str, Any] = {"email": membership.email, "team-ids": membership.team_ids}
    invitations_store.delete_membership(membership.id, _event(principal, membership, action, meta))


def change_team_members(
    principal: Principal, team_id: str, membership_ids: list[str], *, add: bool
) -> None:
    """Add or remove members of a team by their membership ids (TFE's
    ``relationships/organization-memberships``); an invited person joins when accepting."""
    team = teams_service.owned_team(principal, team_id)
    teams_service.refuse_if_scim_linked(team)
    known = {m.id: m for m in organization_memberships(team.organization)}
    chosen = []
    for index, mid in enumerate(membership_ids):
        if mid not in known:
            raise NotFound(f"organization membership {mid} not found", pointer=f"/data/{index}/id")
        chosen.append(known[mid])
    active = [m.user_id for m in chosen if m.status == "active"]
    invited = [m for m in chosen if m.status == "invited"]
    if not add and team.is_owners and set(team.user_ids or ()) <= set(active):
        raise Unprocessable(LAST_OWNER)
    if add:
        teams_store.add_team_members(team, active)
    else:
        teams_store.remove_team_members(team, active)
    for m in invited:
        invitations_store.change_invitation_teams(m.id, team.id, add=add)
    if chosen:
        invitations = [m.id for m in invited]
        trail.record(
            teams_service.members_event(
                principal, team, add=add, user_ids=active, membership_ids=invitations
            )
        )


# ----- accepting ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Invitation:
    item: MembershipModel
    user: UserModel | None  # the existing user it invites, None for a new person

    def refusal(self, principal: Principal | None) -> str | None:
        """Why ``principal`` (the browser's session, None without one) may not accept this
        invitation: ``"sign-in"`` (it invites an existing user: they sign in first),
        ``"another-account"`` (a session of someone else); None when they may."""
        if self.user is None:
            return None
        if principal is None or not principal.is_user:
            return "sign-in"
        return None if principal.id == self.user.id else "another-account"


def open_invitation(token: str) -> Invitation | None:
    """The live invitation of a link's token (None: unknown, used, withdrawn or expired)."""
    if not token or len(token) > 200:
        return None
    item = invitations_store.invitation_of_token(hash_token(token))
    if item is None or item.status != "invited" or item.expires_at is None:
        return None
    if item.expires_at <= now():
        return None
    return Invitation(item, users_service.find_user(item.user_id))


def accept(
    invitation: Invitation,
    token: str,
    principal: Principal | None,
    username: str = "",
    password: str = "",
    again: str = "",
) -> UserModel | None:
    """Use the invitation once. An existing user accepts it signed in as themselves
    (``principal``; anyone else is refused before anything changes: 401 without a session,
    403 for another user's); a new person's user is created (``username`` and a checked
    ``password``; its email unconfirmed when no mail carried the link). Then they become a
    member, on the invited teams. None when the link was used (or withdrawn) meanwhile; a
    bad username or password is a 422 that changes nothing.

    The single use comes first: for an existing user the invitation is marked used before
    anything is added; a new person's user is created in the same transaction that marks it
    (``invitations_store.accept_invitation_as_new_user``), so a second accept of the same
    link, however close, creates nothing."""
    refusal = invitation.refusal(principal)
    if refusal == "sign-in":
        raise Unauthorized("sign in as the invited user to accept this invitation")
    if refusal is not None:
        raise Forbidden("this invitation is for another account")
    item = invitation.item
    user = invitation.user
    if user is None:
        passwords.check(password, again)
        user = users_service.new_user(username, item.email, user_id=item.user_id)
        user.password_hash = passwords.hash_password(password)
        if not item.mailed:  # whoever held the link chose the password: not the address's owner
            user.email_unconfirmed = True
        # The new person acts: the link proved nothing else, and they have no session yet.
        person = Principal(kind="user", id=user.id, token_id="")
        created = events.event(
            person,
            organization=None,
            resource_type="user",
            resource_id=user.id,
            action="created",
            meta={"username": user.username, "via": "invitation", "invitation-id": item.id},
            description=user.username,
        )
        joined = _event(person, item, "joined", description=user.username)
        outcome = invitations_store.accept_invitation_as_new_user(
            item, hash_token(token), user, [created, joined]
        )
        if outcome == "taken":
            raise users_service.taken_username(username)
        if outcome == "used":
            return None
    else:
        assert principal is not None  # refusal: an existing user accepts signed in
        if not invitations_store.use_invitation(
            item, hash_token(token), _event(principal, item, "joined")
        ):
            return None
    users_store.add_member_ref(user.id, item.organization)
    for team in teams_store.teams_by_ids(sorted(item.team_ids or ())):
        if team.organization == item.organization:
            teams_store.add_team_members(team, [user.id])
    return users_service.get_user(user.id)
