"""Production's password hashes: argon2id at argon2-cffi's defaults (RFC 9106's second
recommended option: 3 passes over 64 MiB, 4 lanes), for the stored hash and for the dummy a
missing user is checked against. The other tests hash at the cheapest parameters
(tests/conftest.py's ``cheap_password_hashes``); a hash names its parameters, so they verify
the same way."""

from __future__ import annotations

PRODUCTION = "$argon2id$v=19$m=65536,t=3,p=4$"


def test_passwords_are_hashed_with_argon2id_at_its_recommended_cost(
    production_password_hasher: None,
) -> None:
    from chalicelib.accounts import passwords

    stored = passwords.hash_password("correct-horse-battery")
    assert stored.startswith(PRODUCTION), stored
    assert passwords.verify(stored, "correct-horse-battery")
    assert not passwords.verify(stored, "correct-horse-battery!")
    # A missing user costs what a wrong password costs: the dummy is a production hash too.
    assert not passwords.verify(None, "correct-horse-battery")
    assert passwords._dummy().startswith(PRODUCTION)


def test_the_other_tests_hash_cheaply_and_verify_alike() -> None:
    from chalicelib.accounts import passwords

    stored = passwords.hash_password("correct-horse-battery")
    assert stored.startswith("$argon2id$v=19$m=8,t=1,p=1$"), stored
    assert passwords.verify(stored, "correct-horse-battery")
    assert not passwords.verify(stored, "not-the-password")
