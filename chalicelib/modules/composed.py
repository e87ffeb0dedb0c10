"""The registry core's actions with what its sub-rooms add to them, for every caller (the
API routes, the web UI's publishing pages and the organization's deletion alike): a deleted
module's download counts, no-code module and webhook go with it, a deleted version's download
counts with it, and a VCS branch module's new version comes from its repository.

The core (``service``) never imports its sub-rooms; this composer does, and loads
publishing only when a VCS module needs it.
"""

from __future__ import annotations

from chalicelib.core.auth import Principal
from chalicelib.modules import service, versions
from chalicelib.modules.downloads import store as downloads
from chalicelib.modules.nocode import service as nocode
from chalicelib.modules.store import ModuleModel, ModuleVersionModel


def version_from_vcs(
    principal: Principal, module: ModuleModel, version: str, commit_sha: str | None
) -> ModuleVersionModel:
    """``versions.create_version``'s ``from_vcs``: publishing is imported here, so only
    versions of VCS modules load it."""
    from chalicelib.modules.publishing import service as publishing

    return publishing.create_branch_version(principal, module, version, commit_sha)


def delete(principal: Principal, organization: str, parts: list[str]) -> list[ModuleModel]:
    """Delete by ``[registry, namespace, name]`` + optional ``provider`` + optional
    ``version`` (``service.to_delete``) with what goes with it; returns the module records
    deleted (a version's module, when it was the last version)."""
    modules, version = service.to_delete(principal, organization, parts)
    if version is None:
        return _delete_modules(principal, modules)
    (module,) = modules
    item = versions.version_of(module, version)
    gone = versions.delete_version(principal, module, item)
    downloads.forget(module.id, [item.version])
    deleted = [module] if gone else []
    _forget_deleted(deleted)
    return deleted


def delete_named(principal: Principal, organization: str, name: str) -> list[ModuleModel]:
    """Every module of that name (``service.named_to_delete``) with what goes with them."""
    return _delete_modules(principal, service.named_to_delete(principal, organization, name))


def delete_all_for_organization(organization: str) -> list[ModuleModel]:
    """Delete every module of an organization being deleted, with their download counts;
    returns them (their no-code modules and webhooks are the organization cascade's, which
    deletes those by organization)."""
    modules = service.modules_of(organization)
    for module in modules:
        downloads.forget(module.id, service.delete_module_record(module, None))
    return modules


def _delete_modules(principal: Principal, modules: list[ModuleModel]) -> list[ModuleModel]:
    """Each module deleted (and recorded: one event each) with what goes with it."""
    for module in modules:
        downloads.forget(module.id, service.delete_module_record(module, principal))
    _forget_deleted(modules)
    return modules


def _forget_deleted(deleted: list[ModuleModel]) -> None:
    """What goes with deleted module records besides their download counts: their no-code
    modules, and their webhooks at the VCS hosts."""
    nocode.delete_for_modules(deleted)
    if any(module.webhook_registration for module in deleted):
        from chalicelib.modules.publishing import hooks

        hooks.queue_removals(deleted)
