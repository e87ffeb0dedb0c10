"""Every route that changes state records exactly one audit event (issue #37's "Done when").

The walk takes every route the API records (``chalicelib.core.api.openapi.SPECS``, the same
enumeration as tests/test_authorization.py: each entry app's routes) that is not a GET, the
web's POST pages included, and for each:

* ``EXPECTED`` (one table) says what the change's event is: its resource type and action
  (PARTS37's vocabulary), how many events (one change, one event; a documented number
  otherwise; 0 for a route that changes nothing), its partition (an organization's or the
  site's) and who it names as the actor;
* a recipe (``@recipe``) prepares what the route needs (a team to delete, a user to suspend)
  and makes a request that succeeds (2xx, or a page's 3xx; a route that changes nothing,
  ``NOTHING``, may answer its own refusal, never a 5xx);
* the test counts the events of the ``audit-events`` table before and after that request and
  checks the new ones: type, action, partition, actor (``auth.accessor_id``, ``auth.type``),
  outcome, that it names its resource and request.

Beside the walk: a change made with a 500 KB User-Agent is recorded with the agent cut (the
protocol's ``versions``/``download`` budgets, which write no event, are in tests/modules and
tests/providers).

A route with no entry in ``EXPECTED`` or no recipe fails ``test_every_state_changing_route_
has_a_recipe``: whoever adds a route adds both. The world (one organization, its module,
provider, team...) is built once for the module; a recipe that destroys something makes its
own. The preparation's own requests are not what a test checks: their violations of the
"every change explained" rule (``chalicelib.core.audit.check``) are dropped before the
request under test is made; that request's are not.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import importlib
import itertools
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.conftest import ADMIN_TOKEN, Api, Provisioned, Reply, doc, forget_cached_state, tar_gz
from tests.support.web_browser import Browser
from tests.test_authorization import ROUTES, Route, entry_apps

ORG = "acme"
JSONAPI = "application/vnd.api+json"
SCIM_JSON = "application/scim+json"
V2 = "/api/v2"
ORG_PATH = f"{V2}/organizations/{ORG}"
MODULES = f"{ORG_PATH}/registry-modules"
PROVIDERS = f"{ORG_PATH}/registry-providers"
KEYS = "/api/registry/private/v2/gpg-keys"
ADMIN = f"{V2}/admin"
SCIM = "/scim/v2"
SCIM_USER = "urn:ietf:params:scim:schemas:core:2.0:User"
SCIM_GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"
PATCH_OP = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
MAIN_TF = 'variable "cidr" { type = string }\n'

# Who an event names as its actor (``auth.accessor_id``).
AS_ADMIN = "admin"  # the site admin, who owns the organization and makes every change
AS_SCIM = "scim"  # the SCIM token the identity provider calls with
AS_REGISTRY = "registry"  # the registry itself (auth.type System): a signed webhook
AS_CALLER = "caller"  # the user the recipe signs in or acts as (Call.actor)


@dataclass(frozen=True)
class Expect:
    """The events a route's successful request records."""

    type: str
    action: str
    count: int = 1
    site: bool = False  # the site's partition (users, site settings, sign-ins, SCIM)
    actor: str = AS_ADMIN


def org(type_: str, action: str, count: int = 1, actor: str = AS_ADMIN) -> Expect:
    return Expect(type_, action, count, actor=actor)


def site(type_: str, action: str, actor: str = AS_ADMIN) -> Expect:
    return Expect(type_, action, site=True, actor=actor)


# Routes that are not GETs but change nothing, each with its reason (checked: no event).
NOTHING = Expect("", "", count=0)

_ORGS = f"{V2}/organizations/{{organization_name}}"
_MODULE = f"{_ORGS}/registry-modules/{{registry_name}}/{{namespace}}/{{name}}/{{provider}}"
_PROVIDER = f"{_ORGS}/registry-providers/{{registry_name}}/{{namespace}}/{{name}}"
_PLATFORM = f"{_PROVIDER}/versions/{{version}}/platforms/{{os}}/{{arch}}"
_KEY = "/api/registry/private/v2/gpg-keys/{namespace}/{key_id}"
_APP_ORG = "/app/{organization}"
_PUBLISH = _APP_ORG + "/registry/publish/{registry}/{namespace}/{name}/{provider}"

