"""Key/value tag bindings (TFE 2024–25): one place for their rules, storage and shape.

Registry modules, projects and workspaces each keep their bindings on their own item, as a
list of ``{id, key, value}`` maps (``TagBindingsAttribute``); a resource has at most
``MAX_BINDINGS``, so the list stays small. Clients send bindings two ways, both handled here:

* inline in a resource's own create/PATCH, ``data.relationships.tag-bindings.data`` as
  ``[{type: "tag-bindings", attributes: {key, value}}]`` (go-tfe and pytfe put the attributes
  of an id-less related object right into the relationship): it *replaces* the set, ``[]``
  clears it (``from_relationship``, ``replace``);
* as the body of ``PATCH …/tag-bindings``, ``data`` an array of the same objects: it adds or
  updates and never removes (``from_document``, ``merge``).

Effective bindings (``effective``, ``render_effective``: a resource's own plus those it
inherits, its own winning on a key, each inherited one naming its ``Source``) and the list
filter ``filter[tagged][i][key|value]`` (``tagged_filters``, ``satisfies``) are here too; the
caller says what is inherited and from where, so this module stays free of any domain.

The organization ``tags`` API (single-value ``tag-names``) is separate and unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from pynamodb.attributes import ListAttribute, MapAttribute, UnicodeAttribute

from chalicelib.core.api.errors import Unprocessable
from chalicelib.core.api.jsonapi import identifiers, resource
from chalicelib.core.api.openapi import Payload
from chalicelib.core.data.ids import new_id

TYPE = "tag-bindings"
MAX_BINDINGS = 50
MAX_KEY = 128
MAX_VALUE = 256
# Keys under these prefixes are HashiCorp's own in HCP Terraform; TFE refuses them.
RESERVED_PREFIXES = ("hc:", "hcp:")


class Binding(NamedTuple):
    key: str
    value: str


class TagBindingAttribute(MapAttribute[str, Any]):
    """One stored binding; ``id`` stays the same while its key is bound."""

    id = UnicodeAttribute()
    key = UnicodeAttribute()
    value = UnicodeAttribute(default="")

    if TYPE_CHECKING:  # MapAttribute's own __init__ is unannotated

        def __init__(self, *, id: str, key: str, value: str) -> None: ...


def TagBindingsAttribute() -> ListAttribute[TagBindingAttribute]:  # noqa: N802 - reads as an attribute class
    """The attribute a model declares: ``tag_bindings = TagBindingsAttribute()``."""
    return ListAttribute(of=TagBindingAttribute, default=list)


# ----- reading requests ----------------------------------------------------------------------

# The body of ``PATCH …/tag-bindings`` (read with ``from_document``), as the document shows it.
_BINDING_SCHEMA = {
    "type": "object",
    "required": ["attributes"],
    "properties": {
        "type": {"type": "string", "const": TYPE},
        "attributes": {
            "type": "object",
            "required": ["key"],
            "properties": {
                "key": {"type": "string", "minLength": 1, "maxLength": MAX_KEY},
                "value": {"type": ["string", "null"], "maxLength": MAX_VALUE},
            },
        },
    },
}
DOCUMENT = Payload(
    ("application/vnd.api+json", "application/json"),
    "data: an array of {type: tag-bindings, attributes: {key, value}}",
    schema={
        "type": "object",
        "required": ["data"],
        "properties": {
            "data": {"type": "array", "maxItems": MAX_BINDINGS, "items": _BINDING_SCHEMA}
        },
    },
)


def from_relationship(body: Any) -> list[Binding] | None:
    """The bindings of ``data.relationships.tag-bindings`` in a create/PATCH document, or
    ``None`` when the document does not mention them (nothing to change)."""
    data = body.get("data") if isinstance(body, dict) else None
    relationships = data.get("relationships") if isinstance(data, dict) else None
    if not isinstance(relationships, dict) or "tag-bindings" not in relationships:
        return None
    pointer = "/data/relationships/tag-bindings"
    relation = relationships["tag-bindings"]
    if not isinstance(relation, dict) or not isinstance(relation.get("data"), list):
        raise Unprocessable("tag-bindings must be {data: [...]}", pointer=pointer)
    return _bindings(relation["data"], f"{pointer}/data")


def from_document(body: Any) -> list[Binding]:
    """The bindings of a ``PATCH …/tag-bindings`` document: ``data`` an array of them."""
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        raise Unprocessable("data must be an array of tag-bindings", pointer="/data")
    return _bindings(data, "/data")


def _bindings(items: list[Any], pointer: str) -> list[Binding]:
    if len(items) > MAX_BINDINGS:
        raise Unprocessable(
            f"at most {MAX_BINDINGS} tag bindings per resource, not {len(items)}", pointer=pointer
        )
    found: list[Binding] = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        at = f"{pointer}/{index}"
        if not isinstance(item, dict):
            raise Unprocessable("each tag binding must be an object", pointer=at)
        if item.get("type") not in (TYPE, None, ""):
            raise Unprocessable(f"type must be {TYPE!r}", pointer=f"{at}/type")
        attributes = item.get("attributes")
        if not isinstance(attributes, dict):
            raise Unprocessable("a tag binding needs attributes {key, value}", pointer=at)
        binding = _binding(attributes, f"{at}/attributes")
        if binding.key in seen:
            raise Unprocessable(
                f"the key {binding.key!r} is given twice", pointer=f"{at}/attributes/key"
            )
        seen.add(binding.key)
        found.append(binding)
    return found


def _binding(attributes: dict[str, Any], pointer: str) -> Binding:
    key, value = attributes.get("key"), attributes.get("value")
    if not isinstance(key, str) or not key.strip():
        raise Unprocessable(
            "key is required and must be a non-empty string", pointer=f"{pointer}/key"
        )
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise Unprocessable("value must be a string", pointer=f"{pointer}/value")
    if len(key) > MAX_KEY:
        raise Unprocessable(f"key is longer than {MAX_KEY} characters", pointer=f"{pointer}/key")
    if len(value) > MAX_VALUE:
        raise Unprocessable(
            f"value is longer than {MAX_VALUE} characters", pointer=f"{pointer}/value"
        )
    if any(not ch.isprintable() for ch in key + value):
        raise Unprocessable("keys and values hold printable characters only", pointer=pointer)
    if key.lower().startswith(RESERVED_PREFIXES):
        raise Unprocessable(f"the key prefix of {key!r} is reserved", pointer=f"{pointer}/key")
    return Binding(key, value)


# ----- changing a stored set -----------------------------------------------------------------


def replace(
    current: Sequence[TagBindingAttribute], wanted: Iterable[Binding]
) -> list[TagBindingAttribute]:
    """The set ``wanted`` exactly (a resource's own PATCH); kept keys keep their ids."""
    ids = {b.key: b.id for b in current}
    return [_stored(ids.get(b.key), b) for b in wanted]


def merge(
    current: Sequence[TagBindingAttribute], added: Iterable[Binding]
) -> list[TagBindingAttribute]:
    """``current`` with ``added`` bound, new keys appended, nothing removed
    (``PATCH …/tag-bindings``). More than ``MAX_BINDINGS`` in the result is a 422."""
    merged = {b.key: Binding(b.key, b.value) for b in current}
    ids = {b.key: b.id for b in current}
    merged.update({b.key: b for b in added})
    if len(merged) > MAX_BINDINGS:
        raise Unprocessable(f"at most {MAX_BINDINGS} tag bindings per resource", pointer="/data")
    return [_stored(ids.get(key), binding) for key, binding in merged.items()]


def _stored(id_: str | None, binding: Binding) -> TagBindingAttribute:
    return TagBindingAttribute(id=id_ or new_id("tb"), key=binding.key, value=binding.value)


def pairs(bindings: Iterable[TagBindingAttribute]) -> list[Binding]:
    return [Binding(b.key, b.value) for b in bindings]


def matches(bindings: Iterable[TagBindingAttribute], key: str, value: str | None) -> bool:
    """Whether a binding has ``key`` (and ``value``, when one is asked for)."""
    return any(b.key == key and (value is None or b.value == value) for b in bindings)


def as_dict(bindings: Iterable[TagBindingAttribute] | None) -> dict[str, str]:
    return {b.key: b.value for b in bindings or ()}


def effective(
    own: Iterable[TagBindingAttribute], inherited: Iterable[TagBindingAttribute]
) -> dict[str, str]:
    """Key -> value of what a resource carries: the inherited bindings, its own winning on a
    key both have."""
    return {**as_dict(inherited), **as_dict(own)}


# ----- the list filter ``filter[tagged][i][key]`` / ``filter[tagged][i][value]`` -------------

_TAGGED = re.compile(r"^filter\[tagged\]\[(\d{1,4})\]\[(key|value)\]\Z")


def tagged_filters(query: Mapping[str, str]) -> list[tuple[str, str | None]]:
    """The (key, value) pairs of a list's tag filter, in index order; value None (left out or
    empty, as go-tfe sends it) matches any value. A value without its key is a 422."""
    found: dict[int, dict[str, str]] = {}
    for name, raw in query.items():
        if m := _TAGGED.match(name):
            found.setdefault(int(m.group(1)), {})[m.group(2)] = raw
    filters: list[tuple[str, str | None]] = []
    for index in sorted(found):
        key = found[index].get("key") or ""
        if not key:
            parameter = f"filter[tagged][{index}][key]"
            raise Unprocessable(f"{parameter} is required with its value", parameter=parameter)
        filters.append((key, found[index].get("value") or None))
    return filters


def satisfies(carried: Mapping[str, str], filters: Iterable[tuple[str, str | None]]) -> bool:
    """Whether ``carried`` (key -> value) has every filtered key, with the value when given."""
    return all(k in carried and (v is None or carried[k] == v) for k, v in filters)


# ----- rendering -----------------------------------------------------------------------------


def render(bindings: Iterable[TagBindingAttribute]) -> list[dict[str, Any]]:
    """The ``tag-bindings`` resources of a ``GET …/tag-bindings`` answer."""
    return [resource(TYPE, b.id, {"key": b.key, "value": b.value}) for b in bindings]


def relationship(related_url: str) -> dict[str, Any]:
    """A resource's ``tag-bindings`` relationship: a link to the list (TFE gives no data)."""
    return {"links": {"related": related_url}}


EFFECTIVE_TYPE = "effective-tag-bindings"


class Source(NamedTuple):
    """Where inherited bindings come from (a workspace's project): its type, id and path."""

    type: str
    id: str
    path: str


def render_effective(
    own: Iterable[TagBindingAttribute],
    inherited: Iterable[TagBindingAttribute] = (),
    source: Source | None = None,
) -> list[dict[str, Any]]:
    """The ``effective-tag-bindings`` resources: the resource's own bindings, then the
    inherited ones it does not override. Each inherited one says where it comes from, as TFE
    does: ``links.inherited-from`` (go-tfe v1 reads it) and the ``inherited-from``
    relationship (the v2 API's shape)."""
    own = list(own)
    out = [resource(EFFECTIVE_TYPE, b.id, {"key": b.key, "value": b.value}) for b in own]
    keys = {b.key for b in own}
    for b in inherited:
        if b.key in keys:
            continue
        extra: dict[str, Any] = {}
        if source is not None:
            extra = {
                "relationships": {
                    "inherited-from": {"data": {"id": source.id, "type": source.type}}
                },
                "links": {"inherited-from": source.path},
            }
        out.append(resource(EFFECTIVE_TYPE, b.id, {"key": b.key, "value": b.value}, **extra))
    return out


def effective_relationship(related_url: str, items: list[dict[str, Any]] | None) -> dict[str, Any]:
    """A resource's ``effective-tag-bindings`` relationship: the link, and the identifiers of
    ``items`` when they are included (``?include=effective_tag_bindings``)."""
    relation: dict[str, Any] = {"links": {"related": related_url}}
    if items is not None:
        relation["data"] = identifiers(EFFECTIVE_TYPE, (i["id"] for i in items))
    return relation
