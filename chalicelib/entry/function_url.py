"""Lambda function URL (and HTTP API) events for a Chalice app, which only reads REST's.

A function URL invokes its function with the HTTP API's payload format 2.0: no
``resourcePath`` (nothing matched a route: the URL passes every path), lowercased headers,
cookies apart, repeated query parameters joined with commas, and it reads back a 2.0 response
(no ``multiValueHeaders``). Chalice answers only API Gateway REST's proxy event, so
``rest_event`` rewrites the one into the other, matching the raw path against the app's own
routes the way API Gateway would (literal segments before ``{parameters}``), and
``url_response`` rewrites Chalice's answer back. A path no route matches is a 404 as the REST
API's own (template.gateway_responses) is, without reaching a handler.

Why: the registry protocol's ``versions`` and ``download`` are two of the three requests of a
``terraform init`` of one module; behind a function URL they cost no API Gateway request
(``infrastructure.template``: ``ProtocolFunctionUrl``; discovery names it absolutely,
``chalicelib.meta.routes``). Terraform sends the module host's token to whatever URL
discovery names for ``modules.v1``, so authentication and the rate limit are the app's, as
behind the REST API.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qs, unquote

_PARAMETER = re.compile(r"\{([^}]+)\}")
# Payload format 2.0 (function URLs, HTTP APIs); REST's proxy events carry no "version".
PAYLOAD_V2 = "2.0"


def is_url_event(event: Any) -> bool:
    return isinstance(event, dict) and event.get("version") == PAYLOAD_V2 and "rawPath" in event


@functools.cache
def _pattern(route: str) -> re.Pattern[str]:
    """A Chalice route (``/a/{b}/c``, ``/a/{rest+}``) as a regular expression."""
    parts = []
    for segment in route.strip("/").split("/"):
        found = _PARAMETER.fullmatch(segment)
        if not found:
            parts.append(re.escape(segment))
        elif found.group(1).endswith("+"):
            parts.append(f"(?P<{found.group(1)[:-1]}>.+)")
        else:
            parts.append(f"(?P<{found.group(1)}>[^/]+)")
    return re.compile("/" + "/".join(parts) if parts != [""] else "/")


def _specificity(route: str) -> tuple[int, int]:
    """API Gateway prefers literal segments to parameters, and parameters to greedy ones."""
    segments = route.strip("/").split("/")
    literal = sum(1 for s in segments if not _PARAMETER.fullmatch(s))
    greedy = sum(1 for s in segments if s.endswith("+}"))
    return (-literal, greedy)


def match_route(routes: Iterable[str], path: str) -> tuple[str, dict[str, str]] | None:
    """(route, its path parameters, decoded) of the route ``path`` falls on, if any."""
    for route in sorted(routes, key=_specificity):
        found = _pattern(route).fullmatch(path)
        if found:
            return route, {k: unquote(v) for k, v in found.groupdict().items()}
    return None


def rest_event(event: dict[str, Any], routes: Iterable[str]) -> dict[str, Any] | None:
    """The REST proxy event of a payload-2.0 event, or None when no route matches its path."""
    http = event.get("requestContext", {}).get("http", {})
    path = event["rawPath"] or "/"
    matched = match_route(routes, path)
    if matched is None:
        return None
    route, parameters = matched
    headers = dict(event.get("headers") or {})
    if event.get("cookies"):
        headers["cookie"] = "; ".join(event["cookies"])
    multi = parse_qs(event.get("rawQueryString") or "", keep_blank_values=True)
    context = event.get("requestContext", {})
    return {
        "resource": route,
        "path": path,
        "httpMethod": http.get("method", "GET"),
        "headers": headers,
        "multiValueHeaders": {name: [value] for name, value in headers.items()},
        "queryStringParameters": {k: v[-1] for k, v in multi.items()} or None,
        "multiValueQueryStringParameters": multi or None,
        "pathParameters": parameters or None,
        "stageVariables": event.get("stageVariables"),
        "body": event.get("body"),
        "isBase64Encoded": bool(event.get("isBase64Encoded")),
        "requestContext": {
            "resourcePath": route,
            "httpMethod": http.get("method", "GET"),
            "path": path,
            "stage": context.get("stage", "$default"),
            "requestId": context.get("requestId", ""),
            "domainName": context.get("domainName", ""),
            "identity": {
                "sourceIp": http.get("sourceIp"),
                "userAgent": http.get("userAgent"),
            },
        },
    }


def url_response(response: dict[str, Any]) -> dict[str, Any]:
    """A 2.0 response of Chalice's REST one: repeated headers joined (Set-Cookie: cookies)."""
    headers = dict(response.get("headers") or {})
    cookies: list[str] = []
    for name, values in (response.get("multiValueHeaders") or {}).items():
        if name.lower() == "set-cookie":
            cookies.extend(values)
        else:
            headers[name] = ",".join(values)
    out = {
        "statusCode": response["statusCode"],
        "headers": headers,
        "body": response.get("body"),
        "isBase64Encoded": bool(response.get("isBase64Encoded")),
    }
    if cookies:
        out["cookies"] = cookies
    return out


NOT_FOUND = {
    "statusCode": 404,
    "headers": {"Content-Type": "application/vnd.api+json"},
    "body": json.dumps({"errors": [{"status": "404", "title": "not found"}]}),
    "isBase64Encoded": False,
}