# ----- the table: what each state-changing route records ------------------------------------
EXPECTED: dict[tuple[str, str], Expect] = {
    # organizations, settings, tokens (part 1: accounts)
    ("POST", f"{V2}/organizations"): org("organization", "created"),
    ("PATCH", _ORGS): org("organization", "updated"),
    ("DELETE", _ORGS): org("organization", "deleted"),
    ("POST", f"{_ORGS}/authentication-token"): org("authentication-token", "created"),
    ("DELETE", f"{_ORGS}/authentication-token"): org("authentication-token", "deleted"),
    ("POST", f"{_ORGS}/organization-memberships"): org("organization-membership", "invited"),
    ("DELETE", f"{V2}/organization-memberships/{{membership_id}}"): org(
        "organization-membership", "cancelled"
    ),
    ("POST", f"{_ORGS}/teams"): org("team", "created"),
    ("PATCH", f"{V2}/teams/{{team_id}}"): org("team", "updated"),
    ("DELETE", f"{V2}/teams/{{team_id}}"): org("team", "deleted"),
    ("POST", f"{V2}/teams/{{team_id}}/relationships/users"): org("team", "members-added"),
    ("DELETE", f"{V2}/teams/{{team_id}}/relationships/users"): org("team", "members-removed"),
    ("POST", f"{V2}/teams/{{team_id}}/relationships/organization-memberships"): org(
        "team", "members-added"
    ),
    ("DELETE", f"{V2}/teams/{{team_id}}/relationships/organization-memberships"): org(
        "team", "members-removed"
    ),
    ("POST", f"{V2}/teams/{{team_id}}/authentication-token"): org(
        "authentication-token", "created"
    ),
    ("POST", f"{V2}/teams/{{team_id}}/authentication-tokens"): org(
        "authentication-token", "created"
    ),
    ("DELETE", f"{V2}/teams/{{team_id}}/authentication-token"): org(
        "authentication-token", "deleted"
    ),
    ("POST", f"{V2}/users/{{user_id}}/authentication-tokens"): site(
        "authentication-token", "created"
    ),
    ("DELETE", f"{V2}/authentication-tokens/{{token_id}}"): site("authentication-token", "deleted"),
    ("PATCH", f"{V2}/account/update"): site("user", "updated", AS_CALLER),
    ("PATCH", f"{V2}/account/password"): site("user", "password-changed", AS_CALLER),
    # site administration (part 2: admin)
    ("PATCH", f"{ADMIN}/general-settings"): site("setting", "updated"),
    ("PATCH", f"{ADMIN}/cost-estimation-settings"): site("setting", "updated"),
    ("PATCH", f"{ADMIN}/customization-settings"): site("setting", "updated"),
    ("PATCH", f"{ADMIN}/saml-settings"): site("setting", "updated"),
    ("POST", f"{ADMIN}/saml-settings/actions/revoke-old-certificate"): site("setting", "updated"),
    ("PATCH", f"{ADMIN}/scim-settings"): site("setting", "updated"),
    ("DELETE", f"{ADMIN}/scim-settings"): site("setting", "deleted"),
    ("PATCH", f"{ADMIN}/smtp-settings"): site("setting", "updated"),
    ("PATCH", f"{ADMIN}/sms-settings"): site("setting", "updated"),
    ("PATCH", f"{ADMIN}/twilio-settings"): site("setting", "updated"),
    # a test SMS: sends, changes nothing (refused here: SMS is not configured)
    ("POST", f"{ADMIN}/sms-settings/verify"): NOTHING,
    ("PATCH", f"{ADMIN}/sms-settings/verify"): NOTHING,
    ("POST", f"{ADMIN}/twilio-settings/verify"): NOTHING,
    ("PATCH", f"{ADMIN}/twilio-settings/verify"): NOTHING,
    ("POST", f"{ADMIN}/data-retention-policy-settings"): site("setting", "created"),
    ("PATCH", f"{ADMIN}/module-cache-settings"): site("module-cache-settings", "updated"),
    # air-gapped bundles: the jobs (their end is the registry's, when the job runs)
    ("POST", f"{ADMIN}/bundle-exports"): site("bundle-export", "started"),
    ("POST", f"{ADMIN}/bundle-imports"): site("bundle-import", "created"),
    ("POST", f"{ADMIN}/bundle-imports/{{job_id}}/actions/start"): site("bundle-import", "started"),
    ("DELETE", f"{ADMIN}/data-retention-policy-settings"): site("setting", "deleted"),
    # the OIDC keys, the SAML certificates: the settings of ``oidc``/``saml`` updated
    ("POST", f"{ADMIN}/oidc-settings/actions/rotate-key"): site("setting", "updated"),
    ("POST", f"{ADMIN}/oidc-settings/actions/trim-key"): site("setting", "updated"),
    ("POST", f"{ADMIN}/scim-tokens"): site("scim-token", "created"),
    ("DELETE", f"{ADMIN}/scim-tokens/{{token_id}}"): site("scim-token", "deleted"),
    ("POST", f"{ADMIN}/teams/{{team_id}}/scim-group-mapping"): org("scim-group-mapping", "created"),
    ("PATCH", f"{ADMIN}/teams/{{team_id}}/scim-group-mapping"): org(
        "scim-group-mapping", "updated"
    ),
    ("DELETE", f"{ADMIN}/teams/{{team_id}}/scim-group-mapping"): org(
        "scim-group-mapping", "deleted"
    ),
    ("POST", f"{ADMIN}/users/{{user_id}}/actions/grant_admin"): site("user", "admin-granted"),
    ("POST", f"{ADMIN}/users/{{user_id}}/actions/revoke_admin"): site("user", "admin-revoked"),
    ("POST", f"{ADMIN}/users/{{user_id}}/actions/grant_auditor"): site("user", "auditor-granted"),
    ("POST", f"{ADMIN}/users/{{user_id}}/actions/revoke_auditor"): site("user", "auditor-revoked"),
    ("POST", f"{ADMIN}/users/{{user_id}}/actions/suspend"): site("user", "suspended"),
    ("POST", f"{ADMIN}/users/{{user_id}}/actions/unsuspend"): site("user", "unsuspended"),
    ("POST", f"{ADMIN}/users/{{user_id}}/actions/disable_two_factor"): site(
        "user", "two-factor-disabled"
    ),
    ("DELETE", f"{ADMIN}/users/{{user_id}}"): site("user", "deleted"),
    ("PATCH", f"{ADMIN}/organizations/{{organization_name}}"): org("organization", "updated"),
    ("DELETE", f"{ADMIN}/organizations/{{organization_name}}"): org("organization", "deleted"),
    ("PATCH", f"{ADMIN}/organizations/{{organization_name}}/module-consumers"): org(
        "organization", "updated"
    ),
    ("PUT", f"{ADMIN}/organizations/{{organization_name}}/module-consumers"): org(
        "organization", "updated"
    ),
    ("PATCH", f"{ADMIN}/organizations/{{organization_name}}/relationships/module-consumers"): org(
        "organization", "updated"
    ),
    ("POST", f"{SCIM}/Users"): site("scim-user", "created", AS_SCIM),
    ("PUT", f"{SCIM}/Users/{{scim_id}}"): site("scim-user", "updated", AS_SCIM),
    ("PATCH", f"{SCIM}/Users/{{scim_id}}"): site("scim-user", "updated", AS_SCIM),
    ("DELETE", f"{SCIM}/Users/{{scim_id}}"): site("scim-user", "deleted", AS_SCIM),
    ("POST", f"{SCIM}/Groups"): site("scim-group", "created", AS_SCIM),
    ("PUT", f"{SCIM}/Groups/{{scim_id}}"): site("scim-group", "updated", AS_SCIM),
    ("PATCH", f"{SCIM}/Groups/{{scim_id}}"): site("scim-group", "updated", AS_SCIM),
    ("DELETE", f"{SCIM}/Groups/{{scim_id}}"): site("scim-group", "deleted", AS_SCIM),
    # modules (part 3)
    ("POST", f"{_ORGS}/registry-modules"): org("registry-module", "created"),
    ("POST", f"{V2}/registry-modules"): org("registry-module", "created"),
    ("POST", f"{_ORGS}/registry-modules/vcs"): org("registry-module", "created"),
    ("PATCH", _MODULE): org("registry-module", "updated"),
    ("DELETE", _MODULE): org("registry-module", "deleted"),
    ("DELETE", f"{_ORGS}/registry-modules/{{registry_name}}/{{namespace}}/{{name}}"): org(
        "registry-module", "deleted"
    ),
    ("POST", f"{V2}/registry-modules/actions/delete/{{organization_name}}/{{name}}"): org(
        "registry-module", "deleted"
    ),
    ("POST", f"{V2}/registry-modules/actions/delete/{{organization_name}}/{{name}}/{{provider}}"): (
        org("registry-module", "deleted")
    ),
    (
        "POST",
        f"{V2}/registry-modules/actions/delete/{{organization_name}}/{{name}}/{{provider}}/{{version}}",
    ): org("registry-module-version", "deleted"),
    ("POST", f"{_MODULE}/versions"): org("registry-module-version", "created"),
    ("POST", f"{V2}/registry-modules/{{module_ref}}/{{name}}/{{provider}}/versions"): org(
        "registry-module-version", "created"
    ),
    ("PATCH", f"{_MODULE}/{{version}}"): org("registry-module-version", "deprecated"),
    ("DELETE", f"{_MODULE}/{{version}}"): org("registry-module-version", "deleted"),
    ("DELETE", f"{_MODULE}/{{version}}/{{after}}"): org("registry-module-version", "deleted"),
    ("POST", f"{_MODULE}/versions/{{version}}/actions/release"): org(
        "registry-module-version", "released"
    ),
    ("POST", f"{V2}/registry-modules/{{module_ref}}/actions/regenerate-webhook-secret"): org(
        "registry-module", "webhook-secret-regenerated"
    ),
    ("POST", f"{V2}/registry-modules/{{module_ref}}/actions/resync"): org(
        "registry-module", "sync-requested"
    ),
    ("POST", f"{V2}/registry-modules/{{module_ref}}/actions/retry"): org(
        "registry-module", "retried"
    ),
    ("PATCH", f"{_ORGS}/registry-policy"): org("registry-policy", "updated"),
    ("POST", f"{_ORGS}/no-code-modules"): org("no-code-module", "created"),
    ("PATCH", f"{V2}/no-code-modules/{{no_code_module_id}}"): org("no-code-module", "updated"),
    ("DELETE", f"{V2}/no-code-modules/{{no_code_module_id}}"): org("no-code-module", "deleted"),
    # no-code provisioning runs no Terraform here: always a 422 that changes nothing
    ("POST", f"{V2}/no-code-modules/{{no_code_module_id}}/workspaces"): NOTHING,
    ("POST", f"{V2}/no-code-modules/{{no_code_module_id}}/workspaces/{{workspace_id}}/upgrade"): (
        NOTHING
    ),
    # a VCS host's signed push: the registry publishes (auth.type System)
    ("POST", "/webhooks/vcs/{webhook_id}"): Expect(
        "registry-module", "sync-requested", actor=AS_REGISTRY
    ),
    # providers, GPG keys, the mirror (part 4)
    ("POST", f"{_ORGS}/registry-providers"): org("registry-provider", "created"),
    ("PATCH", _PROVIDER): org("registry-provider", "updated"),
    ("DELETE", _PROVIDER): org("registry-provider", "deleted"),
    ("POST", f"{_PROVIDER}/versions"): org("registry-provider-version", "created"),
    ("DELETE", f"{_PROVIDER}/versions/{{version}}"): org("registry-provider-version", "deleted"),
    ("POST", f"{_PROVIDER}/versions/{{version}}/platforms"): org(
        "registry-provider-platform", "created"
    ),
    ("DELETE", _PLATFORM): org("registry-provider-platform", "deleted"),
    ("POST", f"{_PLATFORM}/actions/retry"): org("registry-provider-platform", "retried"),
    ("POST", KEYS): org("gpg-key", "created"),
    ("PATCH", _KEY): org("gpg-key", "updated"),
    ("DELETE", _KEY): org("gpg-key", "deleted"),
    ("PUT", "/api/registry/mirror/v1/seed"): site("provider-mirror", "seeded"),
    ("POST", f"{ADMIN}/module-cache/actions/seed"): site("cached-module", "seeded"),
    # VCS connections, projects, workspaces, tags (part 4)
    ("POST", f"{_ORGS}/oauth-clients"): org("oauth-client", "created"),
    ("PATCH", f"{V2}/oauth-clients/{{client_id}}"): org("oauth-client", "updated"),
    ("DELETE", f"{V2}/oauth-clients/{{client_id}}"): org("oauth-client", "deleted"),
    ("PATCH", f"{V2}/oauth-tokens/{{token_id}}"): org("oauth-token", "updated"),
    ("DELETE", f"{V2}/oauth-tokens/{{token_id}}"): org("oauth-token", "deleted"),
    ("POST", f"{_ORGS}/projects"): org("project", "created"),
    ("PATCH", f"{V2}/projects/{{project_id}}"): org("project", "updated"),
    ("DELETE", f"{V2}/projects/{{project_id}}"): org("project", "deleted"),
    ("POST", f"{V2}/projects/{{project_id}}/relationships/workspaces"): org("workspace", "updated"),
    # tag bindings and tags are the project's or workspace's own attributes
    ("PATCH", f"{V2}/projects/{{project_id}}/tag-bindings"): org("project", "updated"),
    ("POST", f"{_ORGS}/workspaces"): org("workspace", "created"),
    ("PATCH", f"{_ORGS}/workspaces/{{workspace_name}}"): org("workspace", "updated"),
    ("PATCH", f"{V2}/workspaces/{{workspace_id}}"): org("workspace", "updated"),
    ("DELETE", f"{_ORGS}/workspaces/{{workspace_name}}"): org("workspace", "deleted"),
    ("DELETE", f"{V2}/workspaces/{{workspace_id}}"): org("workspace", "deleted"),
    ("POST", f"{_ORGS}/workspaces/{{workspace_name}}/actions/safe-delete"): org(
        "workspace", "deleted"
    ),
    ("POST", f"{V2}/workspaces/{{workspace_id}}/actions/safe-delete"): org("workspace", "deleted"),
    ("PATCH", f"{V2}/workspaces/{{workspace_id}}/tag-bindings"): org("workspace", "updated"),
    ("POST", f"{V2}/workspaces/{{workspace_id}}/relationships/tags"): org("workspace", "tagged"),
    ("DELETE", f"{V2}/workspaces/{{workspace_id}}/relationships/tags"): org(
        "workspace", "untagged"
    ),
    ("POST", f"{V2}/tags/{{tag_id}}/relationships/workspaces"): org("workspace", "tagged"),
    ("DELETE", f"{_ORGS}/tags"): org("tag", "deleted"),
    # notification configurations (issue #38, part B); a verify sends, and keeps the attempt
    # on the configuration (bookkeeping: no event)
    ("POST", f"{_ORGS}/notification-configurations"): org("notification-configuration", "created"),
    ("PATCH", f"{V2}/notification-configurations/{{notification_configuration_id}}"): org(
        "notification-configuration", "updated"
    ),
    ("DELETE", f"{V2}/notification-configurations/{{notification_configuration_id}}"): org(
        "notification-configuration", "deleted"
    ),
    (
        "POST",
        f"{V2}/notification-configurations/{{notification_configuration_id}}/actions/verify",
    ): (NOTHING),
    # sign-ins and sign-outs (part 2), the links that carry their own secret (part 1)
    ("POST", "/app/sign-in"): site("user", "signed-in", AS_CALLER),
    ("POST", "/app/sign-in/password"): site("user", "signed-in", AS_CALLER),
    ("POST", "/app/sign-in/two-factor"): site("user", "signed-in", AS_CALLER),
    ("POST", "/app/sign-out"): site("user", "signed-out", AS_CALLER),
    ("POST", "/users/saml/auth"): site("user", "signed-in", AS_CALLER),
    # terraform login: the consent issues a one-time code (bookkeeping); the token exchange
    # is the sign-in (a ``token`` sign-in: a token is created)
    ("POST", "/app/oauth/authorize"): NOTHING,
    ("POST", "/oauth/token"): site("user", "signed-in", AS_CALLER),
    # a reset asked for: counted (bookkeeping) and queued; the mail worker writes the link's
    # secret (a worker's change, not this request's)
    ("POST", "/app/password-reset"): NOTHING,
    ("POST", "/app/password-reset/{token}"): site("user", "password-changed", AS_CALLER),
    ("POST", "/app/invitations/{token}"): org("organization-membership", "joined", actor=AS_CALLER),
    ("POST", "/app/account/confirm-email/{user_id}/{secret}"): site(
        "user", "email-confirmed", AS_CALLER
    ),
    # the web's pages: the same changes as the API's (part 5 and the parts that own them)
    ("POST", "/app/account/profile"): site("user", "updated", AS_CALLER),
    ("POST", "/app/account/password"): site("user", "password-changed", AS_CALLER),
    ("POST", "/app/account/tokens"): site("authentication-token", "created", AS_CALLER),
    ("POST", "/app/account/tokens/{token_id}/revoke"): site(
        "authentication-token", "deleted", AS_CALLER
    ),
    # setting two-factor up keeps a pending secret; confirming it turns two-factor on
    ("POST", "/app/account/two-factor/setup"): site("user", "two-factor-setup-started", AS_CALLER),
    ("POST", "/app/account/two-factor/confirm"): site("user", "two-factor-enabled", AS_CALLER),
    ("POST", "/app/account/two-factor/disable"): site("user", "two-factor-disabled", AS_CALLER),
    ("POST", "/app/admin/oidc/rotate"): site("setting", "updated"),
    ("POST", "/app/admin/oidc/trim"): site("setting", "updated"),
    ("POST", "/app/admin/organizations/{name}/module-sharing"): org("organization", "updated"),
    ("POST", "/app/admin/scim"): site("setting", "updated"),
    ("POST", "/app/admin/module-cache"): site("module-cache-settings", "updated"),
    ("POST", "/app/admin/scim/tokens"): site("scim-token", "created"),
    ("POST", "/app/admin/scim/tokens/{token_id}/revoke"): site("scim-token", "deleted"),
    ("POST", "/app/admin/settings/saml/revoke-old-certificate"): site("setting", "updated"),
    # test messages: sent, nothing changed
    ("POST", "/app/admin/settings/sms/test-message"): NOTHING,
    ("POST", "/app/admin/settings/smtp/test-mail"): NOTHING,
    ("POST", "/app/admin/settings/{area}"): site("setting", "updated"),
    ("POST", "/app/admin/users/{user_id}/{action}"): site("user", "suspended"),
    ("POST", _APP_ORG + "/members/invite"): org("organization-membership", "invited"),
    ("POST", _APP_ORG + "/members/{membership_id}/remove"): org(
        "organization-membership", "cancelled"
    ),
    ("POST", _APP_ORG + "/teams"): org("team", "created"),
    ("POST", _APP_ORG + "/teams/{team_id}/access"): org("team", "updated"),
    ("POST", _APP_ORG + "/teams/{team_id}/delete"): org("team", "deleted"),
    ("POST", _APP_ORG + "/teams/{team_id}/members"): org("team", "members-added"),
    ("POST", _APP_ORG + "/teams/{team_id}/token"): org("authentication-token", "created"),
    ("POST", _APP_ORG + "/teams/{team_id}/token/revoke"): org("authentication-token", "deleted"),
    ("POST", _APP_ORG + "/settings/registry-policy"): org("registry-policy", "updated"),
    ("POST", _APP_ORG + "/settings/token"): org("authentication-token", "created"),
    ("POST", _APP_ORG + "/settings/token/revoke"): org("authentication-token", "deleted"),
    ("POST", _APP_ORG + "/registry/publish"): org("registry-module", "created"),
    ("POST", _APP_ORG + "/registry/publish/vcs"): org("registry-module", "created"),
    ("POST", _PUBLISH + "/versions"): org("registry-module-version", "created"),
    ("POST", _PUBLISH + "/retry"): org("registry-module", "retried"),
    ("POST", _PUBLISH + "/delete"): org("registry-module", "deleted"),
    ("POST", _PUBLISH + "/{version}/{action}"): org("registry-module-version", "deprecated"),
    (
        "POST",
        _APP_ORG
        + "/registry/providers/private/{namespace}/{name}/{version}/platforms/{os}/{arch}/retry",
    ): org("registry-provider-platform", "retried"),
}


