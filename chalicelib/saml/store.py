"""The SAML room's one table, ``saml-state``: short-lived protocol state and what SAML granted.

Keys (one item each):

* ``request#<AuthnRequest ID>``: an outstanding SP-initiated request, with the SHA-256 of the
  browser's ``tfe_registry_saml`` cookie (the Response must come back to the browser that
  asked) and where to return. Taken (deleted conditionally) by the Response answering it, so
  each is used once; expires with ``expires`` (DynamoDB TTL; reads check the time too).
* ``logout#<LogoutRequest ID>``: a LogoutRequest this site sent at sign-out, kept as a
  ``request#`` is (the browser's cookie hash, once only, ``expires``) with the IdP's
  ``issuer``, until the IdP's LogoutResponse comes back to ``/users/saml/slo``.
* ``assertion#<Assertion ID>``: an assertion already accepted, kept until its
  ``NotOnOrAfter`` (plus the clock skew) so a replay is refused while it could still pass.
* ``idp-logout#<LogoutRequest ID>``: the same for an IdP's LogoutRequest.
* ``grant#<user id>``: what SAML gave a user (the teams it put them on, whether it made them
  a site admin), so a later sign-in takes back only what SAML gave. No ``expires``.
* ``session#<web session hash>``: a UI session SAML opened, with the assertion's NameID
  (and its Format, the IdP's SessionIndex and the assertion's Issuer) for the
  LogoutRequest of single logout; taken when the session is signed out, expires with the
  session.
* ``person#<SHA-256 of a NameID>``: the sessions SAML opened for that NameID
  (``session_hashes``) and the IdP that named it (``issuer``): an IdP's LogoutRequest ends
  them. Expires with the last of them.
* ``debug#<web session hash>``: with the ``debug`` setting, what a site admin's sign-in
  received (the Response XML and the values taken from it, as JSON in ``body``), shown to
  that session's user once they are signed in; expires after ``DEBUG_SECONDS``.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from pynamodb.attributes import (
    BooleanAttribute,
    TTLAttribute,
    UnicodeAttribute,
    UnicodeSetAttribute,
)
from pynamodb.exceptions import DeleteError, PutError

from chalicelib.core.data import db
from chalicelib.core.data.ids import now


@db.register
class SamlStateModel(db.Model):
    Meta = db.table("saml-state")

    key = UnicodeAttribute(hash_key=True)
    browser_hash = UnicodeAttribute(null=True)
    return_to = UnicodeAttribute(null=True)
    team_ids = UnicodeSetAttribute(default=set)
    site_admin = BooleanAttribute(null=True)
    expires = TTLAttribute(null=True)
    name_id = UnicodeAttribute(null=True)
    name_id_format = UnicodeAttribute(null=True)
    session_index = UnicodeAttribute(null=True)
    user_id = UnicodeAttribute(null=True)
    body = UnicodeAttribute(null=True)
    issuer = UnicodeAttribute(null=True)
    session_hashes = UnicodeSetAttribute(default=set)


DEBUG_SECONDS = 10 * 60


def remember_request(
    request_id: str,
    browser_hash: str,
    return_to: str | None,
    expires: datetime,
    kind: str = "request",
    issuer: str | None = None,
) -> None:
    """Record an outstanding request: ``kind`` "request" (an AuthnRequest) or "logout" (a
    LogoutRequest, with the ``issuer`` its answer must come from)."""
    SamlStateModel(
        f"{kind}#{request_id}",
        browser_hash=browser_hash,
        return_to=return_to,
        expires=expires,
        issuer=issuer,
    ).save(condition=SamlStateModel.key.does_not_exist())


def outstanding_request(
    request_id: str, browser_hash: str, kind: str = "request"
) -> SamlStateModel | None:
    """The outstanding request ``request_id`` of this browser (left in place); None when
    unknown, expired, already answered or another browser's."""
    try:
        item = SamlStateModel.get(f"{kind}#{request_id}")
    except SamlStateModel.DoesNotExist:
        return None
    if item.browser_hash != browser_hash or item.expires is None or item.expires <= now():
        return None
    return item


