"""What SCIM 2.0 itself defines, independent of storage: the filter language (RFC 7644
section 3.4.2.2), PATCH paths (section 3.5.2), paging parameters, and the discovery
documents (ServiceProviderConfig, ResourceTypes, Schemas).

Attribute names are case-insensitive, as the RFC says. Filters are evaluated against the
rendered resources; ``userName``, ``emails``, ``displayName`` ... compare case-insensitively,
``id`` and ``externalId`` exactly (their ``caseExact`` in RFC 7643).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chalicelib.scim.errors import ScimError, bad_request

USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group"
ENTERPRISE_SCHEMA = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
LIST_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
PATCH_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
SPC_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"
RESOURCE_TYPE_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:ResourceType"
SCHEMA_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Schema"

DEFAULT_COUNT = 100
MAX_COUNT = 200
MAX_FILTER_LENGTH = 1000
MAX_FILTER_DEPTH = 16
MAX_PATH_LENGTH = 500
# PatchOp ``Operations`` per request: identity providers send one or a few (a Group's member
# changes ride in one operation's ``value``). More is a 413, as RFC 7644 section 3.7.3 answers
# a bulk request over its ``maxOperations``, before anything is read or written.
MAX_OPERATIONS = 100
CASE_EXACT = {"id", "externalid"}


# ----- paging ----------------------------------------------------------------------------------


def _int(query: dict[str, str], name: str, default: int) -> int:
    raw = query.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise bad_request(f"{name} must be an integer, not {raw!r}") from None


def paging(query: dict[str, str]) -> tuple[int, int]:
    """``(startIndex, count)``: 1-based start (below 1 counts as 1), count capped at 200
    (negative counts as 0: only ``totalResults``)."""
    start = max(1, _int(query, "startIndex", 1))
    count = min(MAX_COUNT, max(0, _int(query, "count", DEFAULT_COUNT)))
    return start, count


def list_response(resources: list[dict[str, Any]], start: int, count: int) -> dict[str, Any]:
    page = resources[start - 1 : start - 1 + count]
    return {
        "schemas": [LIST_SCHEMA],
        "totalResults": len(resources),
        "startIndex": start,
        "itemsPerPage": len(page),
        "Resources": page,
    }


# ----- filters ---------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<lparen>\() | (?P<rparen>\)) | (?P<lbracket>\[) | (?P<rbracket>\]) |
        (?P<string>"(?:[^"\\]|\\.)*") |
        (?P<word>[A-Za-z0-9_$.:\-]+)
    )""",
    re.VERBOSE,
)
OPERATORS = {"eq", "ne", "co", "sw", "ew", "gt", "ge", "lt", "le", "pr"}


@dataclass(frozen=True)
class Comparison:
    path: str  # lower-cased, dotted: "username", "name.givenname", "emails.value"
    op: str
    value: Any = None


@dataclass(frozen=True)
class Logical:
    op: str  # "and" | "or"
    left: Any
    right: Any


@dataclass(frozen=True)
class Not:
    inner: Any


@dataclass(frozen=True)
class ValuePath:
    """``emails[type eq "work"]``: some element of ``attribute`` matches ``inner``."""

    attribute: str
    inner: Any


Filter = Comparison | Logical | Not | ValuePath


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    position = 0
    text = text.rstrip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if not match or match.end() == position:
            raise bad_request(
                f"cannot parse the filter at {text[position:][:20]!r}", "invalidFilter"
            )
        kind = match.lastgroup or ""
        out.append((kind, match.group(kind)))
        position = match.end()
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.i = 0
        self.depth = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        token = self.peek()
        if token is None:
            raise bad_request("the filter ends too early", "invalidFilter")
        self.i += 1
        return token

    def keyword(self, *words: str) -> str | None:
        token = self.peek()
        if token and token[0] == "word" and token[1].lower() in words:
            self.i += 1
            return token[1].lower()
        return None

    def expression(self) -> Filter:
        left = self.term()
        while self.keyword("or"):
            left = Logical("or", left, self.term())
        return left

    def term(self) -> Filter:
        left = self.factor()
        while self.keyword("and"):
            left = Logical("and", left, self.factor())
        return left

    def nested(self) -> Filter:
        self.depth += 1
        if self.depth > MAX_FILTER_DEPTH:
            raise bad_request("the filter nests too deep", "invalidFilter")
        inner = self.expression()
        self.depth -= 1
        return inner

    def factor(self) -> Filter:
        if self.keyword("not"):
            self.depth += 1
            if self.depth > MAX_FILTER_DEPTH:
                raise bad_request("the filter nests too deep", "invalidFilter")
            inner: Filter = Not(self.factor())
            self.depth -= 1
            return inner
        kind, text = self.take()
        if kind == "lparen":
            inner = self.nested()
            if self.take()[0] != "rparen":
                raise bad_request("a '(' of the filter is not closed", "invalidFilter")
            return inner
        if kind != "word":
            raise bad_request(f"expected an attribute in the filter, not {text!r}", "invalidFilter")
        path = text.lower()
        if self.peek() and self.peek()[0] == "lbracket":  # type: ignore[index]
            self.take()
            inner = self.nested()
            if self.take()[0] != "rbracket":
                raise bad_request("a '[' of the filter is not closed", "invalidFilter")
            return ValuePath(path, inner)
        op_kind, op = self.take()
        op = op.lower()
        if op_kind != "word" or op not in OPERATORS:
            raise bad_request(f"unsupported filter operator {op!r}", "invalidFilter")
        if op == "pr":
            return Comparison(path, op)
        value_kind, raw = self.take()
        return Comparison(path, op, _literal(value_kind, raw))