# ----- the walk's machinery -----------------------------------------------------------------


@dataclass
class Call:
    """The request a recipe makes: an API call (``body``/``raw``, as ``token``) or a page's
    form (``form``, in ``browser``, the admin's signed-in one by default)."""

    path: str
    body: Any = None
    raw: str | bytes | None = None
    token: str | None = ADMIN_TOKEN
    content_type: str = JSONAPI
    headers: dict[str, str] = field(default_factory=dict)
    form: dict[str, Any] | None = None
    browser: Browser | None = None
    organization: str = ORG  # the partition an organization's event goes to
    actor: str | None = None  # the accessor id of AS_CALLER


Recipe = Callable[["World"], Call]
RECIPES: dict[tuple[str, str], Recipe] = {}


def recipe(method: str, path: str) -> Callable[[Recipe], Recipe]:
    def register(function: Recipe) -> Recipe:
        assert (method, path) not in RECIPES, (method, path)
        RECIPES[(method, path)] = function
        return function

    return register


def state_changing_routes() -> dict[tuple[str, str], Route]:
    """Every route that is not a GET, once (the first entry app that serves it)."""
    found: dict[tuple[str, str], Route] = {}
    for route in ROUTES:
        if route.method not in ("GET", "HEAD", "OPTIONS"):
            found.setdefault((route.method, route.path), route)
    return found


WALKED = state_changing_routes()


@dataclass
class World:
    api: Api  # the whole app, as the site admin: the recipes' preparation
    clients: dict[str, Any]  # entry module -> its Chalice test client
    admin_id: str
    browser: Browser  # the admin, signed in to the web
    csrf: str
    git: Any  # the stand-in git server
    shas: dict[str, str]  # its commits
    mailbox: Any  # the local SMTP server's
    counter: Iterator[int] = field(default_factory=itertools.count)
    cache: dict[str, Any] = field(default_factory=dict)

    def name(self, prefix: str) -> str:
        """A name no other recipe uses."""
        return f"{prefix}{next(self.counter)}"

    def ok(self, reply: Reply) -> Any:
        assert 200 <= reply.status < 300, (reply.status, reply.body[:400])
        return reply.json["data"] if reply.body and reply.json and "data" in reply.json else None

    def once(self, key: str, make: Callable[[], Any]) -> Any:
        """What ``make`` makes, made once for the walk (shared where no recipe changes it)."""
        if key not in self.cache:
            self.cache[key] = make()
        return self.cache[key]

    def mailed_link(self, to: str, path: str) -> str:
        """The secret after ``path`` in the last link mailed to ``to``."""
        from tests.support.admin_servers import text_of

        for message in reversed(self.mailbox.messages):
            if to in str(message["To"]):
                found = re.search(re.escape(path) + r"([A-Za-z0-9_.-]+)", text_of(message))
                if found:
                    return found.group(1)
        raise AssertionError(f"no link to {path} mailed to {to}")

    def form(self, **values: Any) -> dict[str, Any]:
        return {"csrf_token": self.csrf, **values}


def _events() -> dict[str, dict[str, Any]]:
    """Every audit event kept: its keys -> the event's document and its partition (read in
    moto's own store: a Scan through botocore twice per route was a third of the walk)."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    from chalicelib.core.audit.store import TABLE
    from chalicelib.core.settings import get_settings

    settings = get_settings()
    table = dynamodb_backends[DEFAULT_ACCOUNT_ID][settings.region].tables[
        settings.table_name(TABLE)
    ]
    found = {}
    for item in table.all_items():
        values = {
            name: value["S"] for name, value in item.to_json()["Attributes"].items() if "S" in value
        }
        partition = values["partition"]
        found[f"{partition}|{values['key']}"] = {
            "partition": partition,
            **json.loads(values["document"]),
        }
    return found


@pytest.fixture(scope="module")
def world(aws_resources: Provisioned, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    from chalice.test import Client

    from chalicelib.accounts.users.service import bootstrap_admin
    from chalicelib.core.audit import check
    from chalicelib.core.settings import get_settings
    from tests.support.admin_servers import smtp_server, use_smtp
    from tests.support.vcs_git_server import serve

    with pytest.MonkeyPatch.context() as env, contextlib.ExitStack() as stack:
        for name in ("REGISTRY_PUBLIC_UPSTREAM", "REGISTRY_MIRROR_UPSTREAM_URL"):
            env.setenv(name, "http://127.0.0.1:9")
        forget_cached_state()
        aws_resources.mock.start(reset=False)
        try:
            get_settings.cache_clear()
            admin, _ = bootstrap_admin(ADMIN_TOKEN)
            project = str(tmp_path_factory.mktemp("chalice"))
            whole = stack.enter_context(
                Client(importlib.import_module("app").app, project_dir=project)
            )
            clients = {
                name: stack.enter_context(Client(app, project_dir=project))
                for name, app in entry_apps().items()
            }
            git, shas = stack.enter_context(contextlib.contextmanager(serve)())
            api = Api(whole, ADMIN_TOKEN)
            # mail goes to a local SMTP server (invitations, reset requests, test mail)
            port, mailbox = stack.enter_context(smtp_server())
            use_smtp(api, port)
            made = api.post(f"{V2}/organizations", doc("organizations", name=ORG, email="o@x.io"))
            assert made.status == 201, made.json
            browser = Browser(clients["chalicelib.entry.api.web"])
            assert browser.sign_in(ADMIN_TOKEN).status_code == 303
            csrf = browser.csrf("/app/organizations")
            check.VIOLATIONS.clear()
            yield World(api, clients, admin.id, browser, csrf, git, shas, mailbox)
        finally:
            aws_resources.empty()
            aws_resources.mock.stop(remove_data=False)
            forget_cached_state()


def _make(world: World, route: Route, call: Call) -> tuple[int, str]:
    """Make the recipe's request through the route's own entry app: (status, what it said)."""
    client = world.clients[route.app]
    if call.form is not None or route.page:
        browser = call.browser or Browser(client)
        if call.browser is None:
            browser.cookies = dict(world.browser.cookies)
        browser.client = client
        response = browser.request(route.method, call.path, call.form, call.headers or None)
        location = response.headers.get("Location") or response.headers.get("location") or ""
        return response.status_code, f"{location} {response.text[:600]}"
    api = Api(client, call.token)
    raw = (
        call.raw
        if call.raw is not None
        else (json.dumps(call.body) if call.body is not None else None)
    )
    if isinstance(raw, bytes):
        headers = {"Content-Type": call.content_type, **call.headers}
        if call.token:
            headers["Authorization"] = f"Bearer {call.token}"
        response = getattr(client.http, route.method.lower())(call.path, headers=headers, body=raw)
        return response.status_code, response.body[:600].decode("utf-8", "replace")
    reply = api.call(
        route.method, call.path, raw=raw, content_type=call.content_type, headers=call.headers
    )
    return reply.status, reply.body[:600].decode("utf-8", "replace")


def test_every_state_changing_route_has_a_recipe() -> None:
    """A new route that changes state must say what it records and how to make it succeed."""
    walked = set(WALKED)
    assert len(walked) >= 160
    assert sorted(walked - set(EXPECTED)) == [], "add the route's event to EXPECTED"
    assert sorted(walked - set(RECIPES)) == [], "add a @recipe for the route"
    assert sorted(set(EXPECTED) - walked) == [] and sorted(set(RECIPES) - walked) == []


def test_a_new_route_without_a_recipe_fails_the_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not vacuous: a state-changing route the table does not know fails the first test."""
    route = Route("chalicelib.entry.api.accounts", "POST", f"{V2}/new-things", "bearer")
    monkeypatch.setitem(WALKED, ("POST", route.path), route)
    with pytest.raises(AssertionError, match="EXPECTED"):
        test_every_state_changing_route_has_a_recipe()
    monkeypatch.setitem(EXPECTED, ("POST", route.path), org("new-thing", "created"))
    with pytest.raises(AssertionError, match="@recipe"):
        test_every_state_changing_route_has_a_recipe()


@pytest.mark.parametrize("key", sorted(WALKED), ids=lambda key: f"{key[0]} {key[1]}")
def test_a_successful_change_records_exactly_its_event(world: World, key: tuple[str, str]) -> None:
    from chalicelib.core.audit import check
    from chalicelib.core.audit.store import SITE

    route, expected = WALKED[key], EXPECTED.get(key)
    make = RECIPES.get(key)
    assert expected is not None and make is not None, "no recipe: see the first test"
    call = make(world)
    check.VIOLATIONS.clear()  # the preparation's; the request under test's are kept
    before = _events()
    status, said = _make(world, route, call)
    if expected.count:
        assert 200 <= status < 400, (status, said)
    else:
        assert status < 500, (status, said)
    after = _events()
    new = [after[k] for k in sorted(set(after) - set(before))]
    seen = [(e["resource"]["type"], e["resource"]["action"], e["partition"]) for e in new]
    assert len(new) == expected.count, f"{len(new)} events, expected {expected.count}: {seen}"
    for event in new:
        assert (event["resource"]["type"], event["resource"]["action"]) == (
            expected.type,
            expected.action,
        ), seen
        assert event["partition"] == (SITE if expected.site else call.organization), seen
        actor = {
            AS_ADMIN: world.admin_id,
            AS_CALLER: call.actor,
            AS_SCIM: call.actor,
            AS_REGISTRY: "registry",
        }[expected.actor]
        assert event["auth"]["accessor_id"] == actor, event["auth"]
        assert event["auth"]["type"] == ("System" if expected.actor == AS_REGISTRY else "Client")
        assert event["resource"]["meta"]["outcome"] == "succeeded", event["resource"]
        # which resource, and which request (the walk's requests come from the test client)
        assert event["resource"]["id"] and event["request"]["id"], event


# ----- what the recipes build on ------------------------------------------------------------


def _user(world: World, prefix: str = "u") -> tuple[str, str, str]:
    """A new user and a token of theirs: (id, username, token)."""
    from chalicelib.accounts.users.service import create_user
    from chalicelib.core.auth import mint_token

    name = world.name(prefix)
    user = create_user(name, f"{name}@example.com")
    return user.id, name, mint_token("user", user.id)[1]


def _team(world: World) -> str:
    body = doc("teams", name=world.name("team"), visibility="organization")
    return str(world.ok(world.api.post(f"{ORG_PATH}/teams", body))["id"])


def _members(type_: str, *ids: str) -> dict[str, Any]:
    return {"data": [{"type": type_, "id": i} for i in ids]}


def _module(world: World, versions: tuple[str, ...] = (), *, upload: bool = False) -> dict:
    """A new module of the organization (with ``versions``, uploaded and ingested when
    ``upload``): its JSON:API data."""
    name = world.name("mod")
    module = world.ok(world.api.post(MODULES, doc("registry-modules", name=name, provider="aws")))
    for version in versions:
        reply = world.api.post(
            f"{MODULES}/private/{ORG}/{name}/aws/versions",
            doc("registry-module-versions", version=version),
        )
        world.ok(reply)
        if upload:
            from tests.modules.helpers import upload_and_ingest

            assert upload_and_ingest(reply, {"main.tf": MAIN_TF}) == "ok"
    return dict(module)


def _module_path(module: dict) -> str:
    return f"{MODULES}/private/{ORG}/{module['attributes']['name']}/aws"


def _signer(world: World) -> Any:
    from tests.support.provider_files import new_signing_key

    return world.once("signer", new_signing_key)


def _key_id(world: World) -> str:
    """The organization's GPG key (added once)."""

    def add() -> str:
        signer = _signer(world)
        body = doc("gpg-keys", namespace=ORG, **{"ascii-armor": signer.armor})
        return str(world.ok(world.api.post(KEYS, body))["attributes"]["key-id"])

    return str(world.once("key", add))


def _provider(world: World, versions: tuple[str, ...] = (), platform: bool = False) -> str:
    """A new private provider (its versions, each with a linux/amd64 platform when
    ``platform``): its path."""
    name = world.name("cloud")
    body = doc("registry-providers", name=name, namespace=ORG, **{"registry-name": "private"})
    world.ok(world.api.post(PROVIDERS, body))
    path = f"{PROVIDERS}/private/{ORG}/{name}"
    for version in versions:
        attributes = {"version": version, "key-id": _key_id(world).lower(), "protocols": ["5.0"]}
        world.ok(
            world.api.post(f"{path}/versions", doc("registry-provider-versions", **attributes))
        )
        if platform:
            world.ok(
                world.api.post(f"{path}/versions/{version}/platforms", _platform(name, version))
            )
    return path


