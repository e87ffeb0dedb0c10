"""JSON:API request documents in, resource documents out.

Request attributes are parsed with pydantic models whose fields are snake_case and accept
both the kebab-case names of the API and the snake_case aliases pytfe sends. Unknown
attributes are ignored; ``null`` or an empty body counts as "no attributes". Their base,
``Attributes``, lives in ``chalicelib.core.api.attributes``: this module does not load pydantic.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from chalice.app import Response

from chalicelib.core.api import bounds
from chalicelib.core.api.bounds import utf8_length
from chalicelib.core.api.errors import JSONAPI, BadRequest, Unprocessable
from chalicelib.core.api.names import kebab

if TYPE_CHECKING:
    from chalicelib.core.api.attributes import Attributes


A = TypeVar("A", bound="Attributes")


# No request document of this API nests deeper than a handful of levels; bounding it keeps
# every later walk over the body (validation, rendering) far from Python's recursion limit.
MAX_JSON_DEPTH = 32


def load_json(raw: bytes | str | None) -> Any:
    """The request body as JSON; an empty body is ``None``. Bad JSON, and JSON nested deeper
    than ``MAX_JSON_DEPTH``, is a 400."""
    if raw is None:
        return None
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    if not text.strip():
        return None
    too_deep = BadRequest(f"request body nests deeper than {MAX_JSON_DEPTH} levels")
    try:
        body = json.loads(text)
    except ValueError as exc:
        raise BadRequest(f"request body is not valid JSON: {exc}") from None
    except RecursionError:  # the decoder gives up around a thousand levels
        raise too_deep from None
    if json_depth(body) > MAX_JSON_DEPTH:
        raise too_deep
    return body


def json_depth(value: Any) -> int:
    """How deep arrays and objects nest in ``value`` (a scalar is 0), without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        )
        if children is None:
            continue
        deepest = max(deepest, depth)
        if depth <= MAX_JSON_DEPTH:
            stack.extend((child, depth + 1) for child in children)
    return deepest


def _data_object(body: Any, *, required: bool) -> dict[str, Any]:
    if body is None or (isinstance(body, dict) and body.get("data") is None):
        if required:
            raise Unprocessable("the request document needs a data object", pointer="/data")
        return {}
    if not isinstance(body, dict):
        raise Unprocessable("the request document must be a JSON object", pointer="")
    data = body["data"]
    if not isinstance(data, dict):
        raise Unprocessable("data must be an object", pointer="/data")
    return data


def check_type(data: dict[str, Any], expected: str | None, *, lenient: bool) -> None:
    """Check ``data.type``. Lenient mode accepts a missing/empty type (go-tfe's singletons).
    Unchecked or not, a type is at most ``MAX_ID_LENGTH`` characters."""
    given = data.get("type")
    if isinstance(given, str) and len(given) > MAX_ID_LENGTH:
        raise Unprocessable(f"data.type: at most {MAX_ID_LENGTH} characters", pointer="/data/type")
    if expected is None:
        return
    if lenient and given in (None, "", expected):
        return
    if given is None:
        raise Unprocessable(f"data.type is required and must be {expected!r}", pointer="/data/type")
    if given != expected:
        raise Unprocessable(f"data.type must be {expected!r}, not {given!r}", pointer="/data/type")


def parse_attributes(
    body: Any,
    model: type[A],
    *,
    type_: str | None = None,
    lenient_type: bool = False,
    required: bool = True,
) -> A:
    """Validate ``data.type`` and ``data.attributes`` of a request document into ``model``."""
    data = _data_object(body, required=required)
    if data:
        check_type(data, type_, lenient=lenient_type)
    attributes = data.get("attributes")
    if attributes is None:
        attributes = {}
    if not isinstance(attributes, dict):
        raise Unprocessable("attributes must be an object", pointer="/data/attributes")
    return validate(model, attributes, pointer_prefix="/data/attributes")