def _literal(kind: str, raw: str) -> Any:
    if kind == "string":
        body = raw[1:-1]
        return re.sub(r"\\(.)", r"\1", body)
    if kind == "word":
        lowered = raw.lower()
        if lowered in ("true", "false"):
            return lowered == "true"
        if lowered == "null":
            return None
        try:
            return float(raw) if "." in raw else int(raw)
        except ValueError:
            pass
    raise bad_request(
        f"a filter value must be quoted, a number, true, false or null: {raw!r}", "invalidFilter"
    )


def parse_filter(text: str | None) -> Filter | None:
    if text is None or not text.strip():
        return None
    if len(text) > MAX_FILTER_LENGTH:
        raise bad_request("the filter is too long", "invalidFilter")
    parser = _Parser(text)
    result = parser.expression()
    if parser.peek() is not None:
        raise bad_request(f"unexpected {parser.peek()[1]!r} in the filter", "invalidFilter")  # type: ignore[index]
    return result


def _strip_schema(path: str) -> str:
    """``urn:...:User:userName`` -> ``username`` (core schemas only; extensions keep
    their URN as the first step)."""
    for schema in (USER_SCHEMA, GROUP_SCHEMA):
        prefix = schema.lower() + ":"
        if path.startswith(prefix):
            return path[len(prefix) :]
    if path.startswith(ENTERPRISE_SCHEMA.lower() + ":"):
        return ENTERPRISE_SCHEMA.lower() + "." + path[len(ENTERPRISE_SCHEMA) + 1 :]
    return path


def lookup(resource: Any, key: str) -> Any:
    """A member of a JSON object by case-insensitive name."""
    if not isinstance(resource, dict):
        return None
    for name, value in resource.items():
        if name.lower() == key:
            return value
    return None


def _values(resource: Any, path: str) -> list[Any]:
    """Every value at a dotted path; a multi-valued attribute of objects without a sub-
    attribute stands for its elements' ``value``."""
    current: list[Any] = [resource]
    steps = path.split(".") if not path.startswith("urn:") else path.split(".", 1)
    for step in steps:
        found: list[Any] = []
        for item in current:
            value = lookup(item, step)
            if isinstance(value, list):
                found.extend(value)
            elif value is not None:
                found.append(value)
        current = found
    return [lookup(v, "value") if isinstance(v, dict) else v for v in current]


def _compare(actual: Any, op: str, expected: Any, exact: bool) -> bool:
    if op == "pr":
        return actual not in (None, "", [], {})
    if isinstance(actual, bool) or isinstance(expected, bool):
        return op in ("eq", "ne") and ((actual == expected) == (op == "eq"))
    if isinstance(actual, str) and isinstance(expected, str):
        a, b = (actual, expected) if exact else (actual.lower(), expected.lower())
        return {
            "eq": a == b,
            "ne": a != b,
            "co": b in a,
            "sw": a.startswith(b),
            "ew": a.endswith(b),
            "gt": a > b,
            "ge": a >= b,
            "lt": a < b,
            "le": a <= b,
        }[op]
    if op == "eq":
        return actual == expected
    if op == "ne":
        return actual != expected
    return False


def matches(resource: dict[str, Any], node: Filter) -> bool:
    if isinstance(node, Logical):
        if node.op == "and":
            return matches(resource, node.left) and matches(resource, node.right)
        return matches(resource, node.left) or matches(resource, node.right)
    if isinstance(node, Not):
        return not matches(resource, node.inner)
    if isinstance(node, ValuePath):
        elements = lookup(resource, _strip_schema(node.attribute))
        elements = elements if isinstance(elements, list) else [elements] if elements else []
        return any(isinstance(e, dict) and matches(e, node.inner) for e in elements)
    path = _strip_schema(node.path)
    exact = path in CASE_EXACT
    values = _values(resource, path)
    if node.op == "pr":
        return any(_compare(v, "pr", None, exact) for v in values)
    if node.op == "ne":
        return all(_compare(v, "ne", node.value, exact) for v in values)
    return any(_compare(v, node.op, node.value, exact) for v in values)


