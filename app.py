"""The whole registry as one Chalice app: every domain's routes plus the ingest
and key-maintenance handlers of ``chalicelib/entry`` (registered here too, not copied).

``chalice local``, the tests and ``make run`` use this app; production deploys one Lambda
per route group from ``chalicelib/entry`` (see infrastructure/).
"""

from chalicelib.accounts.routes import bp as accounts_routes
from chalicelib.accounts.teams.routes import bp as team_routes
from chalicelib.admin.people_routes import bp as admin_people_routes
from chalicelib.admin.routes import bp as admin_routes
from chalicelib.audit.routes import bp as audit_routes
from chalicelib.bundles.routes import bp as bundle_routes
from chalicelib.entry import deadlines, ingest, oidc
from chalicelib.entry.factory import create_app
from chalicelib.entry.wiring import Uses
from chalicelib.lifecycle.admin_routes import bp as admin_organization_lifecycle
from chalicelib.lifecycle.organization_routes import bp as organization_lifecycle
from chalicelib.lifecycle.workspace_routes import bp as workspace_lifecycle
from chalicelib.meta.routes import bp as meta_routes
from chalicelib.modules.cache.routes import bp as module_cache_routes
from chalicelib.modules.cache.settings_routes import bp as module_cache_settings_routes
from chalicelib.modules.nocode.routes import bp as nocode_routes
from chalicelib.modules.protocol.routes import bp as protocol_routes
from chalicelib.modules.publishing.routes import bp as publishing_routes
from chalicelib.modules.publishing.webhook_routes import bp as webhook_routes
from chalicelib.modules.routes import bp as registry_routes
from chalicelib.modules.scanning.evidence_routes import bp as evidence_routes
from chalicelib.modules.scanning.routes import bp as scanning_routes
from chalicelib.notifications.routes import bp as notification_routes
from chalicelib.projects.routes import bp as project_routes
from chalicelib.providers.gpg_routes import bp as gpg_key_routes
from chalicelib.providers.mirror.routes import bp as mirror_routes
from chalicelib.providers.protocol.routes import bp as provider_protocol_routes
from chalicelib.providers.routes import bp as provider_routes
from chalicelib.scim.admin_routes import bp as scim_admin_routes
from chalicelib.scim.routes import bp as scim_routes
from chalicelib.tags.routes import bp as tag_routes
from chalicelib.trust.keys_routes import bp as signing_key_routes
from chalicelib.trust.routes import bp as policy_routes
from chalicelib.vcs.routes import bp as vcs_routes
from chalicelib.web.account_routes import bp as account_routes
from chalicelib.web.audit.pages import bp as audit_pages
from chalicelib.web.login import bp as login_routes
from chalicelib.web.people import members, teams  # noqa: F401 - register their pages
from chalicelib.web.people.account import bp as account_page
from chalicelib.web.people.common import bp as people_routes
from chalicelib.web.providers import bp as provider_pages
from chalicelib.web.publishing import bp as web_publishing_routes
from chalicelib.web.routes import bp as web_routes
from chalicelib.web.siteadmin.cache_routes import bp as siteadmin_cache_routes
from chalicelib.web.siteadmin.keys_routes import bp as siteadmin_keys_routes
from chalicelib.web.siteadmin.people_routes import bp as siteadmin_people_routes
from chalicelib.web.siteadmin.settings_routes import bp as siteadmin_settings_routes
from chalicelib.web.sso import bp as sso_routes
from chalicelib.workspaces.routes import bp as workspace_routes

app = create_app(
    "tfe-module-registry",
    [meta_routes, accounts_routes, team_routes, registry_routes, protocol_routes]
    + [workspace_routes, tag_routes]
    + [admin_routes, vcs_routes, publishing_routes, webhook_routes, project_routes]
    + [nocode_routes, web_routes, account_routes, login_routes, scim_routes, scim_admin_routes]
    + [people_routes, account_page, web_publishing_routes, provider_pages]
    + [organization_lifecycle, workspace_lifecycle]
    + [admin_people_routes, admin_organization_lifecycle, sso_routes]
    + [provider_routes, gpg_key_routes, provider_protocol_routes, mirror_routes]
    + [siteadmin_people_routes, siteadmin_settings_routes, siteadmin_keys_routes]
    + [policy_routes, signing_key_routes, evidence_routes, scanning_routes, audit_routes]
    + [audit_pages, notification_routes, module_cache_routes, bundle_routes]
    + [module_cache_settings_routes, siteadmin_cache_routes],
    Uses(mail=True, scim=True, namespaces=True),
)


app.on_sqs_message(**ingest.QUEUE)(ingest.handle_messages)
app.schedule(**oidc.SCHEDULE)(oidc.maintain_keys)
app.schedule(**deadlines.SCHEDULE)(deadlines.handle_schedule)
