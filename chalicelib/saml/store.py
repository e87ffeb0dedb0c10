"""The SAML room's one table, ``saml-state``: short-lived protocol state and what SAML granted.

Keys (one item each):

* ``request#<AuthnRequest ID>``: an outstanding SP-initiated request, with the SHA-256 of the
  browser's ``tfe_registry_saml`` cookie (the Response must come back to the browser that
  asked) and where to return. Taken (deleted conditionally) by the Response answering it, so
  each is used once; expires with ``expires`` (DynamoDB TTL; reads check the time too).
* ``assertion#<Assertion ID>``: an assertion already accepted, kept until its
  ``NotOnOrAfter`` (plus the clock skew) so a replay is refused while it could still pass.
* ``grant#<user id>``: what SAML gave a user (the teams it put them on, whether it made them
  a site admin), so a later sign-in takes back only what SAML gave. No ``expires``.
* ``session#<web session hash>``: a UI session SAML opened, with the assertion's NameID
  (and its Format and the IdP's SessionIndex) for the LogoutRequest of single logout;
  taken when the session is signed out, expires with the session.
* ``debug#<web session hash>``: with the ``debug`` setting, what a site admin's sign-in
  received (the Response XML and the values taken from it, as JSON in ``body``), shown to
  that session's user once they are signed in; expires after ``DEBUG_SECONDS``.
"""

from __future__ import annotations

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


DEBUG_SECONDS = 10 * 60


def remember_request(request_id: str, browser_hash: str, return_to: str, expires: datetime) -> None:
    SamlStateModel(
        f"request#{request_id}", browser_hash=browser_hash, return_to=return_to, expires=expires
    ).save(condition=SamlStateModel.key.does_not_exist())


def take_request(request_id: str, browser_hash: str) -> SamlStateModel | None:
    """The outstanding request ``request_id`` of this browser, deleted so it answers once;
    None when unknown, expired, already answered or another browser's."""
    try:
        item = SamlStateModel.get(f"request#{request_id}")
    except SamlStateModel.DoesNotExist:
        return None
    if item.browser_hash != browser_hash or item.expires is None or item.expires <= now():
        return None
    try:
        item.delete(condition=SamlStateModel.browser_hash == browser_hash)
    except DeleteError as exc:
        if db.conditional_failure(exc):
            return None
        raise
    return item


def first_use(assertion_id: str, until: datetime) -> bool:
    """Record ``assertion_id`` as used until ``until``: False when it was used before (and
    that use has not expired)."""
    item = SamlStateModel(f"assertion#{assertion_id}", expires=until)
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


def remember_session(
    session_hash: str,
    name_id: str,
    name_id_format: str | None,
    session_index: str | None,
    expires: datetime,
) -> None:
    SamlStateModel(
        f"session#{session_hash}",
        name_id=name_id,
        name_id_format=name_id_format,
        session_index=session_index,
        expires=expires,
    ).save()


def take_session(session_hash: str) -> SamlStateModel | None:
    """The SAML record of the UI session ``session_hash`` (deleted), or None when SAML did
    not open it or it has expired."""
    item = _live(f"session#{session_hash}")
    if item is not None:
        item.delete()
    return item


def remember_debug(session_hash: str, user_id: str, body: str, expires: datetime) -> None:
    SamlStateModel(f"debug#{session_hash}", user_id=user_id, body=body, expires=expires).save()


def debug_of(session_hash: str, user_id: str) -> str | None:
    """The debug record of the session ``session_hash`` when it is ``user_id``'s and live."""
    item = _live(f"debug#{session_hash}")
    return item.body if item is not None and item.user_id == user_id else None
