"""What the OpenAPI document says about each route, recorded as the routes register.

Every route registers through ``chalicelib.core.api.http.route``, which records a ``RouteSpec``
here (``SPECS``): the handler (its docstring gives the summary), the room it lives in (the
tag), who may call it (its declared ``Access``: the operation's security), its request
body, its query parameters, the success responses it really gives and its own error
statuses (an outside host failing). A request body is declared once, as the type of the
handler's body parameter (``Annotated[Model, JsonApi(...)]``), and parsed from that
declaration before the handler runs, so the document shows exactly the pydantic model the
handler receives.

``chalicelib.core.api.openapi_build`` turns the records into the OpenAPI 3.1 document; every
Lambda function loads this module (the route wrapper needs it), none loads the builder. This
module imports no domain: domains register through ``route()``. The whole API's document is
generated at package time into ``chalicelib/meta/openapi.json``
(``python -m infrastructure.openapi``) and served by the meta function; see
``chalicelib.meta.routes`` for why.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from chalicelib.core.api import bounds
from chalicelib.core.api.jsonapi import parse_attributes, relationship_list
from chalicelib.core.api.pagination import MAX_PAGE_SIZE

if TYPE_CHECKING:
    from chalicelib.core.api.access import Access
    from chalicelib.core.api.attributes import Attributes

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")

# ----- what a route declares ------------------------------------------------------------------


TypeCheck = Literal["strict", "lenient", "off"]


@dataclass(frozen=True)
class JsonApi:
    """How a handler's typed body is sent: the marker of its parameter,
    ``body: Annotated[CreateModule, JsonApi("registry-modules")]``. The route wrapper finds
    the parameter by this marker, parses the request document into the model before the
    handler runs (``Body``) and records it for the document.

    ``type_``: the document's ``data.type``. ``type_check``: ``strict`` (``data.type`` must
    be ``type_``), ``lenient`` (it may also be missing or empty, as go-tfe sends singletons)
    or ``off`` (not checked; ``type_`` is only documented). ``required=False``: the whole
    body may be left out (every attribute is optional).

    The marker belongs to the route, not the model: one model may be sent with different
    checks (a team is created with any type, updated with ``teams`` or none)."""

    type_: str | None = None
    type_check: TypeCheck = "strict"
    required: bool = True


@dataclass(frozen=True)
class Body:
    """A JSON:API request document ``{"data": {"type": ..., "attributes": {...}}}`` whose
    attributes are ``model``, sent as ``how`` says: what ``route()`` derives from a
    handler's ``Annotated[Model, JsonApi(...)]`` parameter, and records."""

    model: type[Attributes]
    how: JsonApi

    @property
    def type_(self) -> str | None:
        return self.how.type_

    @property
    def type_check(self) -> TypeCheck:
        return self.how.type_check

    @property
    def required(self) -> bool:
        return self.how.required

    def parse(self, body: Any) -> Attributes:
        checked = self.type_ if self.type_check != "off" else None
        return parse_attributes(
            body,
            self.model,
            type_=checked,
            lenient_type=self.type_check == "lenient",
            required=self.required,
        )


@dataclass(frozen=True)
class Relationships:
    """``{"data": [{"type": type_, "id": "..."}, ...]}``: resource identifiers, parsed by the
    handler with ``ctx.relationships()``. ``max_items``: at most that many per request (each
    costs a write or more; the document shows it as ``maxItems``). ``by_name``: an element
    may name the resource in ``attributes.name`` instead of giving its id (tags)."""

    type_: str
    _: KW_ONLY
    max_items: int
    by_name: bool = False
    description: str = ""

    def parse(self, body: Any) -> list[dict[str, Any]]:
        return relationship_list(body, type_=self.type_, max_items=self.max_items)


@dataclass(frozen=True)
class Payload:
    """A body the handler reads itself (a VCS host's webhook delivery, a SCIM resource, a
    tag-bindings document), in one of ``media_types``. ``schema``: what the document shows
    of it (default: any object); its arrays say their ``maxItems``."""

    media_types: tuple[str, ...]
    description: str = ""
    schema: Mapping[str, Any] | None = None


RequestBody = Body | Relationships | Payload


@dataclass(frozen=True)
class Param:
    """A query parameter. A string one is at most ``max_length`` characters (the schema's
    ``maxLength``, else ``bounds.QUERY``): the route wrapper refuses a longer value with a
    422 naming it, and the document shows the bound. ``handler_checks``: the handler checks
    the bound itself, with its own answer (the wrapper leaves the value to it)."""

    name: str
    description: str
    schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "string"})
    required: bool = False
    handler_checks: bool = False

    @property
    def max_length(self) -> int | None:
        """The bound of a string parameter (None for other types and enumerations)."""
        if self.schema.get("type") != "string" or "enum" in self.schema:
            return None
        bound: int = self.schema.get("maxLength", bounds.QUERY)
        return bound

    @property
    def documented_schema(self) -> dict[str, Any]:
        """``schema``, with the bound of a string parameter."""
        bound = self.max_length
        return dict(self.schema) if bound is None else {**self.schema, "maxLength": bound}


