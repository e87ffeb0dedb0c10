"""Create the list indexes' items for a deployed stack's existing data (safe to re-run).

    REGISTRY_TABLE_PREFIX=<stack name>- AWS_DEFAULT_REGION=<region> \\
        python -m infrastructure.backfill

Lists page with keys (``chalicelib.core.data.lists``): they read a kept count per organization
(of modules, tags, projects, workspaces and users) and, for the registry protocol, a lean list of
the modules it serves, and the count of active site admins that keeps the last one. The
requests that create and delete them keep them; data written
before this version has neither, so run this once after deploying it (DynamoDB fills the
modules' lean index, ``list``, by itself). It scans the tables (a one-off, never a
request), writes only what is missing or wrong, and prints what it did; a second run writes
nothing. Something created or deleted while it runs can leave its organization's count off
by one: run it again (or when the stack is quiet).
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)

    for what, report in backfill_all().items():
        print(f"{what}: " + ", ".join(f"{k} {v}" for k, v in sorted(report.items())))
    return 0


def backfill_all() -> dict[str, dict[str, int]]:
    """Every list's backfill; what each did (also run by ``make run`` on restored state)."""
    from chalicelib.accounts.users import backfill as users_backfill
    from chalicelib.accounts.users import store as users_store
    from chalicelib.core.data.ids import now
    from chalicelib.modules import describe
    from chalicelib.modules import store as registry
    from chalicelib.modules.deadlines import backfill as deprecations
    from chalicelib.modules.downloads import store as downloads
    from chalicelib.modules.downloads import totals
    from chalicelib.modules.scanning import backfill as scans
    from chalicelib.projects import store as projects
    from chalicelib.tags import store as tags
    from chalicelib.workspaces import store as workspaces

    return {
        "registry modules": registry.backfill_lists(),
        # The web UI's module list shows the description kept on each module item.
        "module descriptions": describe.backfill_descriptions(),
        # The web UI's module list shows the download totals kept on each module item.
        "download totals": totals.backfill(),
        # Downloads counted by 0.11 in one item per version: its consumers moved to their
        # own items; day items older than the kept days folded into the version's total.
        "download items": downloads.fold_old_days(now()),
        # The organization's deprecations, most urgent first (upgrade campaigns), read an
        # index written with each deprecation: versions deprecated before it get its keys.
        "deprecations": deprecations.backfill_deprecation_index(),
        # Versions ingested before scanning (or whose scan job was dead-lettered) get one.
        "module scans": scans.request_missing_scans(),
        "tags": tags.backfill_counts(),
        "projects": projects.backfill_counts(),
        "workspaces": workspaces.backfill_counts(),
        # Usernames are unique in any case: claim the names of users made before the claims.
        "usernames": users_backfill.backfill_username_claims(),
        # Users are found by email through the by-email index: key the users made before it.
        "user emails": users_backfill.backfill_email_keys(),
        # The site admin's user list pages on the user directory index, with a kept count.
        "user directory": users_backfill.backfill_user_directory(),
        # The site keeps an active site admin on a kept count of them (also derived by the
        # first change that needs it).
        "site admins": users_store.backfill_admin_count(),
    }


if __name__ == "__main__":
    sys.exit(main())