def _platform(name: str, version: str) -> dict[str, Any]:
    attributes = {
        "os": "linux",
        "arch": "amd64",
        "shasum": "a" * 64,
        "filename": f"terraform-provider-{name}_{version}_linux_amd64.zip",
    }
    return doc("registry-provider-version-platforms", **attributes)


def _workspace(world: World) -> dict:
    body = doc("workspaces", name=world.name("ws"))
    return dict(world.ok(world.api.post(f"{ORG_PATH}/workspaces", body)))


def _project(world: World) -> str:
    body = doc("projects", name=world.name("proj"))
    return str(world.ok(world.api.post(f"{ORG_PATH}/projects", body))["id"])


def _oauth_client(world: World) -> dict:
    from tests.support.vcs_git_server import TOKEN

    attributes = {
        "service-provider": "github_enterprise",
        "http-url": world.git.url,
        "api-url": world.git.url + "/api/v3",
        "oauth-token-string": TOKEN,
    }
    return dict(
        world.ok(world.api.post(f"{ORG_PATH}/oauth-clients", doc("oauth-clients", **attributes)))
    )


def _vcs_module(world: World) -> dict:
    """The module published from the stand-in git server (made once; resyncs change no
    name): its JSON:API data, the webhook secret kept in ``attributes``."""

    def publish() -> dict:
        token_id = _oauth_client(world)["relationships"]["oauth-tokens"]["data"][0]["id"]
        repo = {
            "identifier": "acme/terraform-aws-net",
            "oauth-token-id": token_id,
            "display-identifier": "acme/terraform-aws-net",
        }
        body = doc("registry-modules", **{"vcs-repo": repo})
        module = world.ok(world.api.post(f"{MODULES}/vcs", body))
        from tests.modules.publishing import drain

        drain()
        return dict(module)

    return dict(world.once("vcs-module", publish))


def _scim(world: World) -> str:
    """SAML and SCIM on, and a SCIM token (made once): the token."""

    def enable() -> str:
        saml = {
            "enabled": True,
            "idp-cert": "testCert",
            "sso-endpoint-url": "https://idp.example.test/sso",
            "slo-endpoint-url": "https://idp.example.test/slo",
        }
        world.ok(
            world.api.patch(f"{ADMIN}/saml-settings", {"data": {"type": "", "attributes": saml}})
        )
        on = {"data": {"type": "", "attributes": {"enabled": True}}}
        world.ok(world.api.patch(f"{ADMIN}/scim-settings", on))
        made = world.api.post(
            f"{ADMIN}/scim-tokens", {"data": {"type": "", "attributes": {"description": "idp"}}}
        )
        return str(world.ok(made)["attributes"]["token"]) + "|" + str(world.ok(made)["id"])

    return str(world.once("scim", enable))


def _scim_call(world: World, path: str, payload: Any) -> Call:
    token, token_id = _scim(world).split("|")
    return Call(path, payload, token=token, content_type=SCIM_JSON, actor=token_id)


def _scim_user(world: World) -> str:
    token, _ = _scim(world).split("|")
    name = world.name("scimu")
    body = {
        "schemas": [SCIM_USER],
        "userName": name,
        "emails": [{"value": f"{name}@x.io", "primary": True}],
    }
    reply = Api(world.api.client, token).call("POST", f"{SCIM}/Users", body, content_type=SCIM_JSON)
    assert reply.status == 201, reply.json
    return str(reply.json["id"])


def _scim_group(world: World) -> str:
    token, _ = _scim(world).split("|")
    body = {"schemas": [SCIM_GROUP], "displayName": world.name("grp"), "members": []}
    reply = Api(world.api.client, token).call(
        "POST", f"{SCIM}/Groups", body, content_type=SCIM_JSON
    )
    assert reply.status == 201, reply.json
    return str(reply.json["id"])


def _settings(**attributes: Any) -> dict[str, Any]:
    """What go-tfe sends for the admin singletons: an empty type."""
    return {"data": {"type": "", "attributes": attributes}}


# ----- recipes: organizations, teams, tokens, accounts --------------------------------------


@recipe("POST", f"{V2}/organizations")
def _(w: World) -> Call:
    name = w.name("org")
    return Call(
        f"{V2}/organizations", doc("organizations", name=name, email="o@x.io"), organization=name
    )


def _other_org(w: World) -> str:
    name = w.name("org")
    w.ok(w.api.post(f"{V2}/organizations", doc("organizations", name=name, email="o@x.io")))
    return name


@recipe("PATCH", _ORGS)
def _(w: World) -> Call:
    return Call(ORG_PATH, doc("organizations", email=f"{w.name('owner')}@x.io"))


@recipe("DELETE", _ORGS)
def _(w: World) -> Call:
    name = _other_org(w)
    return Call(f"{V2}/organizations/{name}", organization=name)


@recipe("POST", f"{_ORGS}/authentication-token")
def _(w: World) -> Call:
    return Call(f"{ORG_PATH}/authentication-token")


@recipe("DELETE", f"{_ORGS}/authentication-token")
def _(w: World) -> Call:
    w.ok(w.api.post(f"{ORG_PATH}/authentication-token"))
    return Call(f"{ORG_PATH}/authentication-token")


@recipe("POST", f"{_ORGS}/organization-memberships")
def _(w: World) -> Call:
    body = doc("organization-memberships", email=f"{w.name('invited')}@example.com")
    return Call(f"{ORG_PATH}/organization-memberships", body)


def _invited(w: World) -> str:
    body = doc("organization-memberships", email=f"{w.name('invited')}@example.com")
    return str(w.ok(w.api.post(f"{ORG_PATH}/organization-memberships", body))["id"])


@recipe("DELETE", f"{V2}/organization-memberships/{{membership_id}}")
def _(w: World) -> Call:
    return Call(f"{V2}/organization-memberships/{_invited(w)}")


@recipe("POST", f"{_ORGS}/teams")
def _(w: World) -> Call:
    return Call(f"{ORG_PATH}/teams", doc("teams", name=w.name("team"), visibility="organization"))


@recipe("PATCH", f"{V2}/teams/{{team_id}}")
def _(w: World) -> Call:
    return Call(f"{V2}/teams/{_team(w)}", doc("teams", visibility="secret"))


@recipe("DELETE", f"{V2}/teams/{{team_id}}")
def _(w: World) -> Call:
    return Call(f"{V2}/teams/{_team(w)}")


@recipe("POST", f"{V2}/teams/{{team_id}}/relationships/users")
def _(w: World) -> Call:
    _, name, _ = _user(w)
    return Call(f"{V2}/teams/{_team(w)}/relationships/users", _members("users", name))


@recipe("DELETE", f"{V2}/teams/{{team_id}}/relationships/users")
def _(w: World) -> Call:
    _, name, _ = _user(w)
    team = _team(w)
    path = f"{V2}/teams/{team}/relationships/users"
    assert w.api.post(path, _members("users", name)).status == 204
    return Call(path, _members("users", name))


@recipe("POST", f"{V2}/teams/{{team_id}}/relationships/organization-memberships")
def _(w: World) -> Call:
    path = f"{V2}/teams/{_team(w)}/relationships/organization-memberships"
    return Call(path, _members("organization-memberships", _invited(w)))


@recipe("DELETE", f"{V2}/teams/{{team_id}}/relationships/organization-memberships")
def _(w: World) -> Call:
    path = f"{V2}/teams/{_team(w)}/relationships/organization-memberships"
    body = _members("organization-memberships", _invited(w))
    assert w.api.post(path, body).status == 204
    return Call(path, body)


@recipe("POST", f"{V2}/teams/{{team_id}}/authentication-token")
def _(w: World) -> Call:
    return Call(f"{V2}/teams/{_team(w)}/authentication-token")


@recipe("POST", f"{V2}/teams/{{team_id}}/authentication-tokens")
def _(w: World) -> Call:
    body = doc("authentication-tokens", description="ci")
    return Call(f"{V2}/teams/{_team(w)}/authentication-tokens", body)


@recipe("DELETE", f"{V2}/teams/{{team_id}}/authentication-token")
def _(w: World) -> Call:
    team = _team(w)
    w.ok(w.api.post(f"{V2}/teams/{team}/authentication-token"))
    return Call(f"{V2}/teams/{team}/authentication-token")


@recipe("POST", f"{V2}/users/{{user_id}}/authentication-tokens")
def _(w: World) -> Call:
    body = doc("authentication-tokens", description="laptop")
    return Call(f"{V2}/users/{w.admin_id}/authentication-tokens", body)


@recipe("DELETE", f"{V2}/authentication-tokens/{{token_id}}")
def _(w: World) -> Call:
    body = doc("authentication-tokens", description="laptop")
    made = w.ok(w.api.post(f"{V2}/users/{w.admin_id}/authentication-tokens", body))
    return Call(f"{V2}/authentication-tokens/{made['id']}")


@recipe("PATCH", f"{V2}/account/update")
def _(w: World) -> Call:
    user_id, name, token = _user(w)
    body = doc("users", username=name + "x", email=f"{name}@example.com")
    return Call(f"{V2}/account/update", body, token=token, actor=user_id)


def _password_user(w: World, password: str) -> tuple[str, str, str]:
    """A user with a password: (id, username, token)."""
    from chalicelib.accounts import passwords
    from chalicelib.accounts.users.store import UserModel

    user_id, name, token = _user(w, "pw")
    user = UserModel.get(user_id)
    user.update(actions=[UserModel.password_hash.set(passwords.hash_password(password))])
    return user_id, name, token


@recipe("PATCH", f"{V2}/account/password")
def _(w: World) -> Call:
    user_id, _, token = _password_user(w, "an old passphrase 1")
    attributes = {
        "current-password": "an old passphrase 1",
        "password": "a new passphrase 22",
        "password-confirmation": "a new passphrase 22",
    }
    return Call(f"{V2}/account/password", doc("users", **attributes), token=token, actor=user_id)


# ----- recipes: site administration, SCIM ---------------------------------------------------


def _admin_setting(path: str, **attributes: Any) -> Recipe:
    def make(w: World) -> Call:
        return Call(f"{ADMIN}/{path}", _settings(**attributes))

    return make


for _path, _attributes in (
    ("general-settings", {"api-rate-limit": 60}),
    ("cost-estimation-settings", {"aws-access-key-id": "AKIAWALK", "aws-secret-key": "s"}),
    ("customization-settings", {"support-email-address": "help@example.com"}),
    ("smtp-settings", {"sender": "noreply@example.com", "test-email-address": "ops@example.com"}),
    ("sms-settings", {"account-sid": "AC1"}),
    ("twilio-settings", {"from-number": "+15550100"}),
):
    recipe("PATCH", f"{ADMIN}/{_path}")(_admin_setting(_path, **_attributes))

for _method, _path in (
    ("POST", "sms-settings/verify"),
    ("PATCH", "sms-settings/verify"),
    ("POST", "twilio-settings/verify"),
    ("PATCH", "twilio-settings/verify"),
):
    recipe(_method, f"{ADMIN}/{_path}")(_admin_setting(_path, **{"test-number": "+15550123"}))


@recipe("PATCH", f"{ADMIN}/module-cache-settings")
def _(w: World) -> Call:
    namespaces = {"allowed-namespaces": [w.name("upstream")]}
    return Call(f"{ADMIN}/module-cache-settings", _settings(**namespaces))


@recipe("PATCH", f"{ADMIN}/saml-settings")
def _(w: World) -> Call:
    return Call(f"{ADMIN}/saml-settings", _settings(debug=True))


@recipe("POST", f"{ADMIN}/bundle-exports")
def _(w: World) -> Call:
    selection = {"modules": [{"address": f"{ORG}/{ORG}/walk/aws", "version": ">= 1.0"}]}
    return Call(
        f"{ADMIN}/bundle-exports", {"data": {"type": "bundle-exports", "attributes": selection}}
    )


@recipe("POST", f"{ADMIN}/bundle-imports")
def _(w: World) -> Call:
    return Call(f"{ADMIN}/bundle-imports")


