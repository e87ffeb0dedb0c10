"""Every route of every function declares who may call it, and the wrong callers are refused.

The walk imports each entry module under ``chalicelib/entry`` (the apps that are deployed, not
only ``app.py``), takes every route of its Chalice app and checks:

* the route declared its caller (``route(..., auth=...)`` / ``page(..., auth=...)``): a route
  registered without one fails here, and a public route is a decision listed in ``PUBLIC``;
* an anonymous caller is refused as declared (401 for a token, a redirect to the sign-in page
  for a page, the SCIM 401, the webhook's own 401/404);
* an owner of another organization and a member of a team with no access are refused on the
  victim organization's resources (their ids in the path): 404 for site administration, 401
  for SCIM, and a 4xx (never a 2xx that reveals the victim's data, never a 5xx) elsewhere; the
  member may read the organization (members read), so only their writes must be refused;
* no refused request writes anything (every DynamoDB item before and after);
* each entry module wires what its routes need (the mail sender of invitations and resets).

The fixtures are built once for the module: the walk is a few hundred requests in-process.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib
import json
import pkgutil
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from moto.core import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends

import chalicelib.entry
from chalicelib.accounts import memberships
from tests.conftest import ADMIN_TOKEN, Api, Provisioned, doc, forget_cached_state
from tests.support.web_browser import Browser

ROOT = Path(__file__).resolve().parent.parent

# Every route anyone may call, as (method, path). Adding a public route is a decision: list it
# here. (Sign-in, links that carry their own secret, discovery documents, static assets.)
PUBLIC = {
    ("GET", "/"),
    ("GET", "/.well-known/jwks"),
    ("GET", "/.well-known/terraform.json"),
    ("GET", "/api/v2/account/confirm-email/{user_id}/{secret}"),
    ("GET", "/api/v2/openapi.json"),
    ("GET", "/api/v2/ping"),
    # The public keys that verify provenance: a verifier may hold no token.
    ("GET", "/api/registry/v1/signing-keys"),
    ("GET", "/app/account/confirm-email/{user_id}/{secret}"),
    ("POST", "/app/account/confirm-email/{user_id}/{secret}"),
    ("GET", "/app/invitations/{token}"),
    ("POST", "/app/invitations/{token}"),
    # terraform login: the request is checked first (400), then the consent asks to sign in.
    ("GET", "/app/oauth/authorize"),
    ("POST", "/app/oauth/authorize"),
    ("GET", "/app/password-reset"),
    ("POST", "/app/password-reset"),
    ("GET", "/app/password-reset/{token}"),
    ("POST", "/app/password-reset/{token}"),
    ("GET", "/app/sign-in"),
    ("POST", "/app/sign-in"),
    ("POST", "/app/sign-in/password"),
    ("GET", "/app/sign-in/sso"),
    # Shows a SAML sign-in's record to that session's user only (a 404 page for anyone else).
    ("GET", "/app/sign-in/sso/debug"),
    ("GET", "/app/sign-in/two-factor"),
    ("POST", "/app/sign-in/two-factor"),
    ("POST", "/app/sign-out"),
    ("GET", "/app/static/{asset}"),
    ("GET", "/favicon.ico"),  # the site's icon, as the static assets
    # The publishing page's poll: JSON ``signed-out`` without a session, else as the page.
    (
        "GET",
        "/app/{organization}/registry/publish/{registry}/{namespace}/{name}/{provider}/"
        "{version}/status",
    ),
    ("POST", "/oauth/token"),
    ("POST", "/users/saml/auth"),
    ("GET", "/users/saml/metadata"),
    ("GET", "/users/saml/slo"),
}
PAGE_KINDS = {"signed-in", "site-admin"}
# ``audit-trail``: the organization's audit trail (its organization token or audit trail
# token); ``site-auditor``: the site's audit trail (site admins and site auditors).
API_KINDS = {"bearer", "site-admin", "site-auditor", "audit-trail", "scim", "signed", "public"}

# Route-by-route exceptions to "refused", each with its reason: (method, path) -> why.
# The owner of another organization and the no-access member may do these to the victim's
# resources because they are about the caller itself or are public by design.
ALLOWED_FOR_OTHERS: dict[tuple[str, str], str] = {
    ("GET", "/api/v2/users/{user_id}"): "a user's public profile (username, avatar), as TFE",
}


# Reads a member without a team role is refused (the walk's member reads are otherwise
# skipped): what a module's owners and manage-modules teams alone see of who consumes it.
MANAGERS_READ = {
    ("GET", "/api/v2/organizations/{organization_name}/registry-module-campaigns"),
    ("GET", "/app/{organization}/registry/campaigns"),
    *(
        (
            "GET",
            f"/api/v2/organizations/{{organization_name}}/registry-modules/{{registry_name}}"
            f"/{{namespace}}/{{name}}/{{provider}}/{tail}",
        )
        for tail in ("downloads", "consumers")
    ),
}


def entry_modules() -> list[str]:
    """Every module under chalicelib/entry."""
    return sorted(
        info.name for info in pkgutil.walk_packages(chalicelib.entry.__path__, "chalicelib.entry.")
    )


def entry_apps() -> dict[str, Any]:
    """Module name -> its Chalice app, for every entry module that serves HTTP routes."""
    apps = {}
    for name in entry_modules():
        module = importlib.import_module(name)
        app = getattr(module, "app", None)
        if app is not None and getattr(app, "routes", None):
            apps[name] = app
    return apps


@dataclass(frozen=True)
class Route:
    app: str
    method: str
    path: str
    access: str
    # The statuses the route declares (its successes and its own errors: a 502 when an
    # outside host fails is not a server error of ours) and the request body it takes.
    statuses: tuple[int, ...] = ()
    content_type: str = "application/vnd.api+json"

    @property
    def page(self) -> bool:
        return self.path == "/" or self.path.startswith("/app/")


def all_routes() -> list[Route]:
    from chalicelib.core.api.openapi import SPECS

    found = []
    for name, app in entry_apps().items():
        for path, methods in sorted(app.routes.items()):
            for method, entry in sorted(methods.items()):
                access = entry.view_function.__dict__.get("access")
                spec = SPECS[(path, method)]
                statuses = (*spec.errors, *(reply.status for reply in spec.success))
                kind = getattr(access, "name", "")
                found.append(Route(name, method, path, kind, statuses, spec.content_types[0]))
    return found


ROUTES = all_routes()


# ----- declarations ----------------------------------------------------------------------------


def test_every_entry_app_is_walked() -> None:
    """The walk sees the deployed functions: every HTTP entry module, each with routes."""
    apps = {route.app for route in ROUTES}
    functions = {
        name
        for name in entry_modules()
        if name.startswith("chalicelib.entry.api.")
        and not hasattr(importlib.import_module(name), "__path__")
    }
    assert apps == functions and len(apps) >= 14
    assert len({(r.method, r.path) for r in ROUTES}) >= 300


def test_every_route_declares_who_may_call_it() -> None:
    undeclared = sorted({(r.method, r.path) for r in ROUTES if not r.access})
    assert undeclared == []
    wrong = sorted(
        (r.method, r.path, r.access)
        for r in ROUTES
        if r.access not in (PAGE_KINDS | {"public"} if r.page else API_KINDS)
    )
    assert wrong == []


# Where the path says what the caller must be, whatever the route declares.
REQUIRED_BY_PATH = {
    "/api/v2/admin/": {"site-admin", "site-auditor"},
    "/app/admin": {"site-admin"},
    "/scim/v2/": {"scim"},
    "/webhooks/": {"signed"},
}


def test_site_administration_and_scim_declare_their_kind() -> None:
    """A site-admin route declared as anything else would not be walked as one."""
    wrong = sorted(
        (r.method, r.path, r.access)
        for r in ROUTES
        for prefix, kinds in REQUIRED_BY_PATH.items()
        if r.path.startswith(prefix) and r.access not in kinds
    )
    assert wrong == []


def test_no_deployed_function_serves_the_local_mail_catcher_page() -> None:
    """The local mail catcher's page (``make run`` only: mail's links are their recipients'
    secrets) is served by no entry app, and declares site-admin access where it is
    registered (the local runner's app)."""
    from chalicelib.core.api.openapi import SPECS
    from infrastructure import mail_catcher

    assert mail_catcher.PAGE.startswith("/app/admin/")  # walked as site administration
    assert mail_catcher.PAGE not in {r.path for r in ROUTES}
    assert SPECS[(mail_catcher.PAGE, "GET")].access == "site-admin"


def test_the_reads_refused_to_members_are_routes() -> None:
    """MANAGERS_READ names existing routes (a renamed one would silently go unwalked)."""
    assert MANAGERS_READ - {(r.method, r.path) for r in ROUTES} == set()


def test_the_public_routes_are_exactly_those_listed() -> None:
    public = {(r.method, r.path) for r in ROUTES if r.access == "public"}
    assert public == PUBLIC


def test_a_route_without_a_declaration_is_refused_at_registration() -> None:
    """``auth`` is a required argument of both wrappers: forgetting it cannot register."""
    from chalice import Blueprint

    from chalicelib.core.api.http import route
    from chalicelib.web.view import page

    with pytest.raises(TypeError):
        route(Blueprint("x"), "/api/v2/undeclared")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        page(Blueprint("y"), "/app/undeclared")  # type: ignore[call-arg]


def test_the_openapi_security_follows_the_declaration() -> None:
    from infrastructure.openapi import TARGET

    document = json.loads(TARGET.read_text(encoding="utf-8"))
    schemes = {
        "public": [],
        "signed": [],
        "bearer": [{"bearerAuth": []}],
        "site-admin": [{"bearerAuth": []}],
        "site-auditor": [{"bearerAuth": []}],
        "audit-trail": [{"bearerAuth": []}],
        "scim": [{"scimToken": []}],
    }
    for r in ROUTES:
        operation = document["paths"][r.path][r.method.lower()]
        assert operation["x-access"] == r.access, (r.method, r.path)
        expected = [{"sessionCookie": []}] if r.page and r.access != "public" else None
        assert operation["security"] == (expected or schemes[r.access]), (r.method, r.path)


# ----- wiring ----------------------------------------------------------------------------------


def _calls(module: str, *names: str) -> bool:
    """Whether the module calls a function of one of ``names`` itself."""
    from tests.test_layout import MODULES

    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in names:
                return True
    return False


def _calls_mail(module: str) -> bool:
    """Whether the module sends mail itself (calls the mailer the app factory wires)."""
    return _calls(module, "mail")


def _wires_mail(module: str) -> bool:
    """Whether the entry module's app declares that it mails (``Uses(mail=True)``)."""
    return bool(importlib.import_module(module).app.uses.mail)


def test_every_entry_app_that_sends_mail_has_mail_wired() -> None:
    """An app whose routes reach a module that sends mail (invitations, resets, email
    confirmations) names the sender: without it a link would silently go nowhere."""
    from tests.test_layout import GRAPH

    senders = {name for name in GRAPH if _calls_mail(name)}
    assert "chalicelib.accounts.memberships" in senders and "chalicelib.accounts.resets" in senders

    def reaches(start: set[str]) -> set[str]:
        seen: set[str] = set()
        todo = list(start)
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(GRAPH.get(name, ()))
        return seen

    missing = []
    for name, app in entry_apps().items():
        handlers = {
            entry.view_function.__module__
            for methods in app.routes.values()
            for entry in methods.values()
        }
        if reaches(handlers) & senders and not _wires_mail(name):
            missing.append(name)
    assert missing == []
    assert memberships.mail() is importlib.import_module("chalicelib.admin.mail")


def test_the_mail_check_sees_an_app_without_mail(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not vacuous: the check fails for the webadmin app without ``Uses(mail=True)``."""
    module = "chalicelib.entry.api.webadmin"
    real = _wires_mail
    monkeypatch.setitem(globals(), "_wires_mail", lambda name: name != module and real(name))
    with pytest.raises(AssertionError):
        test_every_entry_app_that_sends_mail_has_mail_wired()


def test_every_entry_app_that_renders_users_has_the_scim_status_wired() -> None:
    """An app serving routes that render users (``is-scim-managed`` while SCIM is on)
    declares ``Uses(scim=True)``: without it users would show as never SCIM-managed."""
    from tests.test_layout import GRAPH

    renderers = {
        name
        for name in GRAPH
        if name != "chalicelib.accounts.render"
        and _calls(name, "render_user", "render_invited_user", "scim_attributes")
    }
    assert {"chalicelib.accounts.routes", "chalicelib.admin.people_routes"} <= renderers
    missing = []
    for name, app in entry_apps().items():
        handlers = {
            entry.view_function.__module__
            for methods in app.routes.values()
            for entry in methods.values()
        }
        if handlers & renderers and not app.uses.scim:
            missing.append(name)
    assert missing == []


# ----- the walk --------------------------------------------------------------------------------

VICTIM = "victim"
MODULE = "vpcz7"  # the victim's module name, and a marker no refused caller may see
PROVIDER = "cloudz7"
WORKSPACE = "wsz7"


@dataclass
class World:
    clients: dict[str, Any]
    values: dict[str, str]
    markers: list[str]
    tokens: dict[str, str | None]
    document: dict[str, Any] = field(default_factory=dict)
    users: dict[str, str] = field(default_factory=dict)
    browsers: dict[str, Browser | None] = field(default_factory=dict)
    csrf: dict[str, str] = field(default_factory=dict)


def _items() -> str:
    """A digest of every DynamoDB item (moto's, in process)."""
    from chalicelib.core.settings import get_settings

    digest = hashlib.sha256()
    tables = dynamodb_backends[DEFAULT_ACCOUNT_ID][get_settings().region].tables
    for name in sorted(tables):
        for item in tables[name].all_items():
            digest.update(name.encode())
            digest.update(json.dumps(item.to_json(), sort_keys=True, default=str).encode())
    return digest.hexdigest()


def _created(reply: Any) -> dict[str, Any]:
    assert reply.status in (200, 201), reply.json
    return reply.data


@pytest.fixture(scope="module")
def world(aws_resources: Provisioned, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    from chalice.test import Client

    from chalicelib.accounts.users.service import bootstrap_admin, create_user
    from chalicelib.core.auth import mint_token
    from chalicelib.core.settings import get_settings

    with pytest.MonkeyPatch.context() as env:
        # Outbound fetches (the public registry, the mirror's upstreams) go nowhere.
        for name in ("REGISTRY_PUBLIC_UPSTREAM", "REGISTRY_MIRROR_UPSTREAM_URL"):
            env.setenv(name, "http://127.0.0.1:9")
        forget_cached_state()
        aws_resources.mock.start(reset=False)
        try:
            get_settings.cache_clear()
            bootstrap_admin(ADMIN_TOKEN)
            project = str(tmp_path_factory.mktemp("chalice"))
            with Client(importlib.import_module("app").app, project_dir=project) as whole:
                api = Api(whole, ADMIN_TOKEN)
                users = {}
                for name in ("vic", "mallory", "eve"):
                    user = create_user(name, f"{name}@example.com")
                    users[name] = (user.id, mint_token("user", user.id)[1])
                vic = api.as_(users["vic"][1])
                for name, owner in ((VICTIM, "vic"), ("evil", "eve")):
                    _created(
                        api.post(
                            "/api/v2/organizations", doc("organizations", name=name, email="o@x.io")
                        )
                    )
                    owners = api.get(
                        f"/api/v2/organizations/{name}/teams?filter[names]=owners"
                    ).data[0]
                    them = {"data": [{"type": "users", "id": owner}]}
                    assert (
                        api.post(f"/api/v2/teams/{owners['id']}/relationships/users", them).status
                        == 204
                    )
                org = f"/api/v2/organizations/{VICTIM}"
                team = _created(vic.post(f"{org}/teams", doc("teams", name="readers")))
                members = {"data": [{"type": "users", "id": "mallory"}]}
                assert (
                    vic.post(f"/api/v2/teams/{team['id']}/relationships/users", members).status
                    == 204
                )
                team_token = _created(vic.post(f"/api/v2/teams/{team['id']}/authentication-token"))
                workspace = _created(
                    vic.post(f"{org}/workspaces", doc("workspaces", name=WORKSPACE))
                )
                project_ = _created(vic.post(f"{org}/projects", doc("projects", name="projz7")))
                module = _created(
                    vic.post(
                        f"{org}/registry-modules",
                        doc("registry-modules", name=MODULE, provider="aws"),
                    )
                )
                modules = f"{org}/registry-modules/private/{VICTIM}/{MODULE}/aws"
                _created(
                    vic.post(
                        f"{modules}/versions", doc("registry-module-versions", version="1.0.0")
                    )
                )
                provider = _created(
                    vic.post(
                        f"{org}/registry-providers",
                        doc(
                            "registry-providers",
                            name=PROVIDER,
                            namespace=VICTIM,
                            **{"registry-name": "private"},
                        ),
                    )
                )
                invited = _created(
                    vic.post(
                        f"{org}/organization-memberships",
                        doc("organization-memberships", email="new@example.com"),
                    )
                )
                notifications = _created(
                    vic.post(
                        f"{org}/notification-configurations",
                        doc(
                            "notification-configurations",
                            name="hookz7",
                            **{"destination-type": "generic", "url": "http://127.0.0.1:9/z7"},
                        ),
                    )
                )
                vic_tokens = vic.get(f"/api/v2/users/{users['vic'][0]}/authentication-tokens").data
                values = {
                    "organization_name": VICTIM,
                    "organization": VICTIM,
                    "namespace": VICTIM,
                    "registry_name": "private",
                    "registry": "private",
                    "provider": "aws",
                    "version": "1.0.0",
                    "team_id": team["id"],
                    "user_id": users["vic"][0],
                    "workspace_id": workspace["id"],
                    "workspace_name": WORKSPACE,
                    "project_id": project_["id"],
                    "notification_configuration_id": notifications["id"],
                    "module_ref": module["id"],
                    "provider_id": provider["id"],
                    "membership_id": invited["id"],
                    "token_id": vic_tokens[0]["id"],
                    "os": "linux",
                    "arch": "amd64",
                    "type": PROVIDER,
                    "area": "general",
                    "action": "suspend",
                    "hostname": "registry.terraform.io",
                }
                markers = [
                    MODULE,
                    PROVIDER,
                    WORKSPACE,
                    "projz7",
                    "hookz7",
                    "vic@example.com",
                    team_token["attributes"]["token"],
                ]
            clients = {}
            with contextlib.ExitStack() as stack:
                for name, app in entry_apps().items():
                    clients[name] = stack.enter_context(Client(app, project_dir=project))
                tokens: dict[str, str | None] = {
                    "anonymous": None,
                    "member": users["mallory"][1],
                    "other-owner": users["eve"][1],
                }
                from infrastructure.openapi import TARGET

                document = json.loads(TARGET.read_text(encoding="utf-8"))
                ids = {name: user_id for name, (user_id, _) in users.items()}
                yield World(clients, values, markers, tokens, document, ids)
        finally:
            aws_resources.empty()
            aws_resources.mock.stop(remove_data=False)
            forget_cached_state()


def _value(name: str, path: str, values: dict[str, str]) -> str:
    """The victim's resource for a path parameter (a placeholder where there is none)."""
    if name == "name":
        if "scim/v2" in path:
            return "User"
        if "/admin/organizations/" in path:
            return VICTIM
        return PROVIDER if "providers" in path else MODULE
    if name == "token_id" and ("oauth-tokens" in path or "scim" in path):
        return "at-none"
    if name == "action" and "/registry/publish/" in path:
        return "revoke"
    if name == "provider" and "/registry/providers/" in path:
        return PROVIDER
    return values.get(name, "x")


def _path(route: Route, values: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: _value(m.group(1), route.path, values), route.path)


def names_the_victim(route: Route) -> bool:
    """Whether the route's path names one of the victim organization's resources (else it is
    about the caller itself, or the public registries: the mirror, search)."""
    return "{" in route.path and "{hostname}" not in route.path


NAMED = {
    "visibility": "organization",
    "registry-name": "private",
    "namespace": VICTIM,
    "provider": "aws",
    "id": "mallory",
}


def _example(schema: dict[str, Any], components: dict[str, Any], name: str = "") -> Any:
    """A small value the schema accepts (attributes: every property, else the required ones),
    so that a write's body passes validation and a refusal is the authorization's."""
    if "$ref" in schema:
        return _example(components[schema["$ref"].rsplit("/", 1)[-1]], components, name)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        wanted = list(schema.get("required", []))
        for option in schema.get("anyOf", [])[:1]:
            wanted += option.get("required", [])
        if name in ("attributes", "data") or name.startswith("data/"):
            wanted += [key for key in ("type", "attributes") if key in properties]
        if name == "attributes":
            wanted += list(properties)
        value = {}
        for key in dict.fromkeys(wanted):
            if key in properties:
                value[key] = _example(properties[key], components, key)
        described = re.search(r"'([a-z-]+)'", properties.get("type", {}).get("description", ""))
        if value.get("type") in ("x", "walk7", None) and described:
            value["type"] = described.group(1)
        return value
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [o for o in schema[key] if o.get("type") != "null"]
            return _example(options[0], components, name) if options else None
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind == "array":
        items = schema.get("items", {})
        one = name == "data" or schema.get("minItems")
        return [_example(items, components, "data/item")] if one else []
    if kind in ("integer", "number"):
        return max(int(schema.get("minimum", 1)), 1)
    if kind == "boolean":
        return True
    if name in NAMED:
        return NAMED[name]
    if "version" in name:
        return "1.0.0"
    if "email" in name:
        return "someone@example.com"
    return "walk7"


def _body(route: Route, document: dict[str, Any]) -> str:
    operation = document["paths"][route.path][route.method.lower()]
    content = operation.get("requestBody", {}).get("content", {})
    schema = (content.get(route.content_type) or {}).get("schema")
    if not schema:
        return "" if route.method == "GET" else "{}"
    return json.dumps(_example(schema, document["components"]["schemas"]))


def _signed_in(world: World, caller: str) -> Browser | None:
    """A browser signed in as ``caller`` (its session cookie), made once."""
    if caller not in world.browsers:
        token = world.tokens[caller]
        browser = None
        if token is not None:
            browser = Browser(world.clients["chalicelib.entry.api.web"])
            assert browser.sign_in(token).status_code == 303
            world.csrf[caller] = browser.csrf("/app/organizations")
        world.browsers[caller] = browser
    return world.browsers[caller]


@dataclass(frozen=True)
class Answer:
    status: int
    location: str
    body: str


def _call(world: World, route: Route, caller: str) -> Answer:
    client = world.clients[route.app]
    path = _path(route, world.values)
    if route.page:
        signed = _signed_in(world, caller)
        browser = Browser(client)
        if signed is not None:
            browser.cookies = dict(signed.cookies)
        form = {"csrf_token": world.csrf.get(caller, "")} if route.method == "POST" else None
        response = browser.request(route.method, path, form)
        status, headers, body = response.status_code, response.headers, response.body
    else:
        api = Api(client, world.tokens[caller])
        body = _body(route, world.document)
        reply = api.call(route.method, path, raw=body, content_type=route.content_type)
        status, headers, body = reply.status, reply.headers, reply.body
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body or "")
    return Answer(status, headers.get("Location", "") or headers.get("location", ""), text)


def _expected_refusal(route: Route, caller: str) -> set[int] | None:
    """The statuses a refused ``caller`` gets on ``route``; None: no refusal is due."""
    if route.access == "public":
        return None
    if caller == "anonymous":
        if route.page:
            return {302, 303}
        return {401, 404} if route.access == "signed" else {401}
    if route.access in ("site-admin", "site-auditor"):
        return {404}
    if route.access == "scim":
        return {401}
    if route.access == "signed" or not names_the_victim(route):
        return None
    if (route.method, route.path) in ALLOWED_FOR_OTHERS:
        return None
    if (
        caller == "member"
        and route.method == "GET"
        and (route.method, route.path) not in MANAGERS_READ
    ):
        return None  # a member reads the organization (checked: nothing written, no 5xx)
    return set(range(400, 500)) - {429}


CALLERS = ("anonymous", "member", "other-owner")


def test_the_wrong_callers_are_refused_on_every_route_of_every_app(world: World) -> None:
    failures = []
    for caller in CALLERS:
        _signed_in(world, caller)
        # The items' digest before the next call: only calls write, so one call's ``after``
        # is the next one's ``before`` (a digest reads every item: once per call, not twice).
        state = _items()
        for route in ROUTES:
            if route.access == "public" and caller != "anonymous":
                continue  # anyone's anyway (and signing out would end the walk's session)
            expected = _expected_refusal(route, caller)
            if expected is None and caller == "member":
                continue  # a member's reads (the walk's budget: the refusals are the point)
            before = state
            answer = _call(world, route, caller)
            state = _items()
            changed = state != before
            where = (caller, route.method, route.path, route.app.rsplit(".", 1)[-1])
            if answer.status >= 500 and answer.status not in route.statuses:
                failures.append((*where, answer.status, answer.body[:160]))
            elif expected is None:
                # The caller's own things, or reads of a member: never the victim's data to
                # the owner of another organization.
                if caller == "other-owner" and answer.status < 300:
                    shown = [marker for marker in world.markers if marker in answer.body]
                    if shown:
                        failures.append((*where, answer.status, f"shows {shown}"))
            elif answer.status not in expected:
                failures.append((*where, answer.status, answer.body[:160]))
            elif expected == {302, 303} and not answer.location.startswith("/app/sign-in"):
                failures.append((*where, answer.status, answer.location))
            elif changed:
                failures.append((*where, answer.status, "wrote while refusing"))
    assert failures == [], "\n".join(map(repr, failures))


# ----- authorize: the role table --------------------------------------------------------------


def test_each_action_is_granted_by_its_roles_only() -> None:
    from chalicelib.accounts.authorization import GRANTS, OrgAccess, allows

    def granted(rights: OrgAccess) -> set[str]:
        return {action for action in GRANTS if allows(rights, action)}

    assert granted(OrgAccess()) == set()
    assert granted(OrgAccess(can_read=True)) == {"read", "consume"}
    assert granted(OrgAccess.everything()) == set(GRANTS)
    assert granted(OrgAccess(manage_modules=True)) == set()  # nothing without reading
    # A consumer organization's member reads the shared modules, nothing else.
    assert granted(OrgAccess(consumer=True)) == {"consume"}
    for role, actions in {
        "manage_modules": {"manage-modules"},
        "manage_providers": {"manage-providers"},
        "manage_workspaces": {"manage-workspaces"},
        "manage_membership": {"manage-membership"},
        "read_projects": {"read-projects"},
        "manage_projects": {"manage-projects", "read-projects"},
    }.items():
        expected = {"read", "consume", *actions}
        assert granted(OrgAccess(can_read=True, **{role: True})) == expected, role


def test_authorize_answers_404_unless_the_roles_allow(world: World) -> None:
    from chalicelib.accounts.authorization import authorize
    from chalicelib.core.api.errors import NotFound
    from chalicelib.core.auth import Principal

    def user(name: str) -> Principal:
        return Principal("user", world.users[name], "at-test")

    assert authorize(user("vic"), "own", VICTIM).is_owner
    assert authorize(user("mallory"), "read", VICTIM).can_read
    for name, action in (
        ("mallory", "manage-workspaces"),
        ("mallory", "own"),
        ("eve", "read"),
        ("eve", "manage-modules"),
    ):
        with pytest.raises(NotFound):
            authorize(user(name), action, VICTIM)  # type: ignore[arg-type]
    with pytest.raises(NotFound, match="missing-org"):  # a missing one: the same 404
        authorize(user("eve"), "read", "missing-org", "no such thing")


def test_on_the_hosted_edition_admin_and_scim_routes_are_404_before_the_token(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A made-up token would be a 401 if it were read: the hosted edition has no site
    administration API and no SCIM, and says so before looking at the caller."""
    from chalicelib.core.settings import get_settings

    monkeypatch.setenv("EDITION", "hosted")
    get_settings.cache_clear()
    try:
        answers = {
            (route.method, route.path): Api(world.clients[route.app], "made-up")
            .call(
                route.method,
                _path(route, world.values),
                raw=_body(route, world.document),
                content_type=route.content_type,
            )
            .status
            for route in ROUTES
            if route.access in ("site-admin", "site-auditor", "scim") and not route.page
        }
    finally:
        monkeypatch.delenv("EDITION")
        get_settings.cache_clear()
    assert len(answers) > 60
    assert {key: status for key, status in answers.items() if status != 404} == {}


def _user(world: World, name: str) -> Any:
    from chalicelib.core.auth import Principal

    return Principal("user", world.users[name], "at-test")


def test_managing_members_is_the_manage_membership_action_of_a_user(world: World) -> None:
    """``memberships.managing`` (inviting, removing) goes through the role table: the
    owners and a team with ``manage-membership`` are granted; a reader, another
    organization's owner, and a team token holding the role are refused, with the text of
    old."""
    from chalicelib.accounts import memberships
    from chalicelib.accounts.teams import service as teams_service
    from chalicelib.accounts.teams import store as teams_store
    from chalicelib.accounts.users import service as users_service
    from chalicelib.core.api.errors import NotFound
    from chalicelib.core.auth import Principal

    vic = _user(world, "vic")
    team = teams_service.create_team(vic, VICTIM, "membership-managers", "secret", {})
    team.access.manage_membership = True
    team.save()
    moe = users_service.create_user("moe", "moe@example.com")
    teams_store.add_team_members(team, [moe.id])
    moe_ = Principal("user", moe.id, "at-test")
    assert memberships.managing(vic, VICTIM).is_owner
    assert memberships.managing(moe_, VICTIM).manage_membership
    refused = "not found or you may not manage its members"
    for caller in (
        _user(world, "mallory"),
        _user(world, "eve"),
        Principal("team", team.id, "at-test", organization=VICTIM),
        Principal("organization", VICTIM, "at-test", organization=VICTIM),
    ):
        with pytest.raises(NotFound, match=refused):
            memberships.managing(caller, VICTIM)
    with pytest.raises(NotFound, match=refused):  # a missing organization: the same 404
        memberships.managing(moe_, "missing-org")


def test_the_membership_checks_follow_the_role_table(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decided in one place: with the table's grant withdrawn, even the owner is refused."""
    from chalicelib.accounts import authorization, memberships
    from chalicelib.core.api.errors import NotFound

    monkeypatch.setitem(authorization.GRANTS, "manage-membership", lambda rights: False)
    with pytest.raises(NotFound):
        memberships.managing(_user(world, "vic"), VICTIM)


def test_owning_an_organization_or_team_is_the_own_action(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``owned_organization`` and ``owned_team`` (settings, teams, tokens) go through the
    role table's ``own``: its owners and a site admin are granted; a reader, another
    organization's owner, a team token of a team without the role and the organization
    token are refused (404, the texts of old); with the grant withdrawn, so is the owner."""
    from chalicelib.accounts import authorization
    from chalicelib.accounts.teams import service as teams_service
    from chalicelib.accounts.users import service as users_service
    from chalicelib.core.api.errors import NotFound
    from chalicelib.core.auth import Principal

    vic, team_id = _user(world, "vic"), world.values["team_id"]
    admin = Principal("user", users_service.find_user_by_name("admin").id, "at-test")  # type: ignore[union-attr]
    for caller in (vic, admin):
        assert authorization.owned_organization(caller, VICTIM).name == VICTIM
        assert teams_service.owned_team(caller, team_id).id == team_id
    for caller in (
        _user(world, "mallory"),
        _user(world, "eve"),
        Principal("team", team_id, "at-test", organization=VICTIM),
        Principal("organization", VICTIM, "at-test", organization=VICTIM),
    ):
        with pytest.raises(NotFound, match=f"organization {VICTIM!r} not found"):
            authorization.owned_organization(caller, VICTIM)
        with pytest.raises(NotFound, match=f"team {team_id} not found"):
            teams_service.owned_team(caller, team_id)
    monkeypatch.setitem(authorization.GRANTS, "own", lambda rights: False)
    with pytest.raises(NotFound, match="not one of its owners"):
        authorization.owned_organization(vic, VICTIM)
    with pytest.raises(NotFound, match="not an owner of its organization"):
        teams_service.owned_team(vic, team_id)


def test_the_roles_are_read_where_they_are_decided() -> None:
    """``accounts.authorization`` reads the roles itself, from the stores: the services of
    users, teams, organizations and tokens ask it, never the other way round (no import
    circle)."""
    import chalicelib.accounts.authorization as authorization

    imported = set()
    for node in ast.walk(ast.parse(Path(authorization.__file__).read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
        elif isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
    services = {m for m in imported if m.startswith("chalicelib.accounts.") and "service" in m}
    assert not services, services
    assert "chalicelib.accounts.users.store" in imported


def test_consuming_a_shared_module_is_the_consume_action(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The registry protocol's module reads across organizations go through ``consume``:
    once a site admin lists ``evil`` among the victim's module consumers, evil's owner and
    its organization token read the victim's module; a user of no organization does not,
    not even with global sharing; a disabled producer shares nothing; and with the table's
    grant withdrawn nobody from elsewhere reads it (the victim's own members still do)."""
    from chalicelib.accounts import authorization
    from chalicelib.accounts.organizations import service as organizations_service
    from chalicelib.accounts.organizations import store as organizations_store
    from chalicelib.accounts.organizations.store import OrganizationModel
    from chalicelib.accounts.users import service as users_service
    from chalicelib.core.api.errors import NotFound
    from chalicelib.core.auth import Principal
    from chalicelib.modules.protocol.service import find_module

    def reads(caller: Principal) -> bool:
        try:
            return find_module(caller, VICTIM, MODULE, "aws").module.name == MODULE
        except NotFound:
            return False

    eve, mallory = _user(world, "eve"), _user(world, "mallory")
    evil_token = Principal("organization", "evil", "at-test", organization="evil")
    nobody = Principal("user", users_service.create_user("nobody", "nobody@example.com").id, "at-t")
    victim = OrganizationModel.get(VICTIM)
    assert reads(mallory) and not reads(eve) and not reads(evil_token)
    try:
        organizations_service.set_module_consumers(victim, {"evil"})
        assert reads(eve) and reads(evil_token) and not reads(nobody)
        assert authorization.consumer_roles(eve, VICTIM).consumer
        assert not authorization.allows(authorization.consumer_roles(eve, VICTIM), "read")
        victim.update(actions=[OrganizationModel.global_module_sharing.set(True)])
        assert reads(eve) and not reads(nobody)
        victim.update(actions=[OrganizationModel.admin_values.set({"is-disabled": True})])
        organizations_store.forget_disabled(VICTIM)
        assert not reads(eve)
        victim.update(actions=[OrganizationModel.admin_values.remove()])
        organizations_store.forget_disabled(VICTIM)
        assert reads(eve)
        monkeypatch.setitem(authorization.GRANTS, "consume", lambda rights: False)
        assert not reads(eve) and not reads(evil_token) and reads(mallory)
    finally:
        victim.update(
            actions=[
                OrganizationModel.module_consumers.remove(),
                OrganizationModel.global_module_sharing.remove(),
                OrganizationModel.admin_values.remove(),
            ]
        )
        organizations_store.forget_disabled(VICTIM)


def test_who_sees_a_members_email_follows_the_manage_membership_grant(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The organization's memberships show an invited person's email to who may manage
    members (the owner), not to a reader; with the table's grant withdrawn, not to the owner
    either: the answer is the role table's."""
    from chalicelib.accounts import authorization
    from chalicelib.core.auth import mint_token

    path = f"/api/v2/organizations/{VICTIM}/organization-memberships?filter[status]=invited"
    client = world.clients["chalicelib.entry.api.accounts"]

    def emails(token: str | None) -> set[str]:
        reply = Api(client, token).get(path)
        assert reply.status == 200, reply.json
        return {m["attributes"]["email"] for m in reply.data}

    vic = mint_token("user", world.users["vic"])[1]
    assert emails(vic) == {"new@example.com"}
    assert emails(world.tokens["member"]) == {""}
    monkeypatch.setitem(authorization.GRANTS, "manage-membership", lambda rights: False)
    assert emails(vic) == {""}
