"""Users' passwords: argon2id hashes (argon2-cffi's defaults), at least ``MIN_LENGTH``
characters and none of the common passwords shipped in ``common_passwords.txt``. The
password itself is never stored, logged or returned."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from chalicelib.core.api.errors import Unprocessable

MIN_LENGTH = 10
MAX_LENGTH = 256
COMMON = Path(__file__).with_name("common_passwords.txt")


@cache
def _hasher():  # noqa: ANN202 - argon2 loads with the first password, not the function
    from argon2 import PasswordHasher

    return PasswordHasher()


@cache
def _common() -> frozenset[str]:
    return frozenset(
        line.strip().casefold() for line in COMMON.read_text().splitlines() if line.strip()
    )


def check(password: str, again: str, pointer: str = "password") -> None:
    """422 (naming the field, never the password) unless ``password`` is acceptable."""
    if password != again:
        raise Unprocessable("the two passwords differ", pointer=pointer)
    if not MIN_LENGTH <= len(password) <= MAX_LENGTH:
        raise Unprocessable(
            f"a password has {MIN_LENGTH} to {MAX_LENGTH} characters", pointer=pointer
        )
    if password.casefold() in _common():
        raise Unprocessable("this password is too common; choose another", pointer=pointer)


def hash_password(password: str) -> str:
    return _hasher().hash(password)


def verify(password_hash: str | None, password: str) -> bool:
    """Whether ``password`` matches; without a hash, a dummy one is checked so that a
    missing user costs as much time as a wrong password."""
    from argon2.exceptions import InvalidHashError, VerificationError

    try:
        return _hasher().verify(password_hash or _dummy(), password) and bool(password_hash)
    except (VerificationError, InvalidHashError):
        return False


@cache
def _dummy() -> str:
    return _hasher().hash("not-a-password-anyone-has")
