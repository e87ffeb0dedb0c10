"""Creating and deleting an organization, with everything that hangs off it, in order.

* An organization is created under the site's policy (``limit-user-organization-creation``),
  with its default project.
* Deleting one queues the removal of its modules' webhooks at the VCS hosts while its VCS
  connections still exist (each job carries the host and the sealed token it needs), deletes
  its providers (versions, platforms, their files in S3) and GPG keys, then the connections,
  the workspaces (a tag goes with its last workspace), leftover tags, the projects, and last
  the publishing policy and the notification configurations, and last the organization's own
  teams, tokens and record, the record with the deletion's audit event.

Every step is idempotent, so a delete interrupted half-way can be repeated.
"""

from __future__ import annotations

from chalicelib.accounts import authorization
from chalicelib.accounts.organizations import service as organizations_service
from chalicelib.core.auth import Principal
from chalicelib.projects import service as projects


def create_organization(principal: Principal, name: str | None, email: str | None):
    # The site settings' service brings mail, SMS and KMS sealing: only creating needs it.
    from chalicelib.admin import service as admin

    org = organizations_service.create_organization(
        principal, name, email, limited=admin.organization_creation_limited()
    )
    projects.ensure_default(org.name)
    return org


def delete_organization(principal: Principal, name: str) -> None:
    """Delete the organization and everything in it (owners only)."""
    # Every domain of an organization, imported here: the accounts function's other
    # requests (users, teams, tokens, reading organizations) never load them.
    from chalicelib.lifecycle.workspaces import destroy_workspace
    from chalicelib.modules import composed as registry
    from chalicelib.modules.nocode import service as nocode
    from chalicelib.notifications import service as notifications
    from chalicelib.providers import service as providers
    from chalicelib.tags import service as tags
    from chalicelib.trust import policy
    from chalicelib.vcs import service as vcs
    from chalicelib.workspaces import service as workspaces

    authorization.owned_organization(principal, name)
    modules = registry.delete_all_for_organization(name)
    nocode.delete_all_for_organization(name)
    providers.delete_all_for_organization(name)  # versions, platforms, files, GPG keys
    if any(module.webhook_registration for module in modules):
        from chalicelib.modules.publishing import hooks  # loads the VCS clients: only if needed

        hooks.queue_removals(modules)  # reads the connections: before they are deleted
    vcs.delete_all_for_organization(name)
    for workspace in workspaces.all_in_organization(name):
        destroy_workspace(workspace)
    tags.delete_all_for_organization(name)  # leftovers of an interrupted delete
    projects.delete_all_for_organization(name)  # empty now: their workspaces are gone
    policy.delete_for_organization(name)
    notifications.delete_all_for_organization(name)
    organizations_service.delete_organization_records(principal, name)
