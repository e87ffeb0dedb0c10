"""Create (or confirm) the first site admin of a deployed stack and print a token once.

    REGISTRY_TABLE_PREFIX=<stack name>- AWS_DEFAULT_REGION=<region> \\
        python -m infrastructure.bootstrap [--token <token to install>] [--username admin]

Uses the caller's AWS credentials against the stack's tables; prints nothing secret when the
admin already has a token and none was given.
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--token", help="install exactly this token for the admin")
    parser.add_argument("--username", default="admin")
    args = parser.parse_args(argv)

    from chalicelib.accounts.users.service import bootstrap_admin

    user, minted = bootstrap_admin(args.token, username=args.username)
    if minted:
        print(f"site admin {user.username!r} ({user.id}) token: {minted}")
    else:
        print(f"site admin {user.username!r} ({user.id}) exists; no new token was minted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