def simple_equality(node: Filter | None, *attributes: str) -> tuple[str, Any] | None:
    """``(attribute, value)`` when the filter is exactly ``<attribute> eq "value"`` for one of
    ``attributes`` (lower-cased): such filters are answered from an index."""
    if isinstance(node, Comparison) and node.op == "eq" and isinstance(node.value, str):
        path = _strip_schema(node.path)
        if path in attributes:
            return path, node.value
    return None


def select(
    resource: dict[str, Any], attributes: str | None, excluded: str | None
) -> dict[str, Any]:
    """Apply ``attributes`` / ``excludedAttributes`` (top-level names; ``id``, ``schemas``
    and ``meta`` are always returned)."""
    always = {"id", "schemas", "meta"}
    if attributes:
        wanted = {_strip_schema(a.strip().lower()).split(".")[0] for a in attributes.split(",")}
        return {k: v for k, v in resource.items() if k.lower() in wanted | always}
    if excluded:
        dropped = {_strip_schema(a.strip().lower()).split(".")[0] for a in excluded.split(",")}
        return {k: v for k, v in resource.items() if k.lower() not in dropped - always}
    return resource


# ----- PATCH -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Operation:
    op: str  # add | replace | remove
    path: str | None  # as sent
    value: Any


def patch_operations(body: Any) -> list[Operation]:
    """The ``Operations`` of a PatchOp request, checked for shape."""
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object", "invalidSyntax")
    operations = lookup(body, "operations")
    if not isinstance(operations, list) or not operations:
        raise bad_request("Operations must be a non-empty array", "invalidSyntax")
    if len(operations) > MAX_OPERATIONS:
        raise ScimError(
            413, f"at most {MAX_OPERATIONS} Operations per request, not {len(operations)}"
        )
    out = []
    for index, item in enumerate(operations):
        if not isinstance(item, dict):
            raise bad_request(f"Operations[{index}] must be an object", "invalidSyntax")
        op = lookup(item, "op")
        if not isinstance(op, str) or op.lower() not in ("add", "replace", "remove"):
            raise bad_request(
                f"Operations[{index}].op must be add, replace or remove, not {op!r}",
                "invalidSyntax",
            )
        path = lookup(item, "path")
        if path is not None and (not isinstance(path, str) or not path.strip()):
            raise bad_request(f"Operations[{index}].path must be a string", "invalidPath")
        if op.lower() == "remove" and path is None:
            raise bad_request(f"Operations[{index}]: remove needs a path", "noTarget")
        value = lookup(item, "value")
        if op.lower() != "remove" and path is None and not isinstance(value, dict):
            raise bad_request(
                f"Operations[{index}]: without a path, value must be an object", "invalidValue"
            )
        out.append(Operation(op.lower(), path.strip() if path else None, value))
    return out


_PATH = re.compile(
    r"^(?P<attr>(?:urn:[^\[\]]+:)?[A-Za-z$][\w$-]*)(?:\[(?P<filter>.+)\])?(?:\.(?P<sub>[A-Za-z$][\w$-]*))?$"
)


@dataclass(frozen=True)
class Path:
    """A PATCH path: ``attribute[filter].sub`` (each part optional but the attribute).
    ``attribute`` keeps an extension schema's URN (``urn:...:User:department`` becomes
    attribute ``urn:...:User`` and sub ``department``)."""

    attribute: str
    filter: Filter | None
    sub: str | None


def parse_path(text: str) -> Path:
    if len(text) > MAX_PATH_LENGTH:
        raise bad_request("the path is too long", "invalidPath")
    for schema in (USER_SCHEMA, GROUP_SCHEMA):
        if text.lower().startswith(schema.lower() + ":"):
            text = text[len(schema) + 1 :]
    if text.lower().startswith(ENTERPRISE_SCHEMA.lower() + ":"):
        return Path(ENTERPRISE_SCHEMA, None, text[len(ENTERPRISE_SCHEMA) + 1 :])
    match = _PATH.match(text)
    if not match:
        raise bad_request(f"cannot parse the path {text!r}", "invalidPath")
    attribute, sub = match.group("attr"), match.group("sub")
    if "." in attribute:
        attribute, sub = attribute.split(".", 1)[0], attribute.split(".", 1)[1]
    node = parse_filter(match.group("filter")) if match.group("filter") else None
    return Path(attribute, node, sub)


