"""Every string a request carries is bounded (fast layer), as ``test_bounds`` proves for arrays.

DynamoDB refuses a sort key over 1,024 bytes and an item over 400 KB, and its refusal used to
reach the client as a 500: a module or provider version of 1,006 characters, a token
description of 500 KB. Now:

* the OpenAPI document shows a ``maxLength`` on every string of every request body and on
  every string query parameter (an enumeration or a constant bounds itself), so a new
  unbounded one fails here;
* for every operation with a JSON:API body, each string one character past its bound is
  refused with a 422 whose pointer names it, and nothing is written (every table's items
  compared before and after); a value within the character bound but past the byte bound
  (``x-max-bytes``: names, versions, ids, emails end up in keys) is refused the same way;
* path parameters: a 1,006-character version (and multi-byte values) in every path
  parameter of every route is a 4xx, never a 5xx, with moto made as strict as DynamoDB
  about key sizes on reads;
* web forms, SCIM payloads and query parameters are bounded where they are read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from moto.dynamodb.exceptions import HashKeyTooLong, RangeKeyTooLong
from moto.dynamodb.limits import HASH_KEY_MAX_LENGTH, RANGE_KEY_MAX_LENGTH
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table

from chalicelib.artifacts import semver
from chalicelib.core.api import bounds
from tests.conftest import Api, doc, make_org, make_team

V2 = "/api/v2"
OPENAPI = Path(__file__).resolve().parent.parent / "chalicelib" / "meta" / "openapi.json"
DOCUMENT = json.loads(OPENAPI.read_text())
COMPONENTS = DOCUMENT["components"]["schemas"]
JSONAPI = "application/vnd.api+json"
# The reproduction: a version of 1,006 characters (sort keys stop at 1,024 bytes).
LONG_VERSION = "1.0.0-" + "a" * 1000


def _resolve(schema: Any) -> Any:
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        schema = COMPONENTS[schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def _is_string(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    return kind == "string" or (isinstance(kind, list) and "string" in kind)


def _bounds_itself(schema: dict[str, Any]) -> bool:
    return "enum" in schema or "const" in schema


def strings(schema: Any, at: tuple[str, ...] = (), seen: frozenset[str] = frozenset()) -> Iterator:
    """(pointer parts, schema) of every string schema inside ``schema``, following ``$ref``s
    (an array's element is at index 0)."""
    if isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name not in seen:
            yield from strings(COMPONENTS[name], at, seen | {name})
        return
    if not isinstance(schema, dict):
        return
    if _is_string(schema):
        yield at, schema
    for name, sub in schema.get("properties", {}).items():
        yield from strings(sub, (*at, name), seen)
    if "items" in schema:
        yield from strings(schema["items"], (*at, "0"), seen)
    if isinstance(schema.get("additionalProperties"), dict):
        yield from strings(schema["additionalProperties"], (*at, "*"), seen)
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key, []):
            yield from strings(sub, at, seen)


