"""The registry protocol behind a Lambda function URL: the protocol function's own entry app
answers the URL's events (payload format 2.0) as it answers the REST API's, discovery names
the URL for modules.v1, and the template makes the URL for that function alone."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest

from chalicelib.core.settings import get_settings
from chalicelib.entry.function_url import match_route
from tests.conftest import ADMIN_TOKEN, Api, make_org
from tests.modules.helpers import create_module, publish

V1 = "/api/registry/v1/modules"
URL = "https://abcdefghij.lambda-url.us-east-1.on.aws"


def url_event(
    path: str,
    token: str | None = ADMIN_TOKEN,
    *,
    query: str = "",
    method: str = "GET",
    source_ip: str = "198.51.100.7",
) -> dict[str, Any]:
    """What a function URL sends its function (payload format 2.0), as AWS documents it."""
    headers = {"host": URL.removeprefix("https://"), "user-agent": "Terraform/1.9.0"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": query,
        "headers": headers,
        "requestContext": {
            "accountId": "anonymous",
            "apiId": "abcdefghij",
            "domainName": URL.removeprefix("https://"),
            "domainPrefix": "abcdefghij",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": "Terraform/1.9.0",
            },
            "requestId": "id",
            "routeKey": "$default",
            "stage": "$default",
            "time": "28/Nov/2026:22:00:00 +0000",
            "timeEpoch": 0,
        },
        "isBase64Encoded": False,
    }


@pytest.fixture
def protocol(api: Api) -> Any:
    """The protocol function's entry app, as deployed, over a module with two versions."""
    from chalice.local import LambdaContext

    from chalicelib.entry.api.protocol import app

    make_org(api, "acme")
    create_module(api, "vpc", "aws")
    publish(api, "1.0.0")
    publish(api, "1.1.0")

    def call(event: dict[str, Any]) -> dict[str, Any]:
        return app(event, LambdaContext("ProtocolFunction", 512))

    return call


def body_of(response: dict[str, Any]) -> Any:
    raw = response["body"]
    if response["isBase64Encoded"]:
        raw = base64.b64decode(raw)
    return json.loads(raw)


def test_versions_through_the_function_url_are_what_the_rest_api_answers(
    api: Api, protocol: Any
) -> None:
    response = protocol(url_event(f"{V1}/acme/vpc/aws/versions"))
    assert response["statusCode"] == 200
    assert "multiValueHeaders" not in response  # payload 2.0 has none
    assert body_of(response) == api.get(f"{V1}/acme/vpc/aws/versions").json
    (module,) = body_of(response)["modules"]
    assert [v["version"] for v in module["versions"]] == ["1.1.0", "1.0.0"]


def test_the_rate_limit_holds_through_the_function_url(protocol: Any, rate_limited: Any) -> None:
    """Its headers are there, and invalid tokens are limited per client address: the URL's
    source IP is the one the limiter reads (requestContext.identity.sourceIp)."""
    ok = protocol(url_event(f"{V1}/acme/vpc/aws/versions"))
    assert ok["statusCode"] == 200 and ok["headers"]["X-RateLimit-Limit"] == "30"
    answers = [
        protocol(url_event(f"{V1}/acme/vpc/aws/versions", "nope"))["statusCode"] for _ in range(31)
    ]
    assert answers[:30] == [401] * 30 and answers[30] == 429
    other = url_event(f"{V1}/acme/vpc/aws/versions", "nope", source_ip="203.0.113.9")
    assert protocol(other)["statusCode"] == 401


def test_download_through_the_function_url_names_the_archive(protocol: Any) -> None:
    response = protocol(url_event(f"{V1}/acme/vpc/aws/1.0.0/download"))
    assert response["statusCode"] == 204
    assert "X-Amz-Signature" in response["headers"]["X-Terraform-Get"]


def test_the_function_url_refuses_what_the_rest_api_refuses(protocol: Any) -> None:
    # No token, a wrong token: the app's own authentication, as behind the REST API.
    assert protocol(url_event(f"{V1}/acme/vpc/aws/versions", None))["statusCode"] in (401, 404)
    assert protocol(url_event(f"{V1}/acme/vpc/aws/versions", "nope"))["statusCode"] == 401
    # A version that does not exist; a path no route of the function serves (the accounts
    # API is not the protocol function's); a method its route does not take.
    assert protocol(url_event(f"{V1}/acme/vpc/aws/9.9.9/download"))["statusCode"] == 404
    unknown = protocol(url_event("/api/v2/organizations"))
    assert unknown["statusCode"] == 404 and body_of(unknown)["errors"][0]["status"] == "404"
    assert protocol(url_event(f"{V1}/acme/vpc/aws/versions", method="DELETE"))["statusCode"] == 405


