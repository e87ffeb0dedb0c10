"""Building the OpenAPI 3.1 document from the routes' registrations (``openapi.SPECS``).

Kept apart from ``chalicelib.core.api.openapi`` (what ``route()`` records, loaded by every
Lambda function) because only the generator (``python -m infrastructure.openapi``) and the
tests build the document.

``build_document(app)`` walks the Chalice route table (the routes really served, with their
path parameters) and turns each one's spec into an operation: request bodies as JSON:API
documents whose ``data.attributes`` schema is the pydantic model's JSON schema (validation
mode, so properties carry the kebab-case names clients send), query parameters, bearer
security, the success responses the route declares and the error responses every route may
give (JSON:API error documents; the registry protocol's ``{"errors": [...]}`` there).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from chalicelib.core.api import bounds
from chalicelib.core.api.attributes import Attributes
from chalicelib.core.api.errors import JSONAPI
from chalicelib.core.api.jsonapi import MAX_ID_LENGTH
from chalicelib.core.api.openapi import (
    METHODS,
    SPECS,
    Body,
    Payload,
    Relationships,
    Reply,
    RouteSpec,
)

OPENAPI_VERSION = "3.1.0"
JSON = "application/json"
HTML = "text/html"
SCIM = "application/scim+json"
COMPONENT = "#/components/schemas/"


ERRORS: dict[int, str] = {
    400: "Malformed request: invalid JSON, a body nested too deep, an include not served here.",
    401: "Missing or invalid token.",
    403: "Forbidden on this instance (e.g. public modules on the self-hosted edition).",
    404: "Not found, or not visible to the caller.",
    409: "A concurrent change got in the way; retry.",
    415: "The request body's media type is not accepted here.",
    422: "Invalid attributes, relationships or query parameters (`source` says which).",
    429: "Over the API rate limit; `Retry-After` says when to retry.",
    500: "The outside server answered with an error.",
    502: "An outside service (VCS host, public registry, SMS provider) failed or refused.",
    504: "An outside service did not answer in time.",
}
# Every operation may answer these (the rate limiter and the wrapper stand before every
# handler; a caller without access gets 404).
COMMON_ERRORS = (400, 403, 404, 409, 415, 422, 429)
# The security schemes of a token in the Authorization header: a bad or missing one is a 401
# (a page without a session redirects to the sign-in page instead).
TOKEN_SCHEMES = ("bearerAuth", "scimToken")

STRING = {"type": "string"}
OBJECT = {"type": "object"}
NULLABLE_STRING = {"type": ["string", "null"]}
ID = {"type": "string", "maxLength": MAX_ID_LENGTH}
# A longer path parameter names nothing: a 404 before the handler (``http.check_lengths``;
# the bound is in UTF-8 bytes).
PATH_PARAMETER = {
    "type": "string",
    "maxLength": bounds.PATH_PARAMETER,
    "x-max-bytes": bounds.PATH_PARAMETER,
}

BASE_SCHEMAS: dict[str, Any] = {
    "JsonApiResource": {
        "type": "object",
        "required": ["id", "type"],
        "properties": {
            "id": STRING,
            "type": STRING,
            "attributes": OBJECT,
            "relationships": OBJECT,
            "links": OBJECT,
            "meta": OBJECT,
        },
    },
    "JsonApiDocument": {
        "description": "A JSON:API document: one resource, a page of resources, or null.",
        "type": "object",
        "required": ["data"],
        "properties": {
            "data": {
                "anyOf": [
                    {"$ref": COMPONENT + "JsonApiResource"},
                    {"type": "array", "items": {"$ref": COMPONENT + "JsonApiResource"}},
                    {"type": "null"},
                ]
            },
            "included": {"type": "array", "items": {"$ref": COMPONENT + "JsonApiResource"}},
            "links": {"type": "object", "additionalProperties": NULLABLE_STRING},
            "meta": OBJECT,
        },
    },
    "JsonApiErrors": {
        "description": "A JSON:API error document.",
        "type": "object",
        "required": ["errors"],
        "properties": {
            "errors": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "required": ["status", "title"],
                    "properties": {
                        "status": {"type": "string", "pattern": "^[1-5][0-9][0-9]$"},
                        "title": STRING,
                        "detail": STRING,
                        "source": {
                            "type": "object",
                            "properties": {"pointer": STRING, "parameter": STRING},
                        },
                    },
                },
            }
        },
    },
    "RegistryErrors": {
        "description": "The registry protocol's error document.",
        "type": "object",
        "required": ["errors"],
        "properties": {"errors": {"type": "array", "minItems": 1, "items": STRING}},
    },
    "ScimError": {
        "description": "A SCIM 2.0 error document (RFC 7644 section 3.12).",
        "type": "object",
        "required": ["schemas", "status"],
        "properties": {
            "schemas": {"type": "array", "items": STRING},
            "status": {"type": "string", "pattern": "^[1-5][0-9][0-9]$"},
            "scimType": STRING,
            "detail": STRING,
        },
    },
}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": COMPONENT + name}


def _type_schema(body: Body) -> dict[str, Any]:
    if body.type_ is None:
        return {"type": "string", "maxLength": MAX_ID_LENGTH, "description": "not checked"}
    if body.type_check == "strict":
        return {"type": "string", "const": body.type_}
    if body.type_check == "lenient":
        return {"enum": [body.type_, "", None], "description": "may be left out or empty"}
    return {
        "type": "string",
        "maxLength": MAX_ID_LENGTH,
        "description": f"{body.type_!r}; not checked",
    }


def _attributes_document(body: Body, attributes: Mapping[str, Any]) -> dict[str, Any]:
    has_required = bool(body.model.model_json_schema(mode="validation").get("required"))
    data: dict[str, Any] = {
        "type": "object",
        "properties": {"type": _type_schema(body), "attributes": dict(attributes)},
    }
    required = (["type"] if body.type_check == "strict" and body.type_ else []) + (
        ["attributes"] if has_required else []
    )
    if required:
        data["required"] = required
    document: dict[str, Any] = {"type": "object", "properties": {"data": data}}
    if body.required:
        document["required"] = ["data"]
    return document


def _relationships_document(body: Relationships) -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "object",
        "properties": {"type": {"type": "string", "const": body.type_}, "id": ID},
    }
    if body.by_name:
        item["properties"]["attributes"] = {
            "type": "object",
            "required": ["name"],
            "properties": {"name": {"type": "string", "maxLength": bounds.NAME}},
        }
        item["anyOf"] = [{"required": ["id"]}, {"required": ["attributes"]}]
    else:
        item["required"] = ["id"]
    data = {"type": "array", "maxItems": body.max_items, "items": item}
    return {"type": "object", "required": ["data"], "properties": {"data": data}}


def _request_body(spec: RouteSpec, attributes: dict[type[Attributes], Any]) -> dict[str, Any]:
    body = spec.body
    if isinstance(body, Payload):
        schema = dict(body.schema or OBJECT)
        content = {media: {"schema": schema} for media in body.media_types}
        return {"required": True, "description": body.description, "content": content}
    if isinstance(body, Body):
        schema = _attributes_document(body, attributes[body.model])
        required = body.required
        description = ""
    else:
        assert body is not None
        schema = _relationships_document(body)
        required = True
        description = body.description
    out: dict[str, Any] = {
        "required": required,
        "content": {media: {"schema": schema} for media in spec.content_types},
    }
    if description:
        out["description"] = description
    return out


def _query_parameters(spec: RouteSpec) -> list[dict[str, Any]]:
    params: list[dict[str, Any]] = []
    if spec.includes:
        params.append(
            {
                "name": "include",
                "in": "query",
                "description": "related resources to include (comma-separated)",
                "style": "form",
                "explode": False,
                "schema": {
                    "type": "array",
                    "uniqueItems": True,
                    "items": {"type": "string", "enum": list(spec.includes)},
                },
            }
        )
    for param in spec.query:
        params.append(
            {
                "name": param.name,
                "in": "query",
                "description": param.description,
                "required": param.required,
                "schema": param.documented_schema,
            }
        )
    return params


def _success(spec: RouteSpec, reply: Reply) -> dict[str, Any]:
    out: dict[str, Any] = {"description": reply.description or _SUCCESS.get(reply.status, "OK")}
    schema: Mapping[str, Any] | None = reply.schema
    if schema is None and spec.jsonapi and reply.status < 300 and reply.status != 204:
        schema = _ref("JsonApiDocument")
    if schema is not None and not reply.empty:
        media = reply.media_type or (JSONAPI if spec.jsonapi else JSON)
        out["content"] = {media: {"schema": dict(schema)}}
    if reply.headers:
        out["headers"] = {
            name: {"description": text, "required": True, "schema": STRING}
            for name, text in reply.headers.items()
        }
    return out


_SUCCESS = {200: "OK", 201: "Created", 202: "Accepted", 204: "No content", 302: "Found"}


def _error_response(status: int, style: str, description: str = "") -> dict[str, Any]:
    """An error response in one of the three styles: ``jsonapi``, ``protocol`` (the registry
    protocol's ``{"errors": [...]}``) or ``html`` (a web page's error page, or a JSON:API
    document when the framework refuses the request before the page runs)."""
    if style == "protocol":
        content = {JSON: {"schema": _ref("RegistryErrors")}}
    elif style == "scim":  # or JSON:API when the framework refuses the request first
        content = {SCIM: {"schema": _ref("ScimError")}, JSONAPI: {"schema": _ref("JsonApiErrors")}}
    else:
        content = {JSONAPI: {"schema": _ref("JsonApiErrors")}}
        if style == "html":
            content = {HTML: {"schema": STRING}, **content}
    out: dict[str, Any] = {"description": description or ERRORS[status], "content": content}
    if status == 429:
        out["headers"] = {"Retry-After": {"description": "seconds", "schema": STRING}}
    return out


_ERROR_PREFIX = {
    "jsonapi": "Error",
    "protocol": "RegistryError",
    "html": "PageError",
    "scim": "ScimError",
}


def _error_style(spec: RouteSpec) -> str:
    if spec.html_errors:
        return "html"
    if spec.error_style:
        return spec.error_style
    return "protocol" if spec.protocol_errors else "jsonapi"


def _error_name(status: int, style: str) -> str:
    return f"{_ERROR_PREFIX[style]}{status}"


def _error(spec: RouteSpec, status: int) -> dict[str, Any]:
    """The shared response of that status (``components/responses``), or the route's own
    when it describes the status itself."""
    style = _error_style(spec)
    if spec.errors.get(status):
        return _error_response(status, style, spec.errors[status])
    return {"$ref": "#/components/responses/" + _error_name(status, style)}


def _responses(spec: RouteSpec) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for reply in spec.success:
        out[str(reply.status)] = _success(spec, reply)
    statuses = set(COMMON_ERRORS) | set(spec.errors)
    if spec.scheme in TOKEN_SCHEMES:
        statuses.add(401)
    for status in sorted(statuses):
        out.setdefault(str(status), _error(spec, status))
    return out


def _shared_errors(specs: Iterable[RouteSpec]) -> dict[str, Any]:
    """``components/responses``: every error response an operation refers to."""
    used = {
        (int(status), _error_style(spec))
        for spec in specs
        for status, response in _responses(spec).items()
        if "$ref" in response
    }
    return {_error_name(s, p): _error_response(s, p) for s, p in sorted(used)}


def _operation_id(spec: RouteSpec, taken: set[str]) -> str:
    base = f"{spec.tag}.{spec.handler}"
    candidate, n = base, 1
    while candidate in taken:
        n += 1
        candidate = f"{base}_{n}"
    taken.add(candidate)
    return candidate


def _attribute_schemas(
    specs: Iterable[RouteSpec],
) -> tuple[dict[type[Attributes], Any], dict[str, Any]]:
    """Each body model's schema (a ``$ref``), and the component schemas they need."""
    from pydantic.json_schema import models_json_schema  # only when building the document

    models = sorted(
        {s.body.model for s in specs if isinstance(s.body, Body)},
        key=lambda m: (m.__module__, m.__qualname__),
    )
    if not models:
        return {}, {}
    refs, definitions = models_json_schema(
        [(model, "validation") for model in models], ref_template=COMPONENT + "{model}"
    )
    return {model: refs[(model, "validation")] for model in models}, definitions.get("$defs", {})


