"""JSON:API request documents in, resource documents out.

Request attributes are parsed with pydantic models whose fields are snake_case and accept
both the kebab-case names of the API and the snake_case aliases pytfe sends. Unknown
attributes are ignored; ``null`` or an empty body counts as "no attributes".
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from chalice import Response
from pydantic import AliasChoices, AliasGenerator, BaseModel, ConfigDict, ValidationError

from chalicelib.core.errors import JSONAPI, BadRequest, Unprocessable


def kebab(name: str) -> str:
    return name.replace("_", "-")


def _aliases(field_name: str) -> AliasChoices:
    return AliasChoices(kebab(field_name), field_name)


class Attributes(BaseModel):
    """Base for request attribute models: kebab or snake names, strict JSON types."""

    model_config = ConfigDict(
        alias_generator=AliasGenerator(validation_alias=_aliases),
        extra="ignore",
        strict=True,
        frozen=True,
    )


class NoAttributes(Attributes):
    pass


A = TypeVar("A", bound=Attributes)


def load_json(raw: bytes | str | None) -> Any:
    """The request body as JSON; an empty body is ``None``. Bad JSON is a 400."""
    if raw is None:
        return None
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise BadRequest(f"request body is not valid JSON: {exc}") from None


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
    """Check ``data.type``. Lenient mode accepts a missing/empty type (go-tfe's singletons)."""
    if expected is None:
        return
    given = data.get("type")
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
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        path = "/".join(kebab(str(part)) for part in first["loc"])
        name = path or "attributes"
        message = first["msg"]
        if first["type"] == "missing":
            message = f"{name} is required"
        elif first["type"].endswith("_type"):
            message = f"{name}: {message.lower()}"
        else:
            message = f"{name}: {message}"
        raise Unprocessable(message, pointer=f"{pointer_prefix}/{path}".rstrip("/")) from None


def relationship_list(body: Any, *, type_: str | None = None) -> list[dict[str, Any]]:
    """``data`` as an array of resource identifiers (``{type, id}``) or tag-like objects."""
    if not isinstance(body, dict) or not isinstance(body.get("data"), list):
        raise Unprocessable("data must be an array", pointer="/data")
    items: list[dict[str, Any]] = []
    for index, item in enumerate(body["data"]):
        if not isinstance(item, dict):
            raise Unprocessable("each element of data must be an object", pointer=f"/data/{index}")
        if type_ is not None and item.get("type") not in (type_, None, ""):
            raise Unprocessable(
                f"type must be {type_!r}, not {item.get('type')!r}", pointer=f"/data/{index}/type"
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


def document(data: Any, status: int = 200, **top: Any) -> Response:
    body = {"data": data, **{k: v for k, v in top.items() if v is not None}}
    return Response(body=json.dumps(body), status_code=status, headers={"Content-Type": JSONAPI})


def no_content() -> Response:
    return Response(body="", status_code=204, headers={})