@recipe("POST", f"{ADMIN}/bundle-imports/{{job_id}}/actions/start")
def _(w: World) -> Call:
    from chalicelib.core.data.aws import client
    from chalicelib.core.settings import get_settings

    job = w.ok(w.api.post(f"{ADMIN}/bundle-imports"))["id"]
    key = f"bundles/files/{job}.tar"
    client("s3").put_object(Bucket=get_settings().bucket, Key=key, Body=b"a bundle")
    return Call(f"{ADMIN}/bundle-imports/{job}/actions/start")


@recipe("POST", f"{ADMIN}/saml-settings/actions/revoke-old-certificate")
def _(w: World) -> Call:
    _scim(w)  # SAML on, with a certificate
    w.ok(w.api.patch(f"{ADMIN}/saml-settings", _settings(**{"idp-cert": w.name("cert")})))
    return Call(f"{ADMIN}/saml-settings/actions/revoke-old-certificate")


@recipe("PATCH", f"{ADMIN}/scim-settings")
def _(w: World) -> Call:
    _scim(w)
    return Call(f"{ADMIN}/scim-settings", _settings(**{"link-existing-users": True}))


@recipe("DELETE", f"{ADMIN}/scim-settings")
def _(w: World) -> Call:
    _scim(w)
    # SCIM comes back for the recipes after this one
    w.cache.pop("scim")
    return Call(f"{ADMIN}/scim-settings")


@recipe("POST", f"{ADMIN}/data-retention-policy-settings")
def _(w: World) -> Call:
    body = {
        "data": {
            "type": "data-retention-policy-delete-olders",
            "attributes": {"delete-older-than-n-days": 60},
        }
    }
    return Call(f"{ADMIN}/data-retention-policy-settings", body)


@recipe("DELETE", f"{ADMIN}/data-retention-policy-settings")
def _(w: World) -> Call:
    body = {
        "data": {
            "type": "data-retention-policy-delete-olders",
            "attributes": {"delete-older-than-n-days": 30},
        }
    }
    w.ok(w.api.post(f"{ADMIN}/data-retention-policy-settings", body))
    return Call(f"{ADMIN}/data-retention-policy-settings")


@recipe("POST", f"{ADMIN}/oidc-settings/actions/rotate-key")
def _(w: World) -> Call:
    # the first key is the registry's own (made when first read), not this change
    assert w.api.get("/.well-known/jwks").status == 200
    return Call(f"{ADMIN}/oidc-settings/actions/rotate-key")


@recipe("POST", f"{ADMIN}/oidc-settings/actions/trim-key")
def _(w: World) -> Call:
    assert w.api.post(f"{ADMIN}/oidc-settings/actions/rotate-key").status == 204
    return Call(f"{ADMIN}/oidc-settings/actions/trim-key", _settings())


@recipe("POST", f"{ADMIN}/scim-tokens")
def _(w: World) -> Call:
    _scim(w)
    return Call(f"{ADMIN}/scim-tokens", _settings(description="okta"))


@recipe("DELETE", f"{ADMIN}/scim-tokens/{{token_id}}")
def _(w: World) -> Call:
    _scim(w)
    made = w.ok(w.api.post(f"{ADMIN}/scim-tokens", _settings(description="spare")))
    return Call(f"{ADMIN}/scim-tokens/{made['id']}")


def _mapping(w: World, team: str, group: str | None = None) -> dict[str, Any]:
    if group is None:
        return {"data": {"type": "scim-group-mappings", "attributes": {"scim-sync-paused": True}}}
    return {"data": {"type": "scim-group-mappings", "attributes": {"scim-group-id": group}}}


@recipe("POST", f"{ADMIN}/teams/{{team_id}}/scim-group-mapping")
def _(w: World) -> Call:
    team = _team(w)
    return Call(f"{ADMIN}/teams/{team}/scim-group-mapping", _mapping(w, team, _scim_group(w)))


def _mapped_team(w: World) -> str:
    team = _team(w)
    w.ok(w.api.post(f"{ADMIN}/teams/{team}/scim-group-mapping", _mapping(w, team, _scim_group(w))))
    return team


@recipe("PATCH", f"{ADMIN}/teams/{{team_id}}/scim-group-mapping")
def _(w: World) -> Call:
    team = _mapped_team(w)
    return Call(f"{ADMIN}/teams/{team}/scim-group-mapping", _mapping(w, team))


@recipe("DELETE", f"{ADMIN}/teams/{{team_id}}/scim-group-mapping")
def _(w: World) -> Call:
    return Call(f"{ADMIN}/teams/{_mapped_team(w)}/scim-group-mapping")


def _user_action(action: str, first: str | None = None) -> Recipe:
    def make(w: World) -> Call:
        user_id, _, _ = _user(w)
        if first:
            w.ok(w.api.post(f"{ADMIN}/users/{user_id}/actions/{first}"))
        return Call(f"{ADMIN}/users/{user_id}/actions/{action}")

    return make


for _action, _first in (
    ("grant_admin", None),
    ("revoke_admin", "grant_admin"),
    ("grant_auditor", None),
    ("revoke_auditor", "grant_auditor"),
    ("suspend", None),
    ("unsuspend", "suspend"),
):
    recipe("POST", f"{ADMIN}/users/{{user_id}}/actions/{_action}")(_user_action(_action, _first))


PASSWORD = "a passphrase 333"


def _two_factor_user(w: World) -> tuple[str, str, list[str], str]:
    """A user with a password (``PASSWORD``) and two-factor on: (id, username, recovery
    codes, the TOTP secret)."""
    import pyotp

    from chalicelib.accounts import twofactor
    from chalicelib.accounts.users.store import UserModel

    user_id, name, _ = _password_user(w, PASSWORD)
    secret, _ = twofactor.begin(UserModel.get(user_id))
    code = pyotp.TOTP(secret, interval=twofactor.STEP_SECONDS).now()
    codes = twofactor.confirm(UserModel.get(user_id), code)
    assert codes
    return user_id, name, codes, secret


@recipe("POST", f"{ADMIN}/users/{{user_id}}/actions/disable_two_factor")
def _(w: World) -> Call:
    user_id, *_ = _two_factor_user(w)
    return Call(f"{ADMIN}/users/{user_id}/actions/disable_two_factor")


@recipe("DELETE", f"{ADMIN}/users/{{user_id}}")
def _(w: World) -> Call:
    user_id, _, _ = _user(w)
    return Call(f"{ADMIN}/users/{user_id}")


@recipe("PATCH", f"{ADMIN}/organizations/{{organization_name}}")
def _(w: World) -> Call:
    return Call(f"{ADMIN}/organizations/{ORG}", doc("organizations", **{"is-disabled": False}))


@recipe("DELETE", f"{ADMIN}/organizations/{{organization_name}}")
def _(w: World) -> Call:
    name = _other_org(w)
    return Call(f"{ADMIN}/organizations/{name}", organization=name)


def _external_id(w: World, name: str) -> str:
    return str(w.ok(w.api.get(f"{V2}/organizations/{name}"))["attributes"]["external-id"])


def _partnerships(w: World) -> Call:
    consumer = _external_id(w, _other_org(w))
    attributes = {"module-consuming-organization-ids": [consumer]}
    body = {"data": {"type": "module-partnerships", "attributes": attributes}}
    return Call(f"{ADMIN}/organizations/{ORG}/module-consumers", body)


recipe("PATCH", f"{ADMIN}/organizations/{{organization_name}}/module-consumers")(_partnerships)
recipe("PUT", f"{ADMIN}/organizations/{{organization_name}}/module-consumers")(_partnerships)


@recipe("PATCH", f"{ADMIN}/organizations/{{organization_name}}/relationships/module-consumers")
def _(w: World) -> Call:
    body = _members("organizations", _other_org(w))
    return Call(f"{ADMIN}/organizations/{ORG}/relationships/module-consumers", body)


@recipe("POST", f"{SCIM}/Users")
def _(w: World) -> Call:
    name = w.name("scimu")
    body = {"schemas": [SCIM_USER], "userName": name, "emails": [{"value": f"{name}@x.io"}]}
    return _scim_call(w, f"{SCIM}/Users", body)


@recipe("PUT", f"{SCIM}/Users/{{scim_id}}")
def _(w: World) -> Call:
    scim_id = _scim_user(w)
    body = {"schemas": [SCIM_USER], "userName": w.name("scimu"), "active": True}
    return _scim_call(w, f"{SCIM}/Users/{scim_id}", body)


@recipe("PATCH", f"{SCIM}/Users/{{scim_id}}")
def _(w: World) -> Call:
    body = {"schemas": [PATCH_OP], "Operations": [{"op": "replace", "value": {"active": False}}]}
    return _scim_call(w, f"{SCIM}/Users/{_scim_user(w)}", body)


@recipe("DELETE", f"{SCIM}/Users/{{scim_id}}")
def _(w: World) -> Call:
    return _scim_call(w, f"{SCIM}/Users/{_scim_user(w)}", None)


@recipe("POST", f"{SCIM}/Groups")
def _(w: World) -> Call:
    body = {"schemas": [SCIM_GROUP], "displayName": w.name("grp"), "members": []}
    return _scim_call(w, f"{SCIM}/Groups", body)


@recipe("PUT", f"{SCIM}/Groups/{{scim_id}}")
def _(w: World) -> Call:
    body = {"schemas": [SCIM_GROUP], "displayName": w.name("grp"), "members": []}
    return _scim_call(w, f"{SCIM}/Groups/{_scim_group(w)}", body)


@recipe("PATCH", f"{SCIM}/Groups/{{scim_id}}")
def _(w: World) -> Call:
    operation = {"op": "replace", "value": {"displayName": w.name("grp")}}
    body = {"schemas": [PATCH_OP], "Operations": [operation]}
    return _scim_call(w, f"{SCIM}/Groups/{_scim_group(w)}", body)


@recipe("DELETE", f"{SCIM}/Groups/{{scim_id}}")
def _(w: World) -> Call:
    return _scim_call(w, f"{SCIM}/Groups/{_scim_group(w)}", None)


# ----- recipes: modules, no-code modules, publishing ----------------------------------------


@recipe("POST", f"{_ORGS}/registry-modules")
def _(w: World) -> Call:
    return Call(MODULES, doc("registry-modules", name=w.name("mod"), provider="aws"))


@recipe("POST", f"{V2}/registry-modules")
def _(w: World) -> Call:
    # the older path: publishing from VCS
    return Call(f"{V2}/registry-modules", _from_monorepo(w))


def _from_monorepo(w: World) -> dict[str, Any]:
    """A new module from the stand-in host's monorepo (named, as a monorepo's must be)."""
    token_id = _oauth_client(w)["relationships"]["oauth-tokens"]["data"][0]["id"]
    repo = {
        "identifier": "acme/infra",
        "oauth-token-id": token_id,
        "tag-prefix": "net/",
        "source-directory": "modules/net",
    }
    return doc("registry-modules", name=w.name("mono"), provider="aws", **{"vcs-repo": repo})


@recipe("POST", f"{_ORGS}/registry-modules/vcs")
def _(w: World) -> Call:
    return Call(f"{MODULES}/vcs", _from_monorepo(w))


@recipe("PATCH", _MODULE)
def _(w: World) -> Call:
    body = doc("registry-modules", **{"test-config": {"tests-enabled": False}})
    return Call(_module_path(_module(w)), body)


@recipe("DELETE", _MODULE)
def _(w: World) -> Call:
    return Call(_module_path(_module(w, ("1.0.0",))))


@recipe("DELETE", f"{_ORGS}/registry-modules/{{registry_name}}/{{namespace}}/{{name}}")
def _(w: World) -> Call:
    return Call(_module_path(_module(w)).rsplit("/", 1)[0])


@recipe("POST", f"{V2}/registry-modules/actions/delete/{{organization_name}}/{{name}}")
def _(w: World) -> Call:
    name = _module(w)["attributes"]["name"]
    return Call(f"{V2}/registry-modules/actions/delete/{ORG}/{name}", {})


@recipe("POST", f"{V2}/registry-modules/actions/delete/{{organization_name}}/{{name}}/{{provider}}")
def _(w: World) -> Call:
    name = _module(w)["attributes"]["name"]
    return Call(f"{V2}/registry-modules/actions/delete/{ORG}/{name}/aws", {})


@recipe(
    "POST",
    f"{V2}/registry-modules/actions/delete/{{organization_name}}/{{name}}/{{provider}}/{{version}}",
)
def _(w: World) -> Call:
    name = _module(w, ("1.0.0", "1.1.0"))["attributes"]["name"]
    return Call(f"{V2}/registry-modules/actions/delete/{ORG}/{name}/aws/1.1.0", {})