def validate(model: type[A], values: dict[str, Any], *, pointer_prefix: str) -> A:
    # The models' base (chalicelib.core.api.attributes) holds pydantic, about 40 ms of a cold
    # start: imported here, where a body is first validated, not by every function.
    from pydantic import ValidationError

    try:
        return model.model_validate(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        path = "/".join(kebab(str(part)) for part in first["loc"])
        name = path or "attributes"
        message = first["msg"]
        if first["type"] == "missing":
            message = f"{name} is required"
        elif first["type"] == "too_long":  # an array over its bound
            bound, given = first["ctx"]["max_length"], first["ctx"].get("actual_length")
            message = f"{name}: at most {bound} items per request" + (
                f", not {given}" if given is not None else ""
            )
        elif first["type"] == "string_too_long":
            message = f"{name}: at most {first['ctx']['max_length']} characters"
        elif first["type"] == "string_too_many_bytes":  # see core.api.attributes
            message = f"{name}: at most {first['ctx']['max_length']} bytes in UTF-8"
        elif first["type"].endswith("_type"):
            message = f"{name}: {message.lower()}"
        else:
            message = f"{name}: {message}"
        raise Unprocessable(message, pointer=f"{pointer_prefix}/{path}".rstrip("/")) from None


# A resource id in a relationship body (tags, workspaces, usernames): ids here are far shorter.
MAX_ID_LENGTH = 255


def relationship_list(
    body: Any, *, type_: str | None = None, max_items: int | None = None
) -> list[dict[str, Any]]:
    """``data`` as an array of resource identifiers (``{type, id}``) or tag-like objects.

    ``max_items`` bounds the array: each element costs the handler a write or more, so a
    longer one is a 422 naming the bound, checked before anything is read or written."""
    if not isinstance(body, dict) or not isinstance(body.get("data"), list):
        raise Unprocessable("data must be an array", pointer="/data")
    data = body["data"]
    if max_items is not None and len(data) > max_items:
        raise Unprocessable(
            f"at most {max_items} {type_ or 'items'} per request, not {len(data)}",
            pointer="/data",
        )
    items: list[dict[str, Any]] = []
    for index, item in enumerate(data):
        if not isinstance(item, dict):
            raise Unprocessable("each element of data must be an object", pointer=f"/data/{index}")
        if type_ is not None and item.get("type") not in (type_, None, ""):
            raise Unprocessable(
                f"type must be {type_!r}, not {item.get('type')!r}", pointer=f"/data/{index}/type"
            )
        if isinstance(item.get("id"), str) and len(item["id"]) > MAX_ID_LENGTH:
            raise Unprocessable(
                f"id is longer than {MAX_ID_LENGTH} characters", pointer=f"/data/{index}/id"
            )
        attributes = item.get("attributes")
        name = attributes.get("name") if isinstance(attributes, dict) else None
        if isinstance(name, str) and utf8_length(name) > bounds.NAME:
            raise Unprocessable(
                f"name: at most {bounds.NAME} bytes in UTF-8",
                pointer=f"/data/{index}/attributes/name",
            )
        items.append(item)
    return items


def resource(
    type_: str,
    id_: str,
    attributes: dict[str, Any],
    *,
    relationships: dict[str, Any] | None = None,
    links: dict[str, Any] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {"id": id_, "type": type_, "attributes": attributes}
    if relationships is not None:
        out["relationships"] = relationships
    if links is not None:
        out["links"] = links
    return out


def to_one(type_: str, id_: str | None) -> dict[str, Any]:
    return {"data": {"id": id_, "type": type_} if id_ is not None else None}


def identifiers(type_: str, ids: Iterable[str]) -> list[dict[str, str]]:
    """Resource identifiers of one type: ``[{"id": ..., "type": type_}, ...]``."""
    return [{"id": id_, "type": type_} for id_ in ids]


def to_many(
    type_: str, ids: Iterable[str], *, links: dict[str, str] | None = None
) -> dict[str, Any]:
    """A to-many relationship: ``{"data": [{"id": ..., "type": type_}, ...]}``, and its
    ``links`` when given."""
    relation: dict[str, Any] = {"data": identifiers(type_, ids)}
    if links is not None:
        relation["links"] = links
    return relation


# ----- compound documents (``?include=``) ----------------------------------------------------

# An include's loader: the primary models of a response -> the related resources, rendered.
Includer = Callable[[Sequence[Any]], Iterable[dict[str, Any]]]


def parse_include(values: Iterable[str], supported: Iterable[str]) -> tuple[str, ...] | None:
    """The include names a request asks for, from its ``include`` query values.

    Each value is a comma-separated list; names are compared in kebab-case (TFE accepts
    ``organization_memberships`` for ``organization-memberships``). Each name comes once, in
    the order asked. ``None`` when nothing is asked (no parameter, or only empty names). A
    name not in ``supported`` is a 400 naming it, as JSON:API requires.
    """
    asked: list[str] = []
    for value in values:
        for part in value.split(","):
            name = kebab(part.strip())
            if name and name not in asked:
                asked.append(name)
    if not asked:
        return None
    allowed = {kebab(name) for name in supported}
    for name in asked:
        if name not in allowed:
            served = ", ".join(sorted(allowed)) if allowed else "none"
            raise BadRequest(
                f"the server does not support inclusion of '{name}' (supported here: {served})",
                parameter="include",
                title="invalid include parameter",
            )
    return tuple(asked)


def collect_included(
    primary: Sequence[Any], asked: Sequence[str] | None, includers: Mapping[str, Includer]
) -> list[dict[str, Any]] | None:
    """The ``included`` array of a compound document, or ``None`` when nothing was asked.

    ``includers`` maps every include name the route declares to its loader; each asked one
    is called once with all of ``primary`` (so a list loads its related resources in one
    go). Every (type, id) appears once, the first rendering kept: in the order of ``asked``,
    then the order each loader returns.
    """
    if asked is None:
        return None
    seen: set[tuple[str, str]] = set()
    out: list[dict[str, Any]] = []
    for name in asked:
        for item in includers[name](primary):
            key = (item["type"], item["id"])
            if key not in seen:
                seen.add(key)
                out.append(item)
    return out


def _identities(data: Any) -> set[tuple[str, str]]:
    items = data if isinstance(data, list) else [data]
    return {(i["type"], i["id"]) for i in items if isinstance(i, dict) and "type" in i}


def document(
    data: Any, status: int = 200, *, included: list[dict[str, Any]] | None = None, **top: Any
) -> Response:
    """A JSON:API document. ``included`` (from ``collect_included``) is left out when it is
    ``None`` (no include asked) and is ``[]`` when one was asked and nothing is related; a
    resource already in ``data`` is not repeated there."""
    body = {"data": data, **{k: v for k, v in top.items() if v is not None}}
    if included is not None:
        primary = _identities(data)
        body["included"] = [i for i in included if (i["type"], i["id"]) not in primary]
    return Response(body=json.dumps(body), status_code=status, headers={"Content-Type": JSONAPI})


def no_content() -> Response:
    return Response(body="", status_code=204, headers={})
