"""The pages people manage themselves and each other with: the account (profile, password,
API tokens) and an organization's members, teams and tokens. One blueprint, ``bp``; importing
the package registers every page (``common.bp`` gathers them)."""

from chalicelib.web.people import account, members, teams  # noqa: F401 - registers the pages
from chalicelib.web.people.common import bp

__all__ = ["bp"]