@recipe("POST", f"{_MODULE}/versions")
def _(w: World) -> Call:
    body = doc("registry-module-versions", version="1.0.0")
    return Call(f"{_module_path(_module(w))}/versions", body)


@recipe("POST", f"{V2}/registry-modules/{{module_ref}}/{{name}}/{{provider}}/versions")
def _(w: World) -> Call:
    name = _module(w)["attributes"]["name"]
    body = doc("registry-module-versions", version="1.0.0")
    return Call(f"{V2}/registry-modules/{ORG}/{name}/aws/versions", body)


@recipe("PATCH", f"{_MODULE}/{{version}}")
def _(w: World) -> Call:
    path = _module_path(_module(w, ("1.0.0",), upload=True))
    body = doc("module-versions", deprecation={"deprecated-status": "Deprecated", "reason": "old"})
    return Call(f"{path}/1.0.0", body)


@recipe("DELETE", f"{_MODULE}/{{version}}")
def _(w: World) -> Call:
    return Call(f"{_module_path(_module(w, ('1.0.0', '1.1.0')))}/1.1.0")


@recipe("DELETE", f"{_MODULE}/{{version}}/{{after}}")
def _(w: World) -> Call:
    # terrasnek's ``<name>//<provider>/<version>``: the empty segment is dropped
    name = _module(w, ("1.0.0", "1.1.0"))["attributes"]["name"]
    return Call(f"{MODULES}/private/{ORG}/{name}//aws/1.1.0")


def _quarantined(w: World) -> str:
    """A module whose 1.0.0 the scan worker quarantined: its path."""
    from chalicelib.modules.store import ModuleVersionModel
    from tests.modules.scan_data import quarantine_by_scan

    module = _module(w, ("1.0.0",), upload=True)
    stored = next(v for v in ModuleVersionModel.query(module["id"]) if v.version == "1.0.0")
    assert quarantine_by_scan(stored, ["1 finding(s) at or above high (AVD-AWS-0086)"])
    return _module_path(module)


@recipe("POST", f"{_MODULE}/versions/{{version}}/actions/release")
def _(w: World) -> Call:
    body = doc("registry-module-version-releases", reason="reviewed: a website bucket")
    return Call(f"{_quarantined(w)}/versions/1.0.0/actions/release", body)


@recipe("POST", f"{V2}/registry-modules/{{module_ref}}/actions/regenerate-webhook-secret")
def _(w: World) -> Call:
    return Call(f"{V2}/registry-modules/{_vcs_module(w)['id']}/actions/regenerate-webhook-secret")


@recipe("POST", f"{V2}/registry-modules/{{module_ref}}/actions/resync")
def _(w: World) -> Call:
    return Call(f"{V2}/registry-modules/{_vcs_module(w)['id']}/actions/resync")


@recipe("POST", f"{V2}/registry-modules/{{module_ref}}/actions/retry")
def _(w: World) -> Call:
    return Call(f"{V2}/registry-modules/{_module(w, ('1.0.0',))['id']}/actions/retry")


@recipe("PATCH", f"{_ORGS}/registry-policy")
def _(w: World) -> Call:
    # a rule ignored: the policy stays inactive (no version is held for a scan after this)
    body = doc("registry-policies", **{"ignored-rules": [f"AVD-AWS-{next(w.counter):04d}"]})
    return Call(f"{ORG_PATH}/registry-policy", body)


def _no_code_doc(module_id: str, **attributes: Any) -> dict[str, Any]:
    relationships = {"registry-module": {"data": {"type": "registry-modules", "id": module_id}}}
    data = {"type": "no-code-modules", "attributes": attributes, "relationships": relationships}
    return {"data": data}


def _no_code(w: World) -> str:
    module = _module(w, ("1.0.0",), upload=True)
    made = w.api.post(f"{ORG_PATH}/no-code-modules", _no_code_doc(module["id"]))
    return str(w.ok(made)["id"])


@recipe("POST", f"{_ORGS}/no-code-modules")
def _(w: World) -> Call:
    module = _module(w, ("1.0.0",), upload=True)
    return Call(f"{ORG_PATH}/no-code-modules", _no_code_doc(module["id"]))


@recipe("PATCH", f"{V2}/no-code-modules/{{no_code_module_id}}")
def _(w: World) -> Call:
    body = {"data": {"type": "no-code-modules", "attributes": {"enabled": False}}}
    return Call(f"{V2}/no-code-modules/{_no_code(w)}", body)


@recipe("DELETE", f"{V2}/no-code-modules/{{no_code_module_id}}")
def _(w: World) -> Call:
    return Call(f"{V2}/no-code-modules/{_no_code(w)}")


@recipe("POST", f"{V2}/no-code-modules/{{no_code_module_id}}/workspaces")
def _(w: World) -> Call:
    body = doc("workspaces", name="app")
    return Call(f"{V2}/no-code-modules/{_no_code(w)}/workspaces", body)


@recipe("POST", f"{V2}/no-code-modules/{{no_code_module_id}}/workspaces/{{workspace_id}}/upgrade")
def _(w: World) -> Call:
    path = f"{V2}/no-code-modules/{_no_code(w)}/workspaces/{_workspace(w)['id']}/upgrade"
    return Call(path, doc("workspaces", name="app"))


@recipe("POST", "/webhooks/vcs/{webhook_id}")
def _(w: World) -> Call:
    module = _vcs_module(w)
    url = module["attributes"]["vcs-repo"]["webhook-url"]
    fresh = w.api.post(f"{V2}/registry-modules/{module['id']}/actions/regenerate-webhook-secret")
    secret = w.ok(fresh)["attributes"]["secret"]
    # a new tag at the host, and its push delivery
    tag, sha = f"v1.3.{next(w.counter)}", w.shas["net-main"]
    w.git.repos["acme/terraform-aws-net"].refs[f"refs/tags/{tag}".encode()] = sha.encode()
    body = json.dumps({"ref": f"refs/tags/{tag}", "after": sha})
    digest = hmac.new(secret.encode(), body.encode(), hashlib.sha256).hexdigest()
    headers = {"X-GitHub-Event": "push", "X-Hub-Signature-256": f"sha256={digest}"}
    path = "/webhooks/vcs/" + url.rsplit("/webhooks/vcs/", 1)[1]
    return Call(path, raw=body, token=None, content_type="application/json", headers=headers)


# ----- recipes: providers, GPG keys, the mirror ---------------------------------------------


@recipe("POST", f"{_ORGS}/registry-providers")
def _(w: World) -> Call:
    body = doc(
        "registry-providers", name=w.name("cloud"), namespace=ORG, **{"registry-name": "private"}
    )
    return Call(PROVIDERS, body)


@recipe("PATCH", _PROVIDER)
def _(w: World) -> Call:
    return Call(_provider(w), doc("registry-providers", **{"mirror-cached": False}))


@recipe("DELETE", _PROVIDER)
def _(w: World) -> Call:
    return Call(_provider(w, ("1.0.0",)))


@recipe("POST", f"{_PROVIDER}/versions")
def _(w: World) -> Call:
    attributes = {"version": "1.0.0", "key-id": _key_id(w).lower(), "protocols": ["5.0"]}
    return Call(f"{_provider(w)}/versions", doc("registry-provider-versions", **attributes))


@recipe("DELETE", f"{_PROVIDER}/versions/{{version}}")
def _(w: World) -> Call:
    return Call(f"{_provider(w, ('1.0.0', '1.1.0'))}/versions/1.1.0")


@recipe("POST", f"{_PROVIDER}/versions/{{version}}/platforms")
def _(w: World) -> Call:
    path = _provider(w, ("1.0.0",))
    return Call(f"{path}/versions/1.0.0/platforms", _platform(path.rsplit("/", 1)[1], "1.0.0"))


@recipe("DELETE", _PLATFORM)
def _(w: World) -> Call:
    return Call(f"{_provider(w, ('1.0.0',), platform=True)}/versions/1.0.0/platforms/linux/amd64")


@recipe("POST", f"{_PLATFORM}/actions/retry")
def _(w: World) -> Call:
    return Call(f"{_failed_platform(w)}/versions/1.0.0/platforms/linux/amd64/actions/retry")


def _failed_platform(w: World) -> str:
    """A provider whose 1.0.0 linux/amd64 archive does not match its shasum (its check
    failed, so it may be retried): its path."""
    from tests.providers.helpers import arrive
    from tests.support.provider_files import shasums

    path, signer = _provider(w), _signer(w)
    attributes = {"version": "1.0.0", "key-id": _key_id(w).lower(), "protocols": ["5.0"]}
    version = w.api.post(f"{path}/versions", doc("registry-provider-versions", **attributes))
    links = w.ok(version)["links"]
    name = path.rsplit("/", 1)[1]
    made = w.api.post(f"{path}/versions/1.0.0/platforms", _platform(name, "1.0.0"))
    sums = shasums({f"terraform-provider-{name}_1.0.0_linux_amd64.zip": b"x"})
    arrive(links["shasums-upload"], sums)
    arrive(links["shasums-sig-upload"], signer.sign(sums))
    arrive(w.ok(made)["links"]["provider-binary-upload"], b"not the archive its shasum names")
    return path


@recipe("POST", KEYS)
def _(w: World) -> Call:
    from tests.support.provider_files import new_signing_key

    signer = w.once("second-signer", new_signing_key)
    return Call(KEYS, doc("gpg-keys", namespace=ORG, **{"ascii-armor": signer.armor}))


@recipe("PATCH", _KEY)
def _(w: World) -> Call:
    # a key of its own, moved to another namespace (the one attribute a PATCH changes)
    from tests.support.provider_files import new_signing_key

    signer = w.once("fourth-signer", new_signing_key)
    made = w.api.post(KEYS, doc("gpg-keys", namespace=ORG, **{"ascii-armor": signer.armor}))
    path = f"{KEYS}/{ORG}/{w.ok(made)['attributes']['key-id']}"
    other = _other_org(w)
    return Call(path, doc("gpg-keys", namespace=other), organization=other)


@recipe("DELETE", _KEY)
def _(w: World) -> Call:
    from tests.support.provider_files import new_signing_key

    signer = w.once("third-signer", new_signing_key)
    made = w.api.post(KEYS, doc("gpg-keys", namespace=ORG, **{"ascii-armor": signer.armor}))
    return Call(f"{KEYS}/{ORG}/{w.ok(made)['attributes']['key-id']}")


@recipe("PUT", "/api/registry/mirror/v1/seed")
def _(w: World) -> Call:
    from tests.support.provider_files import expected_h1, provider_zip

    root = "registry.terraform.io/hashicorp/fake"
    archive = provider_zip("fake", "1.0.0")
    name = "terraform-provider-fake_1.0.0_linux_amd64.zip"
    files: dict[str, Any] = {
        f"{root}/index.json": json.dumps({"versions": {"1.0.0": {}}}),
        f"{root}/{name}": archive,
        f"{root}/1.0.0.json": json.dumps(
            {"archives": {"linux_amd64": {"url": name, "hashes": [expected_h1(archive)]}}}
        ),
    }
    return Call(
        "/api/registry/mirror/v1/seed", raw=tar_gz(files), content_type="application/octet-stream"
    )


@recipe("POST", f"{ADMIN}/module-cache/actions/seed")
def _(w: World) -> Call:
    import os

    from chalicelib.core.settings import get_settings
    from chalicelib.modules.cache import settings as cache_settings
    from tests.support.mirror_upstream import Upstream

    def upstream() -> Upstream:
        server = Upstream({})
        server.files["/m.tar.gz"] = tar_gz({"main.tf": 'variable "x" {}\n'})
        server.modules["seeded-upstream/net/aws"] = {"1.0.0": "/m.tar.gz"}
        return server

    server = w.once("module-cache-upstream", upstream)
    # The world's setting (a dead port) is put back when the world ends.
    os.environ["REGISTRY_MIRROR_UPSTREAM_URL"] = server.url
    get_settings.cache_clear()
    cache_settings.CacheSettingsModel(
        cache_settings.KEY, allowed_namespaces=["seeded-upstream"]
    ).save()
    cache_settings.forget()
    attributes = {
        "namespace": "seeded-upstream",
        "name": "net",
        "provider": "aws",
        "version-constraint": "1.0.0",
    }
    return Call(f"{ADMIN}/module-cache/actions/seed", doc("module-cache-seeds", **attributes))


