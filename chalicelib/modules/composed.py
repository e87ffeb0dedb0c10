"""The registry core's actions with what its sub-rooms add to them, for every caller (the
API routes and the web UI's publishing pages alike): a deleted module's no-code module and
webhook go with it, and a VCS branch module's new version comes from its repository.

The core (``service``) never imports its sub-rooms; this composer does, and loads
publishing only when a VCS module needs it.
"""

from __future__ import annotations

from chalicelib.modules.nocode import service as nocode
from chalicelib.modules.store import ModuleModel, ModuleVersionModel


def version_from_vcs(
    module: ModuleModel, version: str, commit_sha: str | None
) -> ModuleVersionModel:
    """``service.create_version``'s ``from_vcs``: publishing is imported here, so only
    versions of VCS modules load it."""
    from chalicelib.modules.publishing import service as publishing

    return publishing.create_branch_version(module, version, commit_sha)


def forget_deleted(deleted: list[ModuleModel]) -> None:
    """What goes with deleted module records: their no-code modules, and their webhooks at
    the VCS hosts."""
    nocode.delete_for_modules(deleted)
    if any(module.webhook_registration for module in deleted):
        from chalicelib.modules.publishing import hooks

        hooks.queue_removals(deleted)
