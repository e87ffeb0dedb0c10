"""The account API and what lies under it (go-tfe's user_integration_test.go and
user_token_integration_test.go, ported): ``PATCH /account/update`` (a username through its
claim, an email confirmed by a mailed one-time link), ``PATCH /account/password``, what a
user renders (``avatar-url``, ``is-scim-managed``, ``two-factor``, ``unconfirmed-email``),
user tokens' expiry; finding users by email through the ``by-email`` index; an invitation
used once however close two accepts come."""

from __future__ import annotations

from typing import Any

import pytest

from tests.accounts.helpers import MEMBERSHIPS, invite_body
from tests.conftest import Api, make_org
from tests.support.web_browser import Browser


def no_scans(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail on any Scan of the users table."""
    from chalicelib.accounts.users.store import UserModel

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the users table was scanned")

    monkeypatch.setattr(UserModel, "scan", refuse)


# ----- users by email ----------------------------------------------------------------------


def test_users_are_found_by_email_through_the_index_in_any_case(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chalicelib.accounts import signin
    from chalicelib.accounts.users import service as users_service

    jane = users_service.create_user("jane", "Jane@Example.com")
    users_service.create_user("twin-a", "twin@example.com")
    users_service.create_user("twin-b", "TWIN@example.com")
    no_scans(monkeypatch)
    assert users_service.find_user_by_email("jane@example.COM").id == jane.id
    assert users_service.find_user_by_email("nobody@example.com") is None
    assert users_service.find_user_by_email("twin@example.com") is None  # two users: neither
    assert users_service.find_user_by_email("x" * 300 + "@example.com") is None
    # Sign-in by address and an invitation to a known address find the user the same way.
    assert signin.find_user("JANE@example.com").id == jane.id
    make_org(api)
    reply = api.post(MEMBERSHIPS, invite_body("jane@EXAMPLE.com"))
    assert reply.status == 201, reply.json
    assert reply.data["relationships"]["user"]["data"]["id"] == jane.id
    # The identity provider changing the address moves the user in the index.
    users_service.set_user_email(jane.id, "jane@new.example")
    assert users_service.find_user_by_email("jane@example.com") is None
    assert users_service.find_user_by_email("JANE@new.example").id == jane.id


def test_the_backfill_keys_users_made_before_the_email_index_once(api: Api) -> None:
    from chalicelib.accounts.users import backfill as users_backfill
    from chalicelib.accounts.users import service as users_service
    from chalicelib.accounts.users.store import UserModel
    from chalicelib.core.data.ids import now

    UserModel("user-old", username="old", email="Old@Example.com", created_at=now()).save()
    assert users_service.find_user_by_email("old@example.com") is None
    first = users_backfill.backfill_email_keys()
    assert first["keyed"] == 1
    assert users_service.find_user_by_email("old@example.com").id == "user-old"
    assert users_backfill.backfill_email_keys()["keyed"] == 0


# ----- accepting an invitation, once ---------------------------------------------------------


def _invitation(api: Api, email: str = "jane@example.com") -> tuple[Any, str]:
    from chalicelib.accounts import memberships

    make_org(api)
    reply = api.post(MEMBERSHIPS, invite_body(email))
    assert reply.status == 201, reply.json
    token = reply.json["data"]["meta"]["invitation-url"].rsplit("/", 1)[1]
    return memberships.open_invitation(token), token


def _users() -> list[str]:
    from chalicelib.accounts.users.store import UserModel

    return sorted(u.username for u in UserModel.scan(filter_condition=UserModel.username.exists()))


def _claims() -> list[str]:
    from chalicelib.accounts.users.store import CLAIM_PREFIX, UsernameClaimModel

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
    jane = memberships.accept(first, token, None, "jane", password, password)
    assert jane is not None and jane.username == "jane"
    users, claims = _users(), _claims()
    assert memberships.accept(second, token, None, "jane-again", password, password) is None
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
    assert memberships.accept(invitation, token, None, "jane", password, password) is None
    assert _users() == users and _claims() == claims


def test_a_taken_username_on_accepting_changes_nothing_and_the_link_still_works(
    api: Api,
) -> None:
    from chalicelib.accounts import memberships
    from chalicelib.accounts.users import service as users_service
    from chalicelib.core.api.errors import Unprocessable

    invitation, token = _invitation(api)
    users_service.create_user("Jane", "other@example.com")
    password = "a long unusual passphrase"
    with pytest.raises(Unprocessable):
        memberships.accept(invitation, token, None, "JANE", password, password)
    again = memberships.open_invitation(token)
    assert again is not None
    assert memberships.accept(again, token, None, "jane-doe", password, password) is not None


# ----- the account: reading it (go-tfe TestUsersReadCurrent) ---------------------------------

ACCOUNT = "/api/v2/account/details"
UPDATE = "/api/v2/account/update"
PASSWORD = "/api/v2/account/password"


def users_doc(**attributes: Any) -> dict[str, Any]:
    return {"data": {"type": "users", "attributes": attributes}}


def test_the_account_carries_what_go_tfe_reads_and_leaks_nothing(api: Api) -> None:
    from chalicelib.accounts.users import service as users_service
    from tests.accounts.helpers import new_user

    user_id, jane = new_user(api, "jane")
    me = jane.get(ACCOUNT).data
    assert me["id"] == user_id and me["attributes"]["username"] == "jane"
    assert me["attributes"]["two-factor"] == {"enabled": False, "verified": False}
    assert me["attributes"]["unconfirmed-email"] is None
    assert "is-scim-managed" not in me["attributes"]  # SCIM is off: absent, not false
    avatar = me["attributes"]["avatar-url"]
    assert avatar.startswith("data:image/svg+xml,")  # drawn here: no third-party request
    import hashlib

    email = users_service.get_user(user_id).email
    for leak in (email, hashlib.md5(email.encode()).hexdigest(), "example"):
        assert leak not in avatar
    # Another user sees the same avatar, without the email address.
    seen = api.get(f"/api/v2/users/{user_id}").data["attributes"]
    assert seen["avatar-url"] == avatar
    other_id, other = new_user(api, "other")
    assert other.get(f"/api/v2/users/{user_id}").data["attributes"]["email"] == ""
    assert other.get(f"/api/v2/users/{user_id}").data["attributes"]["unconfirmed-email"] is None
    # A team token's service user has one too (go-tfe: NotEmpty).
    make_org(api)
    team = api.post("/api/v2/teams/" + _owners(api) + "/authentication-token", None)
    service_user = api.as_(team.data["attributes"]["token"]).get(ACCOUNT).data
    assert service_user["attributes"]["avatar-url"].startswith("data:image/svg+xml,")


def _owners(api: Api) -> str:
    from tests.accounts.helpers import team_id_by_name

    return team_id_by_name(api, "acme", "owners")


def test_scim_provisioned_users_are_scim_managed_while_scim_is_enabled(api: Api) -> None:
    from chalicelib.accounts.render import _scim_enabled
    from chalicelib.accounts.users import service as users_service
    from chalicelib.scim.store import load_settings

    made = users_service.create_user("provisioned", "p@example.com", scim=True)
    path = f"/api/v2/users/{made.id}"
    assert "is-scim-managed" not in api.get(path).data["attributes"]
    settings = load_settings()
    settings.enabled = True
    settings.save()
    _scim_enabled.clear()  # as another instance would, after the token cache's window
    assert api.get(path).data["attributes"]["is-scim-managed"] is True
    assert api.get(ACCOUNT).data["attributes"]["is-scim-managed"] is False  # not provisioned
    settings.enabled = False
    settings.save()
    _scim_enabled.clear()
    assert "is-scim-managed" not in api.get(path).data["attributes"]


# ----- PATCH /account/update (go-tfe TestUsersUpdate) ----------------------------------------


def test_users_update_as_go_tfe_tests_it(api: Api) -> None:
    from tests.accounts.helpers import new_user

    _, jane = new_user(api, "jane")
    before = jane.get(ACCOUNT).data

    # without any options: nothing changes
    assert jane.patch(UPDATE, users_doc()).status == 200
    assert jane.get(ACCOUNT).data == before

    # with a new username
    reply = jane.patch(UPDATE, users_doc(username="NewTestUsername"))
    assert reply.status == 200, reply.json
    assert jane.get(ACCOUNT).data["attributes"]["username"] == "NewTestUsername"

    # with a new email address: it waits for its confirmation, the old one stays
    reply = jane.patch(UPDATE, users_doc(email="newtestemail@hashicorp.com"))
    assert reply.status == 200, reply.json
    read = jane.get(ACCOUNT).data["attributes"]
    assert read["unconfirmed-email"] == "newtestemail@hashicorp.com"
    assert read["email"] == before["attributes"]["email"]

    # with an invalid email address
    bad = jane.patch(UPDATE, users_doc(email="notamailaddress"))
    assert bad.status == 422 and bad.error["source"]["pointer"] == "/data/attributes/email"

    # go-tfe's deferred reset: the old email and username again
    reset = users_doc(email=before["attributes"]["email"], username="jane")
    assert jane.patch(UPDATE, reset).status == 200
    assert jane.get(ACCOUNT).data == before


def test_a_username_change_goes_through_the_claims(api: Api) -> None:
    from chalicelib.accounts.users import service as users_service
    from tests.accounts.helpers import new_user

    jane_id, jane = new_user(api, "jane")
    new_user(api, "bob")
    before = jane.get(ACCOUNT).data
    for name, why in [("BOB", "taken in another case"), ("no spaces", "invalid"), ("", "empty")]:
        reply = jane.patch(UPDATE, users_doc(username=name))
        assert reply.status == 422, (why, reply.json)
        assert reply.error["source"]["pointer"] == "/data/attributes/username", why
    too_long = jane.patch(UPDATE, users_doc(username="j" * 65))
    assert too_long.status == 422
    assert jane.get(ACCOUNT).data == before

    assert jane.patch(UPDATE, users_doc(username="Jane-Doe")).status == 200
    assert users_service.find_user_by_name("JANE-DOE").id == jane_id
    assert users_service.find_user_by_name("jane") is None  # the old name is free again ...
    users_service.create_user("JANE", "someone@example.com")  # ... and another may take it
    with pytest.raises(Exception, match="taken"):
        users_service.create_user("jane-doe", "x@example.com")
    # A change of case only keeps the claim.
    assert jane.patch(UPDATE, users_doc(username="jane-doe")).status == 200
    assert users_service.find_user_by_name("Jane-Doe").username == "jane-doe"


def test_a_team_token_has_no_account_to_update(api: Api) -> None:
    make_org(api)
    team = api.post("/api/v2/teams/" + _owners(api) + "/authentication-token", None)
    as_team = api.as_(team.data["attributes"]["token"])
    assert as_team.patch(UPDATE, users_doc(username="x")).status == 404
    body = users_doc(**{"current-password": "", "password": "p" * 20})
    assert as_team.patch(PASSWORD, body).status == 404


def test_a_new_email_is_confirmed_by_a_one_time_mailed_link(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    from chalicelib.accounts.users import service as users_service
    from chalicelib.accounts.users.store import UserModel
    from tests.accounts.helpers import new_user
    from tests.support.admin_servers import smtp_server, use_smtp

    caplog.set_level(logging.DEBUG)
    jane_id, jane = new_user(api, "jane")
    with smtp_server() as (port, mailbox):
        use_smtp(api, port)
        reply = jane.patch(UPDATE, users_doc(email="Jane@New.example"))
        assert reply.status == 200, reply.json
        message = mailbox.messages[-1]
    assert message["To"] == "Jane@New.example"
    text = message.get_payload(decode=True).decode()
    link = next(word for word in text.split() if "/confirm-email/" in word)
    secret = link.rsplit("/", 1)[1]
    assert len(secret) >= 43
    assert secret.encode() not in reply.body
    ours = [r for r in caplog.records if not r.name.startswith("mail.log")]
    assert not any(secret in r.getMessage() for r in ours)
    stored = UserModel.get(jane_id)
    assert stored.email == "jane@example.com" and secret not in (stored.email_link_hash or "")
    assert users_service.find_user_by_email("jane@new.example") is None  # not yet

    # The link opens a page (a scanner's prefetch of it confirms nothing); its button does.
    path = link[link.index("/app/") :]
    assert path.startswith("/app/account/confirm-email/")
    browser = Browser(api.client)
    wrong = path[: -len(secret)] + "x" * len(secret)
    assert browser.get(wrong).status_code == 410
    for _ in range(2):
        shown = browser.get(path)  # followed from the mail: no session needed
        assert shown.status_code == 200 and "Jane@New.example" in shown.text
        assert 'id="confirm-email"' in shown.text and "jane" in shown.text
    assert UserModel.get(jane_id).email == "jane@example.com"  # still waiting
    old_api_link = api.as_(None).get("/api/v2/account/confirm-email/" + path.split("/", 4)[4])
    assert old_api_link.status == 303 and old_api_link.headers["Location"] == path
    assert UserModel.get(jane_id).email == "jane@example.com"  # a redirect confirms nothing
    refused = browser.post(path, {})  # no CSRF token: nothing changes
    assert refused.status_code == 403 and UserModel.get(jane_id).unconfirmed_email
    assert browser.post(wrong, {"csrf_token": browser.csrf()}).status_code == 410
    confirmed = browser.post(path, {"csrf_token": browser.csrf(path)})
    assert confirmed.status_code == 200 and 'id="email-confirmed"' in confirmed.text
    me = jane.get(ACCOUNT).data["attributes"]
    assert me["email"] == "Jane@New.example" and me["unconfirmed-email"] is None
    assert users_service.find_user_by_email("jane@new.example").id == jane_id
    assert users_service.find_user_by_email("jane@example.com") is None
    again = browser.post(path, {"csrf_token": browser.csrf()})
    assert again.status_code == 410 and browser.get(path).status_code == 410  # once
    ours = [r for r in caplog.records if not r.name.startswith("mail.log")]
    assert not any(secret in r.getMessage() for r in ours)


def test_an_email_link_expires_and_a_newer_one_replaces_it(api: Api) -> None:
    from datetime import timedelta

    from chalicelib.accounts import account
    from chalicelib.accounts.users.store import UserModel
    from chalicelib.core.data.ids import now
    from tests.accounts.helpers import new_user
    from tests.support.admin_servers import smtp_server, use_smtp

    jane_id, jane = new_user(api, "jane")
    with smtp_server() as (port, mailbox):
        use_smtp(api, port)
        assert jane.patch(UPDATE, users_doc(email="first@example.com")).status == 200
        assert jane.patch(UPDATE, users_doc(email="second@example.com")).status == 200
        first, second = (
            next(w for w in m.get_payload(decode=True).decode().split() if "/confirm-" in w)
            for m in mailbox.messages[-2:]
        )
    assert account.confirm_email(jane_id, first.rsplit("/", 1)[1]) is None  # replaced
    user = UserModel.get(jane_id)
    user.update(actions=[UserModel.email_link_expires_at.set(now() - timedelta(seconds=1))])
    assert account.confirm_email(jane_id, second.rsplit("/", 1)[1]) is None  # expired
    assert UserModel.get(jane_id).email == "jane@example.com"


def test_an_email_another_user_has_is_refused_and_changes_nothing(api: Api) -> None:
    from tests.accounts.helpers import new_user

    _, jane = new_user(api, "jane")
    new_user(api, "bob")
    before = jane.get(ACCOUNT).data
    for email in ("BOB@example.com", "x" * 250 + "@example.com", 5, ["a@b.c"]):
        reply = jane.patch(UPDATE, users_doc(email=email))
        assert reply.status == 422, (email, reply.json)
        assert reply.error["source"]["pointer"] == "/data/attributes/email"
    assert jane.get(ACCOUNT).data == before


def test_a_failed_confirmation_mail_changes_nothing(api: Api) -> None:
    from tests.accounts.helpers import new_user
    from tests.support.admin_servers import smtp_server, use_smtp

    _, jane = new_user(api, "jane")
    before = jane.get(ACCOUNT).data
    with smtp_server() as (port, _):
        use_smtp(api, port)
    # the server has gone: delivery fails
    reply = jane.patch(UPDATE, users_doc(email="jane@new.example", username="jane-doe"))
    assert reply.status == 500 and "smtp" in reply.error["title"]  # as for invitations
    assert jane.get(ACCOUNT).data == before


# ----- PATCH /account/password ---------------------------------------------------------------


def test_a_password_change_checks_the_current_one_and_the_policy(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    from chalicelib.accounts import passwords
    from chalicelib.accounts.users.store import UserModel
    from tests.accounts.helpers import new_user

    caplog.set_level(logging.DEBUG)
    jane_id, jane = new_user(api, "jane")
    first = "correct horse battery staple"
    # No password yet (a token-only user): none is asked for.
    body = {"current-password": "", "password": first, "password-confirmation": first}
    assert jane.patch(PASSWORD, users_doc(**body)).status == 200
    assert passwords.verify(UserModel.get(jane_id).password_hash, first)

    second = "another long passphrase"
    cases = [
        ({"current-password": "wrong guess!", "password": second}, "current-password"),
        ({"current-password": "", "password": second}, "current-password"),
        ({"current-password": first, "password": "short"}, "password"),
        ({"current-password": first, "password": "password123"}, "password"),
        ({"current-password": first, "password": second, "password-confirmation": "x"}, "password"),
        ({"current-password": first, "password": 12345678901}, "password"),
    ]
    for attributes, field in cases:
        attributes.setdefault("password-confirmation", attributes["password"])
        reply = jane.patch(PASSWORD, users_doc(**attributes))
        assert reply.status == 422, (attributes, reply.json)
        assert reply.error["source"]["pointer"] == f"/data/attributes/{field}", attributes
        for value in attributes.values():
            assert str(value) not in reply.body.decode() or len(str(value)) < 3
    assert passwords.verify(UserModel.get(jane_id).password_hash, first)  # unchanged

    # TFE documents the snake names: they work too.
    snake = {"current_password": first, "password": second, "password_confirmation": second}
    reply = jane.patch(PASSWORD, users_doc(**snake))
    assert reply.status == 200, reply.json
    assert passwords.verify(UserModel.get(jane_id).password_hash, second)
    for secret in (first, second):
        assert secret not in reply.body.decode() and secret not in caplog.text


def _change(current: str, new: str) -> dict[str, Any]:
    return users_doc(**{"current-password": current, "password": new, "password-confirmation": new})


def test_wrong_current_passwords_are_throttled_per_user_as_sign_in_is(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stolen token cannot guess its way to the password: wrong current passwords count
    with the user's failed sign-ins (``signin.ACCOUNT_LIMIT`` a window); past the bound the
    right one is refused unchecked with a 429 that changes nothing, until the window ends."""
    from types import SimpleNamespace

    from chalicelib.accounts import passwords, signin
    from chalicelib.accounts.users.store import UserModel
    from tests.accounts.helpers import WINDOW_START, new_user

    clock = SimpleNamespace(value=WINDOW_START + 60.0)
    monkeypatch.setattr(signin, "time", SimpleNamespace(time=lambda: clock.value))
    jane_id, jane = new_user(api, "jane")
    _, bob = new_user(api, "bob")
    first, second = "correct horse battery staple", "another long passphrase"
    for client in (jane, bob):
        assert client.patch(PASSWORD, _change("", first)).status == 200
    for guess in range(signin.ACCOUNT_LIMIT):
        reply = jane.patch(PASSWORD, _change(f"guess number {guess}", second))
        assert reply.status == 422, reply.json
    before = UserModel.get(jane_id).password_hash
    throttled = jane.patch(PASSWORD, _change(first, second))  # the right one, too late
    assert throttled.status == 429, throttled.json
    assert throttled.headers["Content-Type"] == "application/vnd.api+json"
    assert throttled.error["status"] == "429" and "try again" in throttled.error["detail"]
    assert 0 < int(throttled.headers["Retry-After"]) <= signin.WINDOW_SECONDS
    assert UserModel.get(jane_id).password_hash == before  # nothing changed
    assert bob.patch(PASSWORD, _change(first, second)).status == 200  # per user
    clock.value += signin.WINDOW_SECONDS  # the next window
    assert jane.patch(PASSWORD, _change(first, second)).status == 200
    assert passwords.verify(UserModel.get(jane_id).password_hash, second)


def test_successful_password_changes_are_not_counted_as_guesses(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    from chalicelib.accounts import signin
    from tests.accounts.helpers import WINDOW_START, counters, new_user

    monkeypatch.setattr(signin, "time", SimpleNamespace(time=lambda: WINDOW_START + 60.0))
    _, jane = new_user(api, "jane")
    words = [f"long enough passphrase {n}" for n in range(signin.ACCOUNT_LIMIT + 3)]
    assert jane.patch(PASSWORD, _change("", words[0])).status == 200
    for current, new in zip(words, words[1:], strict=False):
        assert jane.patch(PASSWORD, _change(current, new)).status == 200
    assert all(hits == 0 for hits in counters().values())


# ----- user tokens' expiry (go-tfe TestUserTokens_Create) ------------------------------------


def test_user_tokens_keep_the_expiry_asked_and_default_to_two_years(api: Api) -> None:
    """go-tfe v1.109.0 TestUserTokens_Create (user_token_integration_test.go), subtests
    "create token without an expiration date" and "create token with an expiration date":
    a token created without ``expired-at`` gets one ``defaultTokenExpirationYears`` (2) years
    out, within a minute of the test's clock; one created with a date keeps it to the second.
    (The stored copy of the test before go-tfe PR #1300 asserted an empty ``ExpiredAt``; TFE
    has defaulted tokens to 24 months since.) Bounded by the clock read before and after the
    request, so it does not depend on how fast the request runs."""
    from datetime import UTC, datetime, timedelta

    from chalicelib.accounts.tokens.service import years_later
    from tests.accounts.helpers import admin_id
    from tests.conftest import doc

    path = f"/api/v2/users/{admin_id(api)}/authentication-tokens"
    before = datetime.now(UTC).replace(microsecond=0)
    plain = api.post(path, doc("authentication-tokens"))
    after = datetime.now(UTC) + timedelta(seconds=1)
    assert plain.status == 201
    expiry = datetime.fromisoformat(plain.data["attributes"]["expired-at"])
    assert years_later(before, 2) <= expiry <= years_later(after, 2)
    one_day = (datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0)
    dated = api.post(path, doc("authentication-tokens", **{"expired-at": one_day.isoformat()}))
    assert dated.status == 201
    assert datetime.fromisoformat(dated.data["attributes"]["expired-at"]) == one_day


def test_years_later_keeps_the_instant_and_moves_a_leap_day() -> None:
    from datetime import UTC, datetime

    from chalicelib.accounts.tokens.service import years_later

    moment = datetime(2026, 3, 27, 10, 11, 12, 345000, tzinfo=UTC)
    assert years_later(moment, 2) == datetime(2028, 3, 27, 10, 11, 12, 345000, tzinfo=UTC)
    leap = datetime(2028, 2, 29, 23, 0, tzinfo=UTC)
    assert years_later(leap, 2) == datetime(2030, 2, 28, 23, 0, tzinfo=UTC)


# ----- a token's last use (go-tfe's UserToken.LastUsedAt) -----------------------------------


def test_a_tokens_last_use_is_recorded_at_most_once_an_hour(api: Api) -> None:
    """``last-used-at``: null until the token is used, then the time of its first use in
    the hour. A warm request writes nothing; a cold one (the token read from DynamoDB)
    writes only when what is stored is over an hour old: one UpdateItem an hour a token."""
    from datetime import UTC, datetime, timedelta

    from bench.reads import counting_reads
    from chalicelib.core.auth import TokenModel, hash_token, verified
    from tests.accounts.helpers import admin_id
    from tests.conftest import doc

    created = api.post(
        f"/api/v2/users/{admin_id(api)}/authentication-tokens", doc("authentication-tokens")
    )
    token_id, secret = created.data["id"], created.data["attributes"]["token"]
    shown = f"/api/v2/authentication-tokens/{token_id}"
    assert created.data["attributes"]["last-used-at"] is None
    assert api.get(shown).data["attributes"]["last-used-at"] is None
    user = api.as_(secret)

    def calls(path: str = "/api/v2/account/details", *, cold: bool) -> dict[str, int]:
        if cold:
            verified.clear()
        with counting_reads() as counted:
            assert user.get(path).status == 200
        return dict(counted.calls)

    first = calls(cold=True)  # never used: recorded
    assert first.get("UpdateItem") == 1, first
    used = api.get(shown).data["attributes"]["last-used-at"]
    assert used is not None
    assert datetime.now(UTC) - datetime.fromisoformat(used) < timedelta(minutes=1)
    assert "UpdateItem" not in calls(cold=False)  # warm: nothing
    assert "UpdateItem" not in calls(cold=True)  # cold within the hour: nothing
    assert api.get(shown).data["attributes"]["last-used-at"] == used

    item = TokenModel.get(hash_token(secret))
    two_hours_ago = datetime.now(UTC) - timedelta(hours=2)
    item.update(actions=[TokenModel.last_used_at.set(two_hours_ago)])
    assert "UpdateItem" not in calls(cold=False)  # still cached: nothing yet
    assert calls(cold=True).get("UpdateItem") == 1  # read again, an hour old: recorded
    assert api.get(shown).data["attributes"]["last-used-at"] > used