def cursor_paging(items: str, most_cursor: int) -> tuple[Param, Param]:
    """``page[size]`` and ``page[after]`` of a list that pages with key cursors
    (``pagination.cursor``): ``items`` says what a page holds."""
    size = Param(
        "page[size]",
        f"{items} per page (default 20, at most {MAX_PAGE_SIZE})",
        {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE},
    )
    after = Param(
        "page[after]",
        "the cursor of the next page (links.next gives it)",
        {"type": "string", "maxLength": most_cursor},
    )
    return size, after


# Every paginated list (``Ctx.paginate``): out-of-range values are clamped, non-integers 422.
PAGE = (
    Param("page[number]", "page number (from 1)", {"type": "integer", "minimum": 1}),
    Param(
        "page[size]",
        f"items per page (default 20, at most {MAX_PAGE_SIZE})",
        {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE},
    ),
)


@dataclass(frozen=True)
class Reply:
    """A success response as the document shows it. ``schema`` is its body's JSON schema:
    by default a JSON:API document on JSON:API routes, and no body for 204 and 3xx (or when
    ``empty``). ``headers``: response header -> description. ``media_type``: when it is not
    the route's usual one."""

    status: int
    schema: Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    description: str = ""
    media_type: str | None = None
    empty: bool = False


Success = int | Reply | tuple[int | Reply, ...]


@dataclass(frozen=True)
class RouteSpec:
    """One registration of ``route()``: everything the document says about an operation."""

    path: str
    method: str
    handler: str
    module: str
    tag: str
    summary: str
    description: str
    # Who may call (``chalicelib.core.api.access``): its name, and the security scheme a
    # caller uses (None: no credential).
    access: str
    scheme: str | None
    jsonapi: bool
    protocol_errors: bool
    # The request body, or how to resolve a handler's typed body (``http.typed_body``).
    declared_body: RequestBody | Callable[[], Body] | None
    includes: tuple[str, ...]
    query: tuple[Param, ...]
    success: tuple[Reply, ...]
    errors: Mapping[int, str]
    content_types: tuple[str, ...]
    # A web page answers its own errors as HTML pages (the framework's, such as a 415, stay
    # JSON:API documents).
    html_errors: bool = False
    # Another error document the route's ``render_error`` names (its ``error_style``
    # attribute): ``scim`` (SCIM 2.0's Error message).
    error_style: str | None = None

    @property
    def body(self) -> RequestBody | None:
        body = self.declared_body
        return body() if callable(body) else body


# (path, method) -> spec; a module imported twice registers the same keys again.
SPECS: dict[tuple[str, str], RouteSpec] = {}


def default_success(method: str) -> tuple[Reply, ...]:
    """What a method answers unless the route says otherwise."""
    return (Reply({"POST": 201, "DELETE": 204}.get(method, 200)),)


def _replies(success: Success | None, method: str) -> tuple[Reply, ...]:
    if success is None:
        return default_success(method)
    items = success if isinstance(success, tuple) else (success,)
    return tuple(item if isinstance(item, Reply) else Reply(item) for item in items)


def room_of(module: str) -> str:
    """A route module's room: ``chalicelib.modules.protocol.routes`` -> ``registry.protocol``."""
    parts = module.split(".")
    if parts[0] == "chalicelib":
        parts = parts[1:]
    if len(parts) > 1 and parts[-1].endswith("routes"):
        parts = parts[:-1]
    return ".".join(parts)


def _summary_and_description(handler: Any, summary: str | None) -> tuple[str, str]:
    """``summary`` (or the first sentence of the handler's docstring, or its name in words)
    and the description: the whole docstring, unless the summary already says it all."""
    doc = inspect.getdoc(handler) or ""
    paragraphs = [" ".join(p.split()) for p in doc.split("\n\n") if p.strip()]
    description = "\n\n".join(paragraphs)
    if summary is None and paragraphs:
        summary = re.split(r"(?<=[.!?])\s", paragraphs[0], maxsplit=1)[0].rstrip(".")
    if summary is None:
        words = handler.__name__.strip("_").replace("_", " ")
        summary = words[:1].upper() + words[1:]
    return summary, "" if description.rstrip(".") == summary else description


def record(
    path: str,
    methods: Iterable[str],
    handler: Any,
    *,
    access: Access,
    jsonapi: bool,
    protocol_errors: bool,
    body: RequestBody | Callable[[], Body] | None,
    includes: Sequence[str],
    query: Sequence[Param],
    success: Success | None,
    errors: Mapping[int, str],
    summary: str | None,
    tag: str | None,
    content_types: Sequence[str],
    html_errors: bool = False,
    error_style: str | None = None,
) -> None:
    """Called by ``route()`` for every registration."""
    summary, description = _summary_and_description(handler, summary)
    for method in methods:
        SPECS[(path, method)] = RouteSpec(
            path=path,
            method=method,
            handler=handler.__name__.strip("_"),
            module=handler.__module__,
            tag=tag or room_of(handler.__module__),
            summary=summary,
            description=description,
            access=access.name,
            scheme=access.scheme,
            jsonapi=jsonapi,
            protocol_errors=protocol_errors,
            declared_body=body,
            includes=tuple(includes),
            query=tuple(query),
            success=_replies(success, method),
            errors=dict(errors),
            content_types=tuple(content_types),
            html_errors=html_errors,
            error_style=error_style,
        )