# ----- recipes: VCS connections, projects, workspaces, tags ---------------------------------


@recipe("POST", f"{_ORGS}/oauth-clients")
def _(w: World) -> Call:
    from tests.support.vcs_git_server import TOKEN

    attributes = {
        "service-provider": "github_enterprise",
        "http-url": w.git.url,
        "api-url": w.git.url + "/api/v3",
        "oauth-token-string": TOKEN,
    }
    return Call(f"{ORG_PATH}/oauth-clients", doc("oauth-clients", **attributes))


@recipe("PATCH", f"{V2}/oauth-clients/{{client_id}}")
def _(w: World) -> Call:
    return Call(f"{V2}/oauth-clients/{_oauth_client(w)['id']}", doc("oauth-clients", name="ghe"))


@recipe("DELETE", f"{V2}/oauth-clients/{{client_id}}")
def _(w: World) -> Call:
    return Call(f"{V2}/oauth-clients/{_oauth_client(w)['id']}")


def _oauth_token(w: World) -> str:
    return str(_oauth_client(w)["relationships"]["oauth-tokens"]["data"][0]["id"])


@recipe("PATCH", f"{V2}/oauth-tokens/{{token_id}}")
def _(w: World) -> Call:
    body = doc("oauth-tokens", **{"ssh-key": "-----BEGIN OPENSSH PRIVATE KEY-----\nx\n"})
    return Call(f"{V2}/oauth-tokens/{_oauth_token(w)}", body)


@recipe("DELETE", f"{V2}/oauth-tokens/{{token_id}}")
def _(w: World) -> Call:
    return Call(f"{V2}/oauth-tokens/{_oauth_token(w)}")


@recipe("POST", f"{_ORGS}/projects")
def _(w: World) -> Call:
    return Call(f"{ORG_PATH}/projects", doc("projects", name=w.name("proj")))


@recipe("PATCH", f"{V2}/projects/{{project_id}}")
def _(w: World) -> Call:
    return Call(f"{V2}/projects/{_project(w)}", doc("projects", description="apps"))


@recipe("DELETE", f"{V2}/projects/{{project_id}}")
def _(w: World) -> Call:
    return Call(f"{V2}/projects/{_project(w)}")


@recipe("POST", f"{V2}/projects/{{project_id}}/relationships/workspaces")
def _(w: World) -> Call:
    body = _members("workspaces", _workspace(w)["id"])
    return Call(f"{V2}/projects/{_project(w)}/relationships/workspaces", body)


def _bindings() -> dict[str, Any]:
    return {"data": [{"type": "tag-bindings", "attributes": {"key": "env", "value": "prod"}}]}


@recipe("PATCH", f"{V2}/projects/{{project_id}}/tag-bindings")
def _(w: World) -> Call:
    return Call(f"{V2}/projects/{_project(w)}/tag-bindings", _bindings())


@recipe("POST", f"{_ORGS}/workspaces")
def _(w: World) -> Call:
    return Call(f"{ORG_PATH}/workspaces", doc("workspaces", name=w.name("ws")))


@recipe("PATCH", f"{_ORGS}/workspaces/{{workspace_name}}")
def _(w: World) -> Call:
    name = _workspace(w)["attributes"]["name"]
    return Call(f"{ORG_PATH}/workspaces/{name}", doc("workspaces", description="apps"))


@recipe("PATCH", f"{V2}/workspaces/{{workspace_id}}")
def _(w: World) -> Call:
    return Call(f"{V2}/workspaces/{_workspace(w)['id']}", doc("workspaces", description="apps"))


@recipe("DELETE", f"{_ORGS}/workspaces/{{workspace_name}}")
def _(w: World) -> Call:
    return Call(f"{ORG_PATH}/workspaces/{_workspace(w)['attributes']['name']}")


@recipe("DELETE", f"{V2}/workspaces/{{workspace_id}}")
def _(w: World) -> Call:
    return Call(f"{V2}/workspaces/{_workspace(w)['id']}")


@recipe("POST", f"{_ORGS}/workspaces/{{workspace_name}}/actions/safe-delete")
def _(w: World) -> Call:
    name = _workspace(w)["attributes"]["name"]
    return Call(f"{ORG_PATH}/workspaces/{name}/actions/safe-delete")


@recipe("POST", f"{V2}/workspaces/{{workspace_id}}/actions/safe-delete")
def _(w: World) -> Call:
    return Call(f"{V2}/workspaces/{_workspace(w)['id']}/actions/safe-delete")


@recipe("PATCH", f"{V2}/workspaces/{{workspace_id}}/tag-bindings")
def _(w: World) -> Call:
    return Call(f"{V2}/workspaces/{_workspace(w)['id']}/tag-bindings", _bindings())


def _tags(*names: str) -> dict[str, Any]:
    return {"data": [{"type": "tags", "attributes": {"name": name}} for name in names]}


@recipe("POST", f"{V2}/workspaces/{{workspace_id}}/relationships/tags")
def _(w: World) -> Call:
    return Call(f"{V2}/workspaces/{_workspace(w)['id']}/relationships/tags", _tags("blue"))


@recipe("DELETE", f"{V2}/workspaces/{{workspace_id}}/relationships/tags")
def _(w: World) -> Call:
    path = f"{V2}/workspaces/{_workspace(w)['id']}/relationships/tags"
    assert w.api.post(path, _tags("green")).status == 204
    return Call(path, _tags("green"))


def _tag(w: World) -> str:
    """A tag of the organization (on a workspace of its own): its id."""
    name = w.name("tag")
    path = f"{V2}/workspaces/{_workspace(w)['id']}/relationships/tags"
    assert w.api.post(path, _tags(name)).status == 204
    found = w.ok(w.api.get(f"{ORG_PATH}/tags?q={name}"))
    return str(next(t["id"] for t in found if t["attributes"]["name"] == name))


@recipe("POST", f"{V2}/tags/{{tag_id}}/relationships/workspaces")
def _(w: World) -> Call:
    body = _members("workspaces", _workspace(w)["id"])
    return Call(f"{V2}/tags/{_tag(w)}/relationships/workspaces", body)


@recipe("DELETE", f"{_ORGS}/tags")
def _(w: World) -> Call:
    return Call(f"{ORG_PATH}/tags", _members("tags", _tag(w)))


# ----- recipes: notification configurations ------------------------------------------------

_NOTIFICATIONS = f"{V2}/notification-configurations"


def _notification_configuration(world: World) -> str:
    attributes = {
        "name": world.name("hook"),
        "destination-type": "generic",
        "url": "http://127.0.0.1:9/hook",
        "token": "hmac-key",
    }
    body = doc("notification-configurations", **attributes)
    made = world.api.post(f"{ORG_PATH}/notification-configurations", body)
    return str(world.ok(made)["id"])


@recipe("POST", f"{_ORGS}/notification-configurations")
def _(w: World) -> Call:
    attributes = {"name": w.name("hook"), "destination-type": "email", "enabled": True}
    return Call(
        f"{ORG_PATH}/notification-configurations", doc("notification-configurations", **attributes)
    )


@recipe("PATCH", f"{V2}/notification-configurations/{{notification_configuration_id}}")
def _(w: World) -> Call:
    body = doc(
        "notification-configurations", enabled=True, triggers=["registry-module-version:revoked"]
    )
    return Call(f"{_NOTIFICATIONS}/{_notification_configuration(w)}", body)


@recipe("DELETE", f"{V2}/notification-configurations/{{notification_configuration_id}}")
def _(w: World) -> Call:
    return Call(f"{_NOTIFICATIONS}/{_notification_configuration(w)}")


@recipe(
    "POST", f"{V2}/notification-configurations/{{notification_configuration_id}}/actions/verify"
)
def _(w: World) -> Call:
    return Call(f"{_NOTIFICATIONS}/{_notification_configuration(w)}/actions/verify")


# ----- recipes: the web's pages --------------------------------------------------------------


def _signed_in(w: World, token: str) -> tuple[Browser, str]:
    """A browser of the web app signed in with ``token``, and its CSRF token."""
    browser = Browser(w.clients["chalicelib.entry.api.web"])
    assert browser.sign_in(token).status_code == 303
    return browser, browser.csrf("/app/organizations")


def _page(path: str, **fields: Any) -> Recipe:
    """A site admin's (or owner's) form with nothing to prepare."""

    def make(w: World) -> Call:
        return Call(path, form=w.form(**fields))

    return make


recipe("POST", "/app/admin/oidc/rotate")(_page("/app/admin/oidc/rotate"))
recipe("POST", "/app/admin/settings/{area}")(
    _page("/app/admin/settings/customization", footer="Operated by the platform team")
)
recipe("POST", "/app/admin/settings/smtp/test-mail")(
    _page("/app/admin/settings/smtp/test-mail", recipient="ops@example.com")
)
recipe("POST", "/app/admin/settings/sms/test-message")(
    _page("/app/admin/settings/sms/test-message", **{"test-number": "+15550123"})
)
recipe("POST", _APP_ORG + "/settings/token")(_page(f"/app/{ORG}/settings/token", description="ci"))
recipe("POST", _APP_ORG + "/members/invite")(
    _page(f"/app/{ORG}/members/invite", email="invitee@example.com")
)


recipe("POST", "/app/admin/module-cache")(
    _page(
        "/app/admin/module-cache",
        **{"allowed-namespaces": "terraform-aws-modules", "allowed-source-hosts": "github.com"},
    )
)


@recipe("POST", "/app/admin/oidc/trim")
def _(w: World) -> Call:
    assert w.api.post(f"{ADMIN}/oidc-settings/actions/rotate-key").status == 204
    return Call("/app/admin/oidc/trim", form=w.form())


@recipe("POST", "/app/admin/organizations/{name}/module-sharing")
def _(w: World) -> Call:
    path = f"/app/admin/organizations/{ORG}/module-sharing"
    return Call(path, form=w.form(consumers=_other_org(w)))


@recipe("POST", "/app/admin/scim")
def _(w: World) -> Call:
    _scim(w)
    return Call("/app/admin/scim", form=w.form(enabled="on", **{"link-existing-users": "on"}))


@recipe("POST", "/app/admin/scim/tokens")
def _(w: World) -> Call:
    _scim(w)
    return Call("/app/admin/scim/tokens", form=w.form(description="okta", days="90"))


@recipe("POST", "/app/admin/scim/tokens/{token_id}/revoke")
def _(w: World) -> Call:
    _scim(w)
    made = w.ok(w.api.post(f"{ADMIN}/scim-tokens", _settings(description="spare")))
    return Call(f"/app/admin/scim/tokens/{made['id']}/revoke", form=w.form())


@recipe("POST", "/app/admin/settings/saml/revoke-old-certificate")
def _(w: World) -> Call:
    _scim(w)  # SAML on, with a certificate
    w.ok(w.api.patch(f"{ADMIN}/saml-settings", _settings(**{"idp-cert": w.name("cert")})))
    return Call("/app/admin/settings/saml/revoke-old-certificate", form=w.form())


@recipe("POST", "/app/admin/users/{user_id}/{action}")
def _(w: World) -> Call:
    user_id, _, _ = _user(w)
    return Call(f"/app/admin/users/{user_id}/suspend", form=w.form())


@recipe("POST", _APP_ORG + "/members/{membership_id}/remove")
def _(w: World) -> Call:
    return Call(f"/app/{ORG}/members/{_invited(w)}/remove", form=w.form())


@recipe("POST", _APP_ORG + "/teams")
def _(w: World) -> Call:
    form = w.form(name=w.name("team"), visibility="organization", access="manage-modules")
    return Call(f"/app/{ORG}/teams", form=form)


@recipe("POST", _APP_ORG + "/teams/{team_id}/access")
def _(w: World) -> Call:
    form = w.form(visibility="secret", access="manage-providers")
    return Call(f"/app/{ORG}/teams/{_team(w)}/access", form=form)


@recipe("POST", _APP_ORG + "/teams/{team_id}/delete")
def _(w: World) -> Call:
    return Call(f"/app/{ORG}/teams/{_team(w)}/delete", form=w.form())


@recipe("POST", _APP_ORG + "/teams/{team_id}/members")
def _(w: World) -> Call:
    _, name, _ = _user(w)
    return Call(f"/app/{ORG}/teams/{_team(w)}/members", form=w.form(username=name))