def _query_strings(operation: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for param in operation.get("parameters", []):
        if param["in"] == "query":
            for _, schema in strings(param["schema"]):
                yield param["name"], schema


# ----- the document ----------------------------------------------------------------------------


def test_every_string_of_every_request_body_query_and_path_has_a_max_length() -> None:
    found, unbounded = [], []
    for path, operations in DOCUMENT["paths"].items():
        for method, operation in operations.items():
            where = f"{method.upper()} {path}"
            for media, content in operation.get("requestBody", {}).get("content", {}).items():
                for at, schema in strings(content["schema"]):
                    found.append(f"{where} ({media}) /{'/'.join(at)}")
                    if not _bounds_itself(schema) and not isinstance(schema.get("maxLength"), int):
                        unbounded.append(found[-1])
            for param in operation.get("parameters", []):
                if param["in"] == "path":
                    found.append(f"{where} {{{param['name']}}}")
                    if param["schema"].get("maxLength") != bounds.PATH_PARAMETER:
                        unbounded.append(found[-1])
            for name, schema in _query_strings(operation):
                found.append(f"{where} ?{name}")
                if not _bounds_itself(schema) and not isinstance(schema.get("maxLength"), int):
                    unbounded.append(found[-1])
    assert not unbounded, unbounded
    # The walk reaches what it should (a change of the document's shape must not blind it).
    reached = "\n".join(found)
    for expected in (
        "registry-modules/{registry_name}/{namespace}/{name}/{provider}/versions "
        "(application/vnd.api+json) /data/attributes/version",
        "/authentication-tokens (application/vnd.api+json) /data/attributes/description",
        "(application/vnd.api+json) /data/attributes/vcs-repo/identifier",
        "(application/vnd.api+json) /data/attributes/tag-names/0",
        "/relationships/tags (application/vnd.api+json) /data/0/attributes/name",
        "PATCH /api/v2/admin/general-settings (application/vnd.api+json) /data/type",
        "POST /scim/v2/Groups (application/scim+json) /members/0/value",
        "GET /api/v2/organizations/{organization_name}/workspaces ?search[name]",
        "GET /api/v2/organizations/{organization_name} {organization_name}",
    ):
        assert expected in reached, expected


def test_the_document_states_each_kind_of_bound() -> None:
    def attribute(component: str, name: str) -> dict[str, Any]:
        schema = COMPONENTS[component]["properties"][name]
        return next(s for s in schema.get("anyOf", [schema]) if s.get("type") == "string")

    version = attribute("chalicelib__modules__schemas__CreateVersion", "version")
    assert version["maxLength"] == version["x-max-bytes"] == bounds.VERSION == semver.MAX_LENGTH
    token = attribute("chalicelib__accounts__schemas__TokenAttributes", "description")
    assert token["maxLength"] == bounds.DESCRIPTION and "x-max-bytes" not in token
    assert attribute("OrganizationAttributes", "name")["x-max-bytes"] == bounds.NAME
    assert attribute("OrganizationAttributes", "email")["x-max-bytes"] == bounds.EMAIL
    assert attribute("ClientAttributes", "http-url")["maxLength"] == bounds.URL
    assert attribute("ClientAttributes", "private-key")["maxLength"] == bounds.KEY
    assert attribute("PasswordAttributes", "password")["maxLength"] == bounds.SECRET
    assert attribute("CustomizationSettings", "footer")["maxLength"] == bounds.TEXT
    search = next(
        p
        for p in DOCUMENT["paths"]["/api/v2/organizations/{organization_name}/workspaces"]["get"][
            "parameters"
        ]
        if p["name"] == "search[name]"
    )
    assert search["schema"]["maxLength"] == bounds.QUERY


# ----- every body string past its bound: a 422 naming it, nothing written ----------------------


def _sample(schema: Any) -> Any:
    """A small valid value of ``schema`` (for the properties a document requires)."""
    schema = _resolve(schema)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return next(v for v in schema["enum"] if v not in (None, ""))
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return _sample(next(s for s in schema[key] if _resolve(s).get("type") != "null"))
    kind = schema.get("type")
    kind = next(k for k in kind if k != "null") if isinstance(kind, list) else kind
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        return {name: _sample(properties[name]) for name in schema.get("required", [])}
    samples = {"string": "x", "integer": schema.get("minimum", 1), "boolean": True, "array": []}
    return samples.get(kind, "x")


def _has(schema: Any, at: tuple[str, ...]) -> bool:
    return any(parts == at for parts, _ in strings(schema))


def _document(schema: Any, at: tuple[str, ...], value: str) -> Any:
    """A valid document but for ``value`` at ``at``."""
    schema = _resolve(schema)
    own = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
    for key in ("anyOf", "oneOf"):
        if key in schema and not _has(own, at):
            return _document(next(s for s in schema[key] if _has(s, at)), at, value)
    if not at:
        return value
    if "items" in schema:
        return [_document(schema["items"], at[1:], value)]
    properties = schema.get("properties", {})
    out = {n: _sample(properties[n]) for n in schema.get("required", []) if n != at[0]}
    out[at[0]] = _document(properties[at[0]], at[1:], value)
    return out


def _body_operations() -> Iterator[Any]:
    for path, operations in DOCUMENT["paths"].items():
        for method, operation in operations.items():
            content = operation.get("requestBody", {}).get("content", {})
            schema = content.get(JSONAPI, {}).get("schema")
            if schema and any(not _bounds_itself(leaf) for _, leaf in strings(schema)):
                yield pytest.param(method.upper(), path, schema, id=f"{method.upper()} {path}")


def snapshot() -> dict[str, Any]:
    """Every item of every table (moto's own), to compare before and after a request."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    from chalicelib.core.settings import get_settings

    tables = dynamodb_backends[DEFAULT_ACCOUNT_ID][get_settings().region].tables
    return {name: [i.to_json() for i in table.all_items()] for name, table in tables.items()}


# Path parameters that must name something for the handler to reach the body (the others
# are refused, or the body checked, before anything is looked up).
PATH_VALUES = {"organization_name": "acme", "organization": "acme"}


@pytest.mark.parametrize(("method", "template", "schema"), list(_body_operations()))
def test_each_string_past_its_bound_is_a_422_naming_it_and_changes_nothing(
    api: Api, method: str, template: str, schema: dict[str, Any]
) -> None:
    make_org(api, "acme")
    path = re.sub(r"\{([^}]+)\}", lambda m: PATH_VALUES.get(m[1], "x"), template)
    cases = []
    for at, leaf in strings(schema):
        if _bounds_itself(leaf):
            continue
        bound = leaf["maxLength"]
        pointer = "/" + "/".join(at)
        cases.append((_document(schema, at, "x" * (bound + 1)), pointer, f" {bound} "))
        if "x-max-bytes" in leaf:  # within the characters, past the bytes
            over = "é" * (leaf["x-max-bytes"] // 2 + 1)
            cases.append((_document(schema, at, over), pointer, "bytes in UTF-8"))
    assert cases
    before = snapshot()
    for body, pointer, detail in cases:
        reply = api.call(method, path, body)
        assert reply.status == 422, (pointer, reply.status, reply.body[:300])
        assert reply.error["source"]["pointer"] == pointer, reply.error
        assert detail in reply.error["detail"], reply.error
    assert snapshot() == before


# ----- the reproductions ----------------------------------------------------------------


@pytest.fixture
def org(api: Api) -> str:
    return make_org(api, "acme")


def test_a_module_version_of_1006_characters_is_a_422_and_creates_nothing(
    api: Api, org: str
) -> None:
    module = f"{V2}/organizations/{org}/registry-modules"
    assert api.post(module, doc("registry-modules", name="vpc", provider="aws")).status == 201
    versions = f"{module}/private/{org}/vpc/aws/versions"
    reply = api.post(versions, doc("registry-module-versions", version=LONG_VERSION))
    assert reply.status == 422, reply.body[:300]
    assert reply.error["source"]["pointer"] == "/data/attributes/version"
    assert f"at most {bounds.VERSION} characters" in reply.error["detail"]
    listed = api.get(f"{module}/private/{org}/vpc/aws")
    assert listed.data["attributes"]["version-statuses"] == []


def test_a_provider_version_of_1006_characters_is_a_422_and_creates_nothing(
    api: Api, org: str
) -> None:
    providers = f"{V2}/organizations/{org}/registry-providers"
    body = doc("registry-providers", name="aws", namespace=org, **{"registry-name": "private"})
    created = api.post(providers, body)
    assert created.status == 201, created.json
    versions = f"{providers}/private/{org}/aws/versions"
    attributes = {"version": LONG_VERSION, "key-id": "ABC"}
    reply = api.post(versions, doc("registry-provider-versions", **attributes))
    assert reply.status == 422, reply.body[:300]
    assert reply.error["source"]["pointer"] == "/data/attributes/version"
    assert api.get(versions).data == []


def test_a_token_description_of_500_kb_is_a_422_and_creates_no_token(api: Api, org: str) -> None:
    organization_token = f"{V2}/organizations/{org}/authentication-token"
    user = api.get(f"{V2}/account/details").data["id"]
    huge = "x" * 500_000
    for path, type_ in (
        (organization_token, "authentication-token"),
        (f"{V2}/users/{user}/authentication-tokens", "authentication-tokens"),
    ):
        before = snapshot()
        reply = api.post(path, doc(type_, description=huge))
        assert reply.status == 422, reply.body[:300]
        assert reply.error["source"]["pointer"] == "/data/attributes/description"
        assert f"at most {bounds.DESCRIPTION} characters" in reply.error["detail"]
        assert snapshot() == before
    # Multi-byte: the bound is in characters, each at most four bytes (far below 400 KB).
    at_bound = "\U0001d11e" * bounds.DESCRIPTION
    reply = api.post(organization_token, doc("authentication-token", description=at_bound))
    assert reply.status == 201, reply.body[:300]
    assert reply.data["attributes"]["description"] == at_bound


def test_versions_past_the_bound_are_invalid_whatever_carries_them() -> None:
    at_bound = "1.0.0-" + "a" * (semver.MAX_LENGTH - 6)
    assert semver.parse(at_bound).text == at_bound
    for refused in (at_bound + "a", LONG_VERSION):
        with pytest.raises(semver.InvalidVersion, match=f"at most {semver.MAX_LENGTH}"):
            semver.parse(refused)
    # Short numeric identifiers grow in the order key: it still fits a sort key.
    numeric = "0.0.0-" + ".".join(["1"] * 61)
    assert len(numeric) <= semver.MAX_LENGTH
    with pytest.raises(semver.InvalidVersion, match="too many pre-release identifiers"):
        semver.parse(numeric)
    fits = "0.0.0-" + ".".join(["1"] * 40)
    assert len(semver.parse(fits).order_key) <= semver.MAX_ORDER_KEY


# ----- path parameters --------------------------------------------------------------------------


@pytest.fixture
def strict_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto checks key sizes only when writing; DynamoDB refuses an oversized key on reads
    too (``ValidationException``): make moto's reads as strict."""

    def check(hash_key: Any, range_key: Any = None) -> None:
        if hash_key is not None and DynamoType(hash_key).size() > HASH_KEY_MAX_LENGTH:
            raise HashKeyTooLong
        if range_key is not None and DynamoType(range_key).size() > RANGE_KEY_MAX_LENGTH:
            raise RangeKeyTooLong

    get_item, query = Table.get_item, Table.query

    def strict_get(self: Table, hash_key: Any, range_key: Any = None, *a: Any, **kw: Any) -> Any:
        check(hash_key, range_key)
        return get_item(self, hash_key, range_key, *a, **kw)

    def strict_query(self: Table, hash_key: Any, comparison: Any, objs: Any, *a: Any, **kw: Any):
        check(hash_key, objs[0] if objs else None)
        return query(self, hash_key, comparison, objs, *a, **kw)

    monkeypatch.setattr(Table, "get_item", strict_get)
    monkeypatch.setattr(Table, "query", strict_query)


def test_moto_is_made_strict_about_key_sizes_on_reads(api: Api, strict_keys: None) -> None:
    from chalicelib.modules.store import ModuleVersionModel

    with pytest.raises(Exception, match="exceeded the size limit"):
        ModuleVersionModel.get("mod-x", "1" * 2000)


# A valid version far past the bound, a long one the path bound lets through (the version's
# own bound refuses it), and multi-byte values (4 and 2 bytes a character) on either side of
# the path bound.
OVER_LONG = (
    LONG_VERSION,
    "1.0.0-" + "a" * 300,
    "\U0001d11e" * (bounds.PATH_PARAMETER // 4 + 1),
    "\U0001d11e" * (bounds.PATH_PARAMETER // 4 - 1),
    "é" * (bounds.PATH_PARAMETER // 2 - 1),
)


def test_no_path_parameter_of_any_route_answers_5xx_when_over_long(
    api: Api, strict_keys: None
) -> None:
    """Each parameter of each route over-long in turn, the others naming things that exist
    (so the long value reaches the lookups): never a 5xx."""
    from app import app

    make_org(api, "acme")
    modules = f"{V2}/organizations/acme/registry-modules"
    assert api.post(modules, doc("registry-modules", name="vpc", provider="aws")).status == 201
    version = doc("registry-module-versions", version="1.0.0")
    assert api.post(f"{modules}/private/acme/vpc/aws/versions", version).status == 201
    providers = f"{V2}/organizations/acme/registry-providers"
    body = doc("registry-providers", name="aws", namespace="acme", **{"registry-name": "private"})
    provider = api.post(providers, body)
    assert provider.status == 201
    version = doc("registry-provider-versions", version="1.0.0", **{"key-id": "ABC"})
    assert api.post(f"{providers}/private/acme/aws/versions", version).status == 201
    workspace = api.post(f"{V2}/organizations/acme/workspaces", doc("workspaces", name="web"))
    assert workspace.status == 201
    existing = {
        "organization_name": "acme",
        "organization": "acme",
        "module_ref": "acme",
        "registry_name": "private",
        "registry": "private",
        "namespace": "acme",
        "provider": "aws",
        "version": "1.0.0",
        "workspace_name": "web",
        "workspace_id": workspace.data["id"],
        "provider_id": provider.data["id"],
        "os": "linux",
        "arch": "amd64",
    }
    failures = []
    for template, methods in sorted(app.routes.items()):
        names = re.findall(r"\{([^}]+)\}", template)
        name_value = "aws" if "registry-providers" in template else "vpc"
        for method in methods:
            for long_name in names:
                for value in OVER_LONG:
                    path = template
                    for name in names:
                        given = value if name == long_name else existing.get(name, name_value)
                        path = path.replace(f"{{{name}}}", quote(given, safe=""))
                    reply = api.call(method, path, raw="")
                    if reply.status >= 500:
                        failures.append((method, template, long_name, value[:12], reply.status))
    assert failures == []


def test_a_path_parameter_past_the_bound_is_a_404(api: Api, org: str) -> None:
    over = "a" * (bounds.PATH_PARAMETER + 1)
    reply = api.get(f"{V2}/organizations/{over}")
    assert reply.status == 404, reply.body[:300]
    assert f"longer than {bounds.PATH_PARAMETER} bytes" in reply.error["detail"]
    # Multi-byte: bytes count, not characters.
    reply = api.get(f"{V2}/organizations/" + quote("é" * (bounds.PATH_PARAMETER // 2 + 1)))
    assert reply.status == 404, reply.body[:300]
    assert api.get(f"{V2}/organizations/{org}").status == 200


# ----- query parameters -------------------------------------------------------------------------


def test_a_query_parameter_past_its_bound_is_a_422_naming_it(api: Api, org: str) -> None:
    workspaces = f"{V2}/organizations/{org}/workspaces"
    at_bound = urlencode({"search[name]": "w" * bounds.QUERY})
    assert api.get(f"{workspaces}?{at_bound}").status == 200
    reply = api.get(f"{workspaces}?" + urlencode({"search[name]": "w" * (bounds.QUERY + 1)}))
    assert reply.status == 422, reply.body[:300]
    assert reply.error["source"] == {"parameter": "search[name]"}
    # A parameter the route does not declare has the wider bound.
    reply = api.get(f"{workspaces}?" + urlencode({"other": "x" * (bounds.QUERY_ANY + 1)}))
    assert reply.status == 422 and reply.error["source"] == {"parameter": "other"}


# ----- free payloads: SCIM ----------------------------------------------------------------------


def test_scim_group_strings_are_bounded(api: Api) -> None:
    from chalicelib.scim.groups import MAX_ID
    from chalicelib.scim.resources import MAX_NAME
    from tests.scim.helpers import GROUP, SETTINGS, Scim, body, enable_saml, new_token, scim_error

    enable_saml(api)
    assert api.patch(SETTINGS, body(enabled=True)).status == 200
    idp = Scim(api, new_token(api, description="okta").data["attributes"]["token"])
    long_id = [{"value": "u" * (MAX_ID + 1)}]
    for document in (
        {"schemas": [GROUP], "displayName": "d" * (MAX_NAME + 1)},
        {"schemas": [GROUP], "displayName": "ops", "externalId": "e" * (MAX_NAME + 1)},
        {"schemas": [GROUP], "displayName": "ops", "members": long_id},
    ):
        before = snapshot()
        error = scim_error(idp.post("/Groups", document), 400)
        assert "at most" in error["detail"], error
        assert snapshot() == before


# ----- web forms --------------------------------------------------------------------------------


def test_a_web_form_field_past_its_bound_is_refused_before_the_handler(api: Api) -> None:
    """The one form reader (``view.form_fields``) bounds every field of every form, and how
    many a form has: a 400 page naming the field, before the page's handler runs."""
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    for path in ("/app/sign-in/password", "/oauth/token"):
        long_field = urlencode({"username": "x" * (bounds.FORM_FIELD + 1), "password": "p"})
        reply = api.client.http.post(path, headers=form, body=long_field)
        assert reply.status_code == 400, reply.body[:300]
        assert f"at most {bounds.FORM_FIELD} characters".encode() in reply.body
        many = "&".join(f"f{i}=x" for i in range(bounds.FORM_FIELDS + 1))
        reply = api.client.http.post(path, headers=form, body=many)
        assert reply.status_code == 400, reply.body[:300]
        assert f"at most {bounds.FORM_FIELDS} fields".encode() in reply.body


def test_scim_user_strings_that_become_keys_are_bounded(api: Api) -> None:
    """A SCIM User's primary email becomes the user's email (the key of the by-email index):
    a longer one than an email may be is refused, the user not provisioned."""
    from tests.scim.helpers import SETTINGS, USER, Scim, body, enable_saml, new_token, scim_error

    enable_saml(api)
    assert api.patch(SETTINGS, body(enabled=True)).status == 200
    idp = Scim(api, new_token(api, description="okta").data["attributes"]["token"])
    for email in ("j" * 3000 + "@example.com", "é" * 200 + "@example.com"):
        document = {"schemas": [USER], "userName": "jane", "emails": [{"value": email}]}
        before = snapshot()
        error = scim_error(idp.post("/Users", document), 400)
        assert f"at most {bounds.EMAIL} bytes" in error["detail"], error
        assert snapshot() == before


def test_a_web_form_value_that_is_looked_up_never_makes_an_oversized_key(
    api: Api, strict_keys: None
) -> None:
    """Form fields are bounded generously (free text); one looked up by key (a new team
    member's username, a sign-in's login) is bounded where it is looked up: no 5xx."""
    from tests.conftest import ADMIN_TOKEN
    from tests.support.web_browser import Browser

    make_org(api, "acme")
    team, _ = make_team(api, "acme", "devs")
    browser = Browser(api.client)
    assert browser.sign_in(ADMIN_TOKEN).status_code == 303
    members = f"/app/acme/teams/{team}/members"
    for name in ("u" * 3000, "\U0001d11e" * 600):
        token = browser.csrf(f"/app/acme/teams/{team}")
        reply = browser.post(members, {"username": name, "csrf_token": token})
        assert reply.status_code == 422, (name[:10], reply.status_code)
        assert b"no user is named" in reply.body
    signed_out = Browser(api.client)
    for login in ("u" * 3000, "\U0001d11e" * 600, "x" * 3000 + "@example.com"):
        form = {"login": login, "password": "p" * 20, "csrf_token": signed_out.csrf()}
        reply = signed_out.post("/app/sign-in/password", form)
        assert 400 <= reply.status_code < 500, (login[:10], reply.status_code)