def build_document(app: Any, *, title: str, version: str, description: str = "") -> dict[str, Any]:
    """The OpenAPI 3.1 document of every route of ``app`` (a Chalice app whose routes were
    all registered through ``route()``; a route that was not is an error)."""
    served = [
        (path, method, entry)
        for path, methods in sorted(app.routes.items())
        for method, entry in sorted(methods.items(), key=lambda m: METHODS.index(m[0]))
    ]
    missing = [f"{m} {p}" for p, m, _ in served if (p, m) not in SPECS]
    if missing:
        raise LookupError(f"routes not registered through route(): {missing}")
    specs = [SPECS[(path, method)] for path, method, _ in served]
    attributes, definitions = _attribute_schemas(specs)
    paths: dict[str, dict[str, Any]] = {}
    taken: set[str] = set()
    tags: dict[str, None] = {}
    for (path, method, entry), spec in zip(served, specs, strict=True):
        tags[spec.tag] = None
        operation: dict[str, Any] = {
            "operationId": _operation_id(spec, taken),
            "summary": spec.summary,
            "tags": [spec.tag],
        }
        if spec.description:
            operation["description"] = spec.description
        parameters = [
            {"name": name, "in": "path", "required": True, "schema": PATH_PARAMETER}
            for name in entry.view_args
        ] + _query_parameters(spec)
        if parameters:
            operation["parameters"] = parameters
        if spec.body is not None:
            operation["requestBody"] = _request_body(spec, attributes)
        operation["responses"] = _responses(spec)
        operation["security"] = [{spec.scheme: []}] if spec.scheme else []
        operation["x-access"] = spec.access
        paths.setdefault(path, {})[method.lower()] = operation
    info: dict[str, Any] = {"title": title, "version": version}
    if description:
        info["description"] = description
    return {
        "openapi": OPENAPI_VERSION,
        "info": info,
        "servers": [{"url": "/"}],
        "tags": [{"name": name} for name in sorted(tags)],
        "paths": paths,
        "components": {
            "responses": _shared_errors(specs),
            "securitySchemes": {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "a user, team or organization API token (a site admin's "
                    "user token where the operation's x-access is site-admin)",
                },
                "scimToken": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "a SCIM token (/api/v2/admin/scim-tokens), never an API token",
                },
                "sessionCookie": {
                    "type": "apiKey",
                    "in": "cookie",
                    "name": "tfe_registry_session",
                    "description": "the web UI's session, opened by signing in",
                },
            },
            "schemas": {**BASE_SCHEMAS, **dict(sorted(definitions.items()))},
        },
    }