@recipe("POST", _APP_ORG + "/teams/{team_id}/token")
def _(w: World) -> Call:
    return Call(f"/app/{ORG}/teams/{_team(w)}/token", form=w.form(description="ci"))


@recipe("POST", _APP_ORG + "/teams/{team_id}/token/revoke")
def _(w: World) -> Call:
    team = _team(w)
    w.ok(w.api.post(f"{V2}/teams/{team}/authentication-token"))
    return Call(f"/app/{ORG}/teams/{team}/token/revoke", form=w.form())


@recipe("POST", _APP_ORG + "/settings/registry-policy")
def _(w: World) -> Call:
    rule = f"AVD-AWS-{next(w.counter):04d}"  # the policy stays inactive
    form = w.form(block_severity="none", ignored_rules=rule, require_readme="")
    return Call(f"/app/{ORG}/settings/registry-policy", form=form)


@recipe("POST", _APP_ORG + "/settings/token/revoke")
def _(w: World) -> Call:
    w.ok(w.api.post(f"{ORG_PATH}/authentication-token"))
    return Call(f"/app/{ORG}/settings/token/revoke", form=w.form())


def _publish_path(module: dict) -> str:
    return f"/app/{ORG}/registry/publish/private/{ORG}/{module['attributes']['name']}/aws"


@recipe("POST", _APP_ORG + "/registry/publish")
def _(w: World) -> Call:
    form = w.form(name=w.name("mod"), provider="aws")
    return Call(f"/app/{ORG}/registry/publish", form=form)


@recipe("POST", _APP_ORG + "/registry/publish/vcs")
def _(w: World) -> Call:
    form = w.form(oauth_token_id=_oauth_token(w), identifier="acme/terraform-aws-untagged")
    return Call(f"/app/{ORG}/registry/publish/vcs", form=form)


@recipe("POST", _PUBLISH + "/versions")
def _(w: World) -> Call:
    return Call(f"{_publish_path(_module(w))}/versions", form=w.form(version="1.0.0"))


@recipe("POST", _PUBLISH + "/retry")
def _(w: World) -> Call:
    return Call(f"{_publish_path(_module(w, ('1.0.0',)))}/retry", form=w.form())


@recipe("POST", _PUBLISH + "/delete")
def _(w: World) -> Call:
    return Call(f"{_publish_path(_module(w, ('1.0.0',)))}/delete", form=w.form())


@recipe("POST", _PUBLISH + "/{version}/{action}")
def _(w: World) -> Call:
    path = _publish_path(_module(w, ("1.0.0",), upload=True))
    return Call(f"{path}/1.0.0/deprecate", form=w.form(reason="superseded by 2.0.0"))


@recipe(
    "POST",
    _APP_ORG
    + "/registry/providers/private/{namespace}/{name}/{version}/platforms/{os}/{arch}/retry",
)
def _(w: World) -> Call:
    path = _failed_platform(w)
    name = path.rsplit("/", 1)[1]
    page = f"/app/{ORG}/registry/providers/private/{ORG}/{name}/1.0.0/platforms/linux/amd64/retry"
    return Call(page, form=w.form())


# ----- recipes: the signed-in user's own account pages ---------------------------------------


def _own(w: World, path: str, user: tuple[str, str, str], **fields: Any) -> Call:
    """A form the user (id, username, token) posts in a browser signed in as them."""
    browser, csrf = _signed_in(w, user[2])
    return Call(path, form={"csrf_token": csrf, **fields}, browser=browser, actor=user[0])


@recipe("POST", "/app/account/profile")
def _(w: World) -> Call:
    user = _user(w)
    return _own(
        w, "/app/account/profile", user, username=user[1] + "x", email=f"{user[1]}@example.com"
    )


@recipe("POST", "/app/account/password")
def _(w: World) -> Call:
    user = _password_user(w, PASSWORD)
    fields = {"current_password": PASSWORD, "password": "a new passphrase 4444"}
    return _own(w, "/app/account/password", user, password_again=fields["password"], **fields)


@recipe("POST", "/app/account/tokens")
def _(w: World) -> Call:
    return _own(w, "/app/account/tokens", _user(w), description="laptop", expires_on="")


@recipe("POST", "/app/account/tokens/{token_id}/revoke")
def _(w: World) -> Call:
    from chalicelib.core.auth import mint_token

    user = _user(w)
    token, _ = mint_token("user", user[0], description="old laptop")
    return _own(w, f"/app/account/tokens/{token.id}/revoke", user)


@recipe("POST", "/app/account/two-factor/setup")
def _(w: World) -> Call:
    return _own(w, "/app/account/two-factor/setup", _user(w))


@recipe("POST", "/app/account/two-factor/confirm")
def _(w: World) -> Call:
    import pyotp

    from chalicelib.accounts import twofactor
    from chalicelib.accounts.users.store import UserModel

    user = _user(w)
    call = _own(w, "/app/account/two-factor/confirm", user)
    secret, _ = twofactor.begin(UserModel.get(user[0]))
    assert call.form is not None
    call.form["code"] = pyotp.TOTP(secret, interval=twofactor.STEP_SECONDS).now()
    return call


@recipe("POST", "/app/account/two-factor/disable")
def _(w: World) -> Call:
    from chalicelib.core.auth import mint_token

    user_id, name, _, _ = _two_factor_user(w)
    token = mint_token("user", user_id)[1]
    return _own(w, "/app/account/two-factor/disable", (user_id, name, token), password=PASSWORD)


# ----- recipes: signing in and out, links that carry their own secret, terraform login -------


def _fresh_browser(w: World) -> tuple[Browser, str]:
    """A browser of the web app with no session, and the sign-in form's CSRF token."""
    browser = Browser(w.clients["chalicelib.entry.api.web"])
    return browser, browser.csrf()


@recipe("POST", "/app/sign-in")
def _(w: World) -> Call:
    user_id, _, token = _user(w)
    browser, csrf = _fresh_browser(w)
    form = {"csrf_token": csrf, "token": token, "next": ""}
    return Call("/app/sign-in", form=form, browser=browser, actor=user_id)


@recipe("POST", "/app/sign-in/password")
def _(w: World) -> Call:
    user_id, name, _ = _password_user(w, PASSWORD)
    browser, csrf = _fresh_browser(w)
    form = {"csrf_token": csrf, "login": name, "password": PASSWORD, "next": ""}
    return Call("/app/sign-in/password", form=form, browser=browser, actor=user_id)


@recipe("POST", "/app/sign-in/two-factor")
def _(w: World) -> Call:
    # the password step (a prepared request), then the code (a recovery code: no clock)
    user_id, name, codes, _ = _two_factor_user(w)
    browser, csrf = _fresh_browser(w)
    form = {"csrf_token": csrf, "login": name, "password": PASSWORD, "next": ""}
    first = browser.post("/app/sign-in/password", form)
    assert first.status_code == 303 and "two-factor" in first.headers["Location"], first.text
    form = {"csrf_token": browser.csrf(), "code": codes[0]}
    return Call("/app/sign-in/two-factor", form=form, browser=browser, actor=user_id)


@recipe("POST", "/app/sign-out")
def _(w: World) -> Call:
    user_id, _, token = _user(w)
    browser, csrf = _signed_in(w, token)
    return Call("/app/sign-out", form={"csrf_token": csrf}, browser=browser, actor=user_id)


@recipe("POST", "/app/password-reset")
def _(w: World) -> Call:
    _, name, _ = _password_user(w, PASSWORD)
    browser, csrf = _fresh_browser(w)
    return Call("/app/password-reset", form={"csrf_token": csrf, "login": name}, browser=browser)


@recipe("POST", "/app/password-reset/{token}")
def _(w: World) -> Call:
    import secrets
    from datetime import timedelta

    from chalicelib.accounts.users.store import UserModel
    from chalicelib.core.auth import hash_token
    from chalicelib.core.data.ids import now

    user_id, _, _ = _password_user(w, PASSWORD)
    secret = secrets.token_urlsafe(32)  # the mailed link's (resets.deliver, the worker)
    UserModel.get(user_id).update(
        actions=[
            UserModel.reset_hash.set(hash_token(secret)),
            UserModel.reset_expires_at.set(now() + timedelta(minutes=30)),
        ]
    )
    browser, csrf = _fresh_browser(w)
    fresh = "a new passphrase 55555"
    form = {"csrf_token": csrf, "password": fresh, "password_again": fresh}
    path = f"/app/password-reset/{user_id}.{secret}"
    return Call(path, form=form, browser=browser, actor=user_id)


@recipe("POST", "/app/invitations/{token}")
def _(w: World) -> Call:
    from chalicelib.accounts import memberships
    from chalicelib.core.auth import Principal

    user = _user(w)
    admin = Principal("user", w.admin_id, "at-walk")
    # the mailed link (SMTP delivers it; the site admin is shown it when mail cannot)
    memberships.invite(admin, ORG, f"{user[1]}@example.com", [])
    token = w.mailed_link(f"{user[1]}@example.com", "/app/invitations/")
    return _own(w, f"/app/invitations/{token}", user)


@recipe("POST", "/app/account/confirm-email/{user_id}/{secret}")
def _(w: World) -> Call:
    import secrets
    from datetime import timedelta

    from chalicelib.accounts.users import store as users_store
    from chalicelib.accounts.users.store import UserModel
    from chalicelib.core.auth import hash_token
    from chalicelib.core.data.ids import now

    user_id, name, _ = _user(w)
    secret = secrets.token_urlsafe(32)  # the mailed link's (account.update)
    expires = now() + timedelta(hours=1)
    user = UserModel.get(user_id)
    users_store.start_email_change(user, f"{name}.new@example.com", hash_token(secret), expires)
    browser, csrf = _fresh_browser(w)
    path = f"/app/account/confirm-email/{user_id}/{secret}"
    return Call(path, form={"csrf_token": csrf}, browser=browser, actor=user_id)


def _terraform_login(w: World) -> Any:
    from tests.web.test_login import Login

    return Login()


@recipe("POST", "/app/oauth/authorize")
def _(w: World) -> Call:
    from tests.web.test_login import hidden_fields

    login = _terraform_login(w)
    page = w.browser.get(login.url)
    assert page.status_code == 200, page.text
    return Call("/app/oauth/authorize", form={**hidden_fields(page.text), "decision": "approve"})


@recipe("POST", "/oauth/token")
def _(w: World) -> Call:
    from urllib.parse import urlencode

    from tests.web.test_login import approve, code_from, token_request

    login = _terraform_login(w)
    code = code_from(approve(w.browser, login), login)
    raw = urlencode(token_request(login, code))
    content_type = "application/x-www-form-urlencoded"
    return Call("/oauth/token", raw=raw, token=None, content_type=content_type, actor=w.admin_id)


@recipe("POST", "/users/saml/auth")
def _(w: World) -> Call:
    from tests.saml.helpers import Claims, configure

    configure(w.api)
    user_id, name, _ = _user(w)
    posted = Claims(username=name, name_id=f"{name}@example.com").posted()
    browser = Browser(w.clients["chalicelib.entry.api.web"])
    headers = {"Sec-Fetch-Site": "cross-site"}
    return Call(
        "/users/saml/auth",
        form={"SAMLResponse": posted},
        browser=browser,
        headers=headers,
        actor=user_id,
    )


# ----- hostile input --------------------------------------------------------------------------


def test_a_change_made_with_a_500_kb_user_agent_succeeds_and_its_event_carries_it_cut(
    world: World,
) -> None:
    """Through the route, not only the event's own bounds: the change is made, its one event
    is written (a 500 KB field would pass DynamoDB's 400 KB item) with the user agent cut to
    its bound, and the request's id and source address beside it."""
    from chalicelib.core.audit.events import CUT, MAX_USER_AGENT

    agent = "Mozilla/5.0 " + "x" * 500_000
    before = _events()
    rule = f"AVD-AWS-{next(world.counter):04d}"
    body = doc("registry-policies", **{"ignored-rules": [rule]})
    reply = world.api.patch(f"{ORG_PATH}/registry-policy", body, headers={"User-Agent": agent})
    assert reply.status == 200, reply.json
    assert reply.data["attributes"]["ignored-rules"] == [rule]
    new = [event for key, event in _events().items() if key not in before]
    assert len(new) == 1, new
    request = new[0]["request"]
    assert request["user_agent"] == agent[: MAX_USER_AGENT - len(CUT)] + CUT
    assert request["id"] and request["source_address"]
    assert len(json.dumps(new[0])) < 4096