def test_routes_match_as_api_gateway_matches_them() -> None:
    routes = [
        "/api/registry/v1/modules/{namespace}/{name}/{provider}",
        "/api/registry/v1/modules/{namespace}/{name}/{provider}/versions",
        "/api/registry/v1/modules/{namespace}/{name}/{provider}/{version}",
        "/api/registry/v1/modules/search",
        "/files/{path+}",
    ]
    # Literal segments win over parameters ("versions" is not a version).
    assert match_route(routes, f"{V1}/acme/vpc/aws/versions") == (routes[1], _params())
    assert match_route(routes, f"{V1}/acme/vpc/aws/1.0.0") == (
        routes[2],
        {**_params(), "version": "1.0.0"},
    )
    # Parameters are decoded; a greedy one takes the rest of the path.
    assert match_route(routes, f"{V1}/ac%2Dme/vpc/aws")[1]["namespace"] == "ac-me"  # type: ignore[index]
    assert match_route(routes, "/files/a/b/c") == (routes[4], {"path": "a/b/c"})
    assert match_route(routes, f"{V1}/acme") is None
    assert match_route(routes, f"{V1}/acme/vpc/aws/1.0.0/extra/more") is None


def _params() -> dict[str, str]:
    return {"namespace": "acme", "name": "vpc", "provider": "aws"}


@pytest.fixture
def protocol_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("REGISTRY_PROTOCOL_URL", URL + "/")
    get_settings.cache_clear()
    yield
    monkeypatch.delenv("REGISTRY_PROTOCOL_URL")
    get_settings.cache_clear()


def test_discovery_names_the_protocol_url_for_modules_only(api: Api, protocol_url: None) -> None:
    document = api.get("/.well-known/terraform.json").json
    assert document["modules.v1"] == f"{URL}{V1}/"
    # Everything else stays on the API's own host (relative to the discovery document).
    assert document["providers.v1"] == "/api/registry/v1/providers/"
    assert document["tfe.v2"] == "/api/v2/"


def test_discovery_without_a_protocol_url_is_relative(api: Api) -> None:
    assert api.get("/.well-known/terraform.json").json["modules.v1"] == f"{V1}/"


# ----- the template -----------------------------------------------------------------------------


def test_only_the_protocol_function_has_a_url_and_only_discovery_names_it() -> None:
    from infrastructure.template import merge_template

    template = merge_template()
    resources = template["Resources"]
    urls = {name: r for name, r in resources.items() if r.get("Type") == "AWS::Lambda::Url"}
    assert list(urls) == ["ProtocolFunctionUrl"]
    url = urls["ProtocolFunctionUrl"]
    assert url["Condition"] == "HasProtocolFunctionUrl"
    assert url["Properties"]["TargetFunctionArn"] == {"Fn::GetAtt": ["ProtocolFunction", "Arn"]}
    # The app authenticates every request itself; the URL answers as one REST response.
    assert url["Properties"]["AuthType"] == "NONE"
    assert url["Properties"]["InvokeMode"] == "BUFFERED"
    granted = {
        r["Properties"]["Action"]
        for r in resources.values()
        if r.get("Type") == "AWS::Lambda::Permission"
        and r["Properties"]["FunctionName"] == {"Ref": "ProtocolFunction"}
        and r["Properties"]["Principal"] == "*"
    }
    assert granted == {"lambda:InvokeFunctionUrl", "lambda:InvokeFunction"}
    # Discovery (the meta function) is told the URL; no other function is (the protocol
    # function's own URL cannot be in its environment: it would depend on itself).
    told = {
        name
        for name, r in resources.items()
        if "REGISTRY_PROTOCOL_URL"
        in r.get("Properties", {}).get("Environment", {}).get("Variables", {})
    }
    assert told == {"MetaFunction"}
    assert template["Parameters"]["ProtocolUrlEnabled"]["Default"] == "true"
    # No API Gateway throttling in front of the URL: the function's instances can be capped.
    assert template["Parameters"]["ProtocolConcurrency"]["Default"] == 0
    capped = resources["ProtocolFunction"]["Properties"]["ReservedConcurrentExecutions"]
    assert capped["Fn::If"][:2] == ["HasProtocolConcurrency", {"Ref": "ProtocolConcurrency"}]
    assert "ProtocolFunctionUrl" in template["Outputs"]
