"""The account API and what lies under it (go-tfe's user_integration_test.go and
user_token_integration_test.go, ported): ``PATCH /account/update`` (a username through its
claim, an email confirmed by a mailed one-time link), ``PATCH /account/password``, what a
user renders (``avatar-url``, ``is-scim-managed``, ``two-factor``, ``unconfirmed-email``),
user tokens' expiry; finding users by email through the ``by-email`` index; an invitation
used once however close two accepts come."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Api, make_org
from tests.test_memberships import MEMBERSHIPS, invite_body


def no_scans(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail on any Scan of the users table."""
    from chalicelib.accounts.store import UserModel

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the users table was scanned")

    monkeypatch.setattr(UserModel, "scan", refuse)


# ----- users by email ----------------------------------------------------------------------


def test_users_are_found_by_email_through_the_index_in_any_case(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chalicelib.accounts import service, signin

    jane = service.create_user("jane", "Jane@Example.com")
    service.create_user("twin-a", "twin@example.com")
    service.create_user("twin-b", "TWIN@example.com")
    no_scans(monkeypatch)
    assert service.find_user_by_email("jane@example.COM").id == jane.id
    assert service.find_user_by_email("nobody@example.com") is None
    assert service.find_user_by_email("twin@example.com") is None  # two users: neither
    assert service.find_user_by_email("x" * 300 + "@example.com") is None
    # Sign-in by address and an invitation to a known address find the user the same way.
    assert signin.find_user("JANE@example.com").id == jane.id
    make_org(api)
    reply = api.post(MEMBERSHIPS, invite_body("jane@EXAMPLE.com"))
    assert reply.status == 201, reply.json
    assert reply.data["relationships"]["user"]["data"]["id"] == jane.id
    # The identity provider changing the address moves the user in the index.
    service.set_user_email(jane.id, "jane@new.example")
    assert service.find_user_by_email("jane@example.com") is None
    assert service.find_user_by_email("JANE@new.example").id == jane.id


def test_the_backfill_keys_users_made_before_the_email_index_once(api: Api) -> None:
    from chalicelib.accounts import service, store
    from chalicelib.accounts.store import UserModel
    from chalicelib.core.data.ids import now

    UserModel("user-old", username="old", email="Old@Example.com", created_at=now()).save()
    assert service.find_user_by_email("old@example.com") is None
    first = store.backfill_email_keys()
    assert first["keyed"] == 1
    assert service.find_user_by_email("old@example.com").id == "user-old"
    assert store.backfill_email_keys()["keyed"] == 0


# ----- accepting an invitation, once ---------------------------------------------------------


def _invitation(api: Api, email: str = "jane@example.com") -> tuple[Any, str]:
    from chalicelib.accounts import memberships

    make_org(api)
    reply = api.post(MEMBERSHIPS, invite_body(email))
    assert reply.status == 201, reply.json
    token = reply.json["data"]["meta"]["invitation-url"].rsplit("/", 1)[1]
    return memberships.open_invitation(token), token


def _users() -> list[str]:
    from chalicelib.accounts.store import UserModel

    return sorted(u.username for u in UserModel.scan(filter_condition=UserModel.username.exists()))


def _claims() -> list[str]:
    from chalicelib.accounts.store import CLAIM_PREFIX, UsernameClaimModel

    return sorted(c.id for c in UsernameClaimModel.scan() if c.id.startswith(CLAIM_PREFIX))


def test_a_second_accept_of_one_link_is_refused_and_creates_nothing(api: Api) -> None:
    """Two requests read the live invitation before either accepts it (two tabs, a double
    click): the first creates Jane; the second is told the link was used, and creates no
    user, no username claim and no membership."""
    from chalicelib.accounts import memberships

    first, token = _invitation(api)
    second = memberships.open_invitation(token)  # read before the first accept
    assert first is not None and second is not None
    password = "a long unusual passphrase"
    jane = memberships.accept(first, token, "jane", password, password)
    assert jane is not None and jane.username == "jane"
    users, claims = _users(), _claims()
    assert memberships.accept(second, token, "jane-again", password, password) is None
    assert _users() == users and _claims() == claims
    assert memberships.open_invitation(token) is None


def test_an_invitation_withdrawn_while_its_page_is_open_creates_no_user(api: Api) -> None:
    from chalicelib.accounts import memberships

    invitation, token = _invitation(api)
    assert invitation is not None
    users, claims = _users(), _claims()
    reply = api.delete(f"/api/v2/organization-memberships/{invitation.item.id}")
    assert reply.status == 204
    password = "a long unusual passphrase"
    assert memberships.accept(invitation, token, "jane", password, password) is None
    assert _users() == users and _claims() == claims


def test_a_taken_username_on_accepting_changes_nothing_and_the_link_still_works(
    api: Api,
) -> None:
    from chalicelib.accounts import memberships, service
    from chalicelib.core.api.errors import Unprocessable

    invitation, token = _invitation(api)
    service.create_user("Jane", "other@example.com")
    password = "a long unusual passphrase"
    with pytest.raises(Unprocessable):
        memberships.accept(invitation, token, "JANE", password, password)
    again = memberships.open_invitation(token)
    assert again is not None
    assert memberships.accept(again, token, "jane-doe", password, password) is not None
