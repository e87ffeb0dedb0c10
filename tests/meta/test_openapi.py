"""The OpenAPI document: generated from the routes, committed, valid, served.

The fuzzing of the running stack against it is ``tests/e2e/test_openapi_fuzz.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys

from openapi_spec_validator import OpenAPIV31SpecValidator

from chalicelib.core.api import openapi
from infrastructure.openapi import TARGET, generate
from tests.conftest import Api

COMPONENTS = "#/components/schemas/"


def document() -> dict:
    return json.loads(TARGET.read_text(encoding="utf-8"))


def operation(path: str, method: str) -> dict:
    return document()["paths"][path][method]


def attributes_schema(path: str, method: str) -> dict:
    body = operation(path, method)["requestBody"]["content"]["application/vnd.api+json"]
    ref = body["schema"]["properties"]["data"]["properties"]["attributes"]["$ref"]
    return document()["components"]["schemas"][ref.removeprefix(COMPONENTS)]


def test_the_committed_document_is_a_fresh_generation():
    """So it cannot drift from the routes: regenerate with python -m infrastructure.openapi."""
    assert generate() == document()


def test_the_document_is_valid_openapi_3_1():
    errors = [str(e) for e in OpenAPIV31SpecValidator(document()).iter_errors()]
    assert errors == []
    assert document()["openapi"].startswith("3.1")


def test_every_route_served_is_one_operation():
    from app import app

    served = {(path, method.lower()) for path, methods in app.routes.items() for method in methods}
    documented = {(path, method) for path, ops in document()["paths"].items() for method in ops}
    assert documented == served
    ids = [op["operationId"] for ops in document()["paths"].values() for op in ops.values()]
    assert len(ids) == len(set(ids))
    tags = {op["tags"][0] for ops in document()["paths"].values() for op in ops.values()}
    assert tags == {
        "accounts",
        "admin",
        "audit",
        "meta",
        "notifications",
        "projects",
        "modules",
        "providers",
        "providers.protocol",
        "modules.nocode",
        "modules.protocol",
        "modules.publishing",
        "modules.scanning",
        "scim",
        "tags",
        "trust",
        "vcs",
        "web",
        "workspaces",
    }


def test_request_bodies_are_the_models_the_handlers_parse_with_kebab_names():
    organizations = attributes_schema("/api/v2/organizations", "post")
    assert set(organizations["properties"]) == {"name", "email"}
    teams = attributes_schema("/api/v2/organizations/{organization_name}/teams", "post")
    assert "organization-access" in teams["properties"]
    retention = attributes_schema("/api/v2/admin/data-retention-policy-settings", "post")
    assert retention["required"] == ["delete-older-than-n-days"]
    create = operation("/api/v2/organizations", "post")["requestBody"]
    data = create["content"]["application/vnd.api+json"]["schema"]["properties"]["data"]
    assert data["properties"]["type"] == {"type": "string", "const": "organizations"}
    assert create["required"] is True and set(create["content"]) == {
        "application/vnd.api+json",
        "application/json",
    }
    # every attribute optional, no body needed: a token's description
    token = operation("/api/v2/teams/{team_id}/authentication-token", "post")["requestBody"]
    assert token["required"] is False
    tags = operation("/api/v2/workspaces/{workspace_id}/relationships/tags", "post")
    item = tags["requestBody"]["content"]["application/json"]["schema"]["properties"]["data"]
    assert item["items"]["properties"]["type"]["const"] == "tags"


def test_query_parameters_security_and_responses():
    teams = operation("/api/v2/organizations/{organization_name}/teams", "get")
    params = {p["name"]: p for p in teams["parameters"]}
    assert set(params) == {
        "organization_name",
        "include",
        "page[number]",
        "page[size]",
        "filter[names]",
    }
    assert params["include"]["schema"]["items"]["enum"] == ["users", "organization-memberships"]
    assert teams["security"] == [{"bearerAuth": []}]
    assert set(teams["responses"]) == {
        "200",
        "400",
        "401",
        "403",
        "404",
        "409",
        "415",
        "422",
        "429",
    }
    ping = operation("/api/v2/ping", "get")
    assert ping["security"] == [] and "401" not in ping["responses"]
    assert "TFP-API-Version" in ping["responses"]["204"]["headers"]
    # admin routes authenticate themselves, but take a token all the same
    assert operation("/api/v2/admin/general-settings", "get")["security"] == [{"bearerAuth": []}]
    assert operation("/api/v2/organizations", "post")["responses"]["201"]
    assert "204" in operation("/api/v2/teams/{team_id}", "delete")["responses"]
    commits = "/api/v2/registry-modules/{module_ref}/{name}/{provider}/commits"
    assert "502" in operation(commits, "get")["responses"]
    smtp = operation("/api/v2/admin/smtp-settings", "patch")["responses"]
    assert {"401", "500", "504"} <= set(smtp)


def test_the_registry_protocol_has_its_own_shapes():
    base = "/api/registry/v1/modules/{namespace}/{name}/{provider}"
    download = operation(base + "/{version}/download", "get")["responses"]
    assert "X-Terraform-Get" in download["204"]["headers"] and "content" not in download["204"]
    assert download["404"] == {"$ref": "#/components/responses/RegistryError404"}
    shared = document()["components"]["responses"]["RegistryError404"]["content"]
    assert shared["application/json"]["schema"] == {"$ref": COMPONENTS + "RegistryErrors"}
    assert operation(base + "/download", "get")["responses"]["302"]["headers"]["Location"]
    search = {p["name"]: p for p in operation(base.split("/{")[0] + "/search", "get")["parameters"]}
    assert search["q"]["required"] is True


def test_every_route_is_recorded_with_the_handler_it_runs():
    from app import app

    for path, methods in app.routes.items():
        for method, entry in methods.items():
            spec = openapi.SPECS[(path, method)]
            assert spec.handler == entry.view_name.strip("_"), (path, method)


def test_the_document_is_served_as_generated(api: Api):
    reply = api.as_(None).get("/api/v2/openapi.json")
    assert reply.status == 200
    assert reply.headers["Content-Type"] == "application/json"
    assert reply.json == document()


def test_the_meta_function_does_not_build_the_document():
    """It serves the generated file: neither the builder nor another group's routes load."""
    code = (
        "import sys, chalicelib.entry.api.meta; "
        "print([m for m in ('chalicelib.core.api.openapi_build', 'app') if m in sys.modules])"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "[]", result.stderr