def take_request(
    request_id: str, browser_hash: str, kind: str = "request"
) -> SamlStateModel | None:
    """The outstanding request ``request_id`` of this browser, deleted so it answers once;
    None when unknown, expired, already answered or another browser's."""
    item = outstanding_request(request_id, browser_hash, kind)
    if item is None:
        return None
    try:
        item.delete(condition=SamlStateModel.browser_hash == browser_hash)
    except DeleteError as exc:
        if db.conditional_failure(exc):
            return None
        raise
    return item


def first_use(assertion_id: str, until: datetime, kind: str = "assertion") -> bool:
    """Record ``assertion_id`` (of ``kind``: "assertion", "idp-logout") as used until
    ``until``: False when it was used before (and that use has not expired)."""
    item = SamlStateModel(f"{kind}#{assertion_id}", expires=until)
    moment = datetime.fromtimestamp(int(now().timestamp()), tz=UTC)
    try:
        item.save(condition=SamlStateModel.key.does_not_exist() | (SamlStateModel.expires < moment))
    except PutError as exc:
        if db.conditional_failure(exc):
            return False
        raise
    return True


def grant(user_id: str) -> SamlStateModel:
    try:
        return SamlStateModel.get(f"grant#{user_id}")
    except SamlStateModel.DoesNotExist:
        return SamlStateModel(f"grant#{user_id}")


def save_grant(item: SamlStateModel, team_ids: set[str], site_admin: bool) -> None:
    item.team_ids = team_ids or set()
    item.site_admin = site_admin or None
    item.save()


def _live(key: str) -> SamlStateModel | None:
    try:
        item = SamlStateModel.get(key)
    except SamlStateModel.DoesNotExist:
        return None
    return item if item.expires is not None and item.expires > now() else None


def _person_key(name_id: str) -> str:
    return "person#" + hashlib.sha256(name_id.encode()).hexdigest()


def remember_session(
    session_hash: str,
    name_id: str,
    name_id_format: str | None,
    session_index: str | None,
    expires: datetime,
    issuer: str | None = None,
) -> None:
    SamlStateModel(
        f"session#{session_hash}",
        name_id=name_id,
        name_id_format=name_id_format,
        session_index=session_index,
        expires=expires,
        issuer=issuer,
    ).save()
    person = _live(_person_key(name_id))
    until = max(expires, person.expires) if person and person.expires else expires
    SamlStateModel(_person_key(name_id)).update(
        actions=[
            SamlStateModel.session_hashes.add({session_hash}),
            SamlStateModel.expires.set(until),
            SamlStateModel.issuer.set(issuer or ""),
        ]
    )


def _forget(item: SamlStateModel) -> None:
    """Delete a session's record and take it off its person's list."""
    item.delete()
    if item.name_id:
        SamlStateModel(_person_key(item.name_id)).update(
            actions=[SamlStateModel.session_hashes.delete({item.key.removeprefix("session#")})]
        )


def take_session(session_hash: str) -> SamlStateModel | None:
    """The SAML record of the UI session ``session_hash`` (deleted), or None when SAML did
    not open it or it has expired."""
    item = _live(f"session#{session_hash}")
    if item is not None:
        _forget(item)
    return item


def person_issuer(name_id: str) -> str | None:
    """The Issuer of the assertions that opened the live sessions of ``name_id`` (None:
    SAML opened none that are live)."""
    person = _live(_person_key(name_id))
    return person.issuer or None if person is not None and person.session_hashes else None


def take_sessions_of(name_id: str) -> list[str]:
    """The hashes of the live UI sessions SAML opened for ``name_id`` (all of them, whatever
    SessionIndex the IdP names: ending more is the safe side), their records deleted."""
    person = _live(_person_key(name_id))
    taken = []
    for session_hash in sorted(person.session_hashes or ()) if person is not None else ():
        item = _live(f"session#{session_hash}")
        if item is None or item.name_id != name_id:
            continue
        _forget(item)
        taken.append(session_hash)
    return taken


def remember_debug(session_hash: str, user_id: str, body: str, expires: datetime) -> None:
    SamlStateModel(f"debug#{session_hash}", user_id=user_id, body=body, expires=expires).save()


def debug_of(session_hash: str, user_id: str) -> str | None:
    """The debug record of the session ``session_hash`` when it is ``user_id``'s and live."""
    item = _live(f"debug#{session_hash}")
    return item.body if item is not None and item.user_id == user_id else None