def boolean(value: Any, name: str) -> bool:
    """A SCIM boolean; Microsoft Entra ID sends ``"True"``/``"False"`` strings."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise bad_request(f"{name} must be a boolean")


# ----- discovery -------------------------------------------------------------------------------


def service_provider_config(base: str) -> dict[str, Any]:
    return {
        "schemas": [SPC_SCHEMA],
        "documentationUri": "https://developer.hashicorp.com/terraform/enterprise/api-docs/scim",
        "patch": {"supported": True},
        "bulk": {"supported": False, "maxOperations": 0, "maxPayloadSize": 0},
        "filter": {"supported": True, "maxResults": MAX_COUNT},
        "changePassword": {"supported": False},
        "sort": {"supported": False},
        "etag": {"supported": False},
        "authenticationSchemes": [
            {
                "type": "oauthbearertoken",
                "name": "OAuth Bearer Token",
                "description": "a SCIM token from /api/v2/admin/scim-tokens",
                "primary": True,
            }
        ],
        "meta": {
            "resourceType": "ServiceProviderConfig",
            "location": f"{base}/ServiceProviderConfig",
        },
    }


def _attribute(
    name: str,
    type_: str = "string",
    *,
    required: bool = False,
    multi: bool = False,
    case_exact: bool = False,
    mutability: str = "readWrite",
    uniqueness: str = "none",
    sub: list[dict[str, Any]] | None = None,
    returned: str = "default",
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "type": type_,
        "multiValued": multi,
        "description": name,
        "required": required,
        "caseExact": case_exact,
        "mutability": mutability,
        "returned": returned,
        "uniqueness": uniqueness,
    }
    if sub is not None:
        out["subAttributes"] = sub
    return out


_MULTI = [
    _attribute("value"),
    _attribute("display"),
    _attribute("type"),
    _attribute("primary", "boolean"),
]
_MEMBER = [
    _attribute("value", mutability="immutable"),
    _attribute("display", mutability="readOnly"),
    _attribute("$ref", "reference", mutability="immutable"),
    _attribute("type", mutability="immutable"),
]

SCHEMAS: dict[str, dict[str, Any]] = {
    USER_SCHEMA: {
        "id": USER_SCHEMA,
        "name": "User",
        "description": "User Account",
        "attributes": [
            _attribute("userName", required=True, uniqueness="server"),
            _attribute(
                "name",
                "complex",
                sub=[_attribute(n) for n in ("formatted", "familyName", "givenName", "middleName")],
            ),
            _attribute("displayName"),
            _attribute("nickName"),
            _attribute("title"),
            _attribute("userType"),
            _attribute("preferredLanguage"),
            _attribute("locale"),
            _attribute("timezone"),
            _attribute("active", "boolean"),
            _attribute("emails", "complex", multi=True, sub=_MULTI),
            _attribute("phoneNumbers", "complex", multi=True, sub=_MULTI),
            _attribute("groups", "complex", multi=True, mutability="readOnly", sub=_MEMBER),
        ],
    },
    GROUP_SCHEMA: {
        "id": GROUP_SCHEMA,
        "name": "Group",
        "description": "Group",
        "attributes": [
            _attribute("displayName", required=True),
            _attribute("members", "complex", multi=True, sub=_MEMBER),
        ],
    },
    ENTERPRISE_SCHEMA: {
        "id": ENTERPRISE_SCHEMA,
        "name": "EnterpriseUser",
        "description": "Enterprise User",
        "attributes": [
            _attribute(n)
            for n in ("employeeNumber", "costCenter", "organization", "division", "department")
        ],
    },
}


def schema_documents(base: str) -> list[dict[str, Any]]:
    return [
        {
            "schemas": [SCHEMA_SCHEMA],
            **schema,
            "meta": {"resourceType": "Schema", "location": f"{base}/Schemas/{schema_id}"},
        }
        for schema_id, schema in SCHEMAS.items()
    ]


def resource_types(base: str) -> list[dict[str, Any]]:
    return [
        {
            "schemas": [RESOURCE_TYPE_SCHEMA],
            "id": "User",
            "name": "User",
            "endpoint": "/Users",
            "description": "User Account",
            "schema": USER_SCHEMA,
            "schemaExtensions": [{"schema": ENTERPRISE_SCHEMA, "required": False}],
            "meta": {"resourceType": "ResourceType", "location": f"{base}/ResourceTypes/User"},
        },
        {
            "schemas": [RESOURCE_TYPE_SCHEMA],
            "id": "Group",
            "name": "Group",
            "endpoint": "/Groups",
            "description": "Group",
            "schema": GROUP_SCHEMA,
            "schemaExtensions": [],
            "meta": {"resourceType": "ResourceType", "location": f"{base}/ResourceTypes/Group"},
        },
    ]


Matcher = Callable[[dict[str, Any]], bool]
