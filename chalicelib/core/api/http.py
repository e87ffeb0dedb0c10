"""Routes: one wrapper that authenticates, hands the handler a request context and turns
every ``ApiError`` (and every unexpected exception) into a JSON:API error document.

Handlers stay short: ``def handler(ctx: Ctx, **path_params) -> Response``. A handler that
takes a request document says so in its signature, with its model's type
(``body: Annotated[CreateModule, JsonApi("registry-modules")]``, see ``typed_body``): the
wrapper parses the document into that model before the handler runs, and mypy checks the
handler's use of it. The routes module imports its models for type checking only and
defines ``body_models()``, which loads them with a body's first request.

Includes (JSON:API compound documents): a route declares the names it serves
(``@route(bp, path, includes=("users",))``); the wrapper checks the ``include`` query
parameter of every ``/api/v2`` route against that declaration before the handler runs (an
undeclared name is a 400, so a route that declares none refuses any), and the handler builds
``included`` with ``ctx.included(models, {name: loader})``. The registry protocol, webhooks
and ``/.well-known`` are not JSON:API and are left alone.

Every registration is also recorded in ``chalicelib.core.api.openapi`` (the OpenAPI document is
built from those records): the request body a route takes (the handler's typed body, or
``body=``), its query parameters, the success statuses it answers, its own error statuses, a
summary and a tag.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, get_args, get_origin, get_type_hints

from chalice.app import Blueprint, Chalice, Request, Response

if TYPE_CHECKING:
    from chalicelib.core.api.access import Access
    from chalicelib.core.api.attributes import Attributes
    from chalicelib.core.auth import Principal

from chalicelib.core import observe
from chalicelib.core.api import bounds
from chalicelib.core.api.bounds import utf8_length
from chalicelib.core.api.errors import (
    ApiError,
    BadRequest,
    MethodNotAllowed,
    NotFound,
    Unprocessable,
    UnsupportedMediaType,
    error_response,
    registry_error_response,
)
from chalicelib.core.api.jsonapi import Includer, collect_included, load_json, parse_include
from chalicelib.core.api.openapi import (
    Body,
    JsonApi,
    Param,
    Relationships,
    RequestBody,
    Success,
    record,
)
from chalicelib.core.api.pagination import Page, Paged, paged, paginate
from chalicelib.core.settings import get_settings

log = logging.getLogger("registry")

CONTENT_TYPES = ["application/vnd.api+json", "application/json"]
# Routes under this prefix answer JSON:API documents (and have their includes checked).
JSONAPI_PREFIX = "/api/v2/"
# The registry protocol's routes: not JSON:API, errors are ``{"errors": ["..."]}``.
REGISTRY_PROTOCOL_PREFIX = "/api/registry/"
# ... except TFE's GPG keys API, which lives under /api/registry/ but speaks JSON:API.
REGISTRY_JSONAPI_PREFIX = "/api/registry/private/v2/"


def speaks_registry_protocol(path: str) -> bool:
    """Whether errors on ``path`` take the registry protocol's shape, not JSON:API's."""
    return path.startswith(REGISTRY_PROTOCOL_PREFIX) and not path.startswith(
        REGISTRY_JSONAPI_PREFIX
    )


def host_of(base_url: str) -> str:
    """The host name (and port) of a base URL: ``https://r.example.com:8443/x`` gives
    ``r.example.com:8443``."""
    return base_url.split("://", 1)[-1].split("/", 1)[0]


@dataclass
class RequestContext:
    """What any handler needs of the request, API or page: the query, the path and
    absolute URLs on this deployment's public address (one definition: the web UI's page
    context extends this one)."""

    request: Request

    @property
    def query(self) -> dict[str, str]:
        return dict(self.request.query_params or {})

    @property
    def base_url(self) -> str:
        """``REGISTRY_PUBLIC_URL`` (without a trailing ``/``), else the scheme and host the
        request came to: for answers to the caller only. A link for anyone else (a mail, a
        VCS host, an identity provider) takes ``core.api.links.link_base_url()``."""
        configured = get_settings().public_base_url
        if configured:
            return configured
        headers = self.request.headers
        proto = headers.get("x-forwarded-proto", "http")
        host = headers.get("host", "localhost")
        return f"{proto}://{host}"

    def url(self, path: str) -> str:
        return self.base_url + path

    @property
    def host(self) -> str:
        """This instance's host name (and port), as a module source address starts."""
        return host_of(self.base_url)

    @property
    def path(self) -> str:
        return self.request.context.get("path") or self.request.path

    @property
    def source_ip(self) -> str:
        """The caller's address as API Gateway saw it (what the sign-in throttles count)."""
        identity = (self.request.context or {}).get("identity") or {}
        return str(identity.get("sourceIp"))


@dataclass
class Ctx(RequestContext):
    """What an API handler needs besides: the caller, the body and includes."""

    principal: Principal | None = None
    cache: dict[str, Any] = field(default_factory=dict)
    # The include names asked for, checked against the route's declaration (kebab-case, in
    # the order asked); None when the request asks none.
    include: tuple[str, ...] | None = None
    # The request body the route declares (``route(body=...)``, or the handler's typed
    # body parameter).
    body: RequestBody | None = None

    @property
    def user(self) -> Principal:
        assert self.principal is not None, "the route's declared access admits no principal"
        return self.principal

    def json(self) -> Any:
        return load_json(self.request.raw_body)

    def relationships(self) -> list[dict[str, Any]]:
        """``data`` of a relationship document, as the route's ``Relationships`` declares it
        (element type, at most ``max_items``: a longer array is a 422 before any write)."""
        declared = self.body
        assert isinstance(declared, Relationships), f"the route declares body={declared!r}"
        if "relationships" not in self.cache:
            self.cache["relationships"] = declared.parse(self.json())
        items: list[dict[str, Any]] = self.cache["relationships"]
        return items

    def parse_body(self) -> Attributes | None:
        """Validate the declared body now (the wrapper does, before the handler runs: a
        value past its bound is refused before anything is read or written): the model of
        a typed body, which the handler receives; None for the others."""
        if isinstance(self.body, Body):
            return self.body.parse(self.json())
        if isinstance(self.body, Relationships):
            self.relationships()
        return None

    def relationship_ids(self, named: str) -> list[str]:
        """The ``id`` of every element of the relationship document (``relationships()``),
        each a non-empty string; ``named`` says what an id is, in the 422 for a missing one."""
        ids = []
        for index, item in enumerate(self.relationships()):
            value = item.get("id")
            if not isinstance(value, str) or not value:
                raise Unprocessable(f"id ({named}) is required", pointer=f"/data/{index}/id")
            ids.append(value)
        return ids

    def page(self) -> Page:
        return Page.from_query(self.query)

    def paginate(self, items: list[Any]) -> Paged[Any]:
        return paginate(items, self.page(), self.url(self.path), self.query)

    def paginate_read(self, items: list[Any], total: int) -> Paged[Any]:
        """Links and meta for a page read with keys (``chalicelib.core.data.lists``): ``items``
        are the page's own, ``total`` the list's size."""
        return paged(items, total, self.page(), self.url(self.path), self.query)

    def include_values(self) -> list[str]:
        """Every ``include`` query value as sent (the parameter may repeat)."""
        params: Mapping[str, str] = self.request.query_params or {}
        if "include" not in params:
            return []
        getlist = getattr(params, "getlist", None)
        return list(getlist("include")) if getlist else [params["include"]]

    def included(
        self, primary: Sequence[Any], includers: Mapping[str, Includer]
    ) -> list[dict[str, Any]] | None:
        """The ``included`` array for ``document(..., included=)``: the resources related to
        ``primary`` (the models of this response) for each include asked, each once; None
        when none was asked. ``includers`` maps each name the route declares to its loader."""
        return collect_included(primary, self.include, includers)


Handler = Callable[..., Response]
# A route's handler, whose own signature the decorator keeps (``route`` returns it as is).
HandlerT = TypeVar("HandlerT", bound=Handler)


_PATH_PARAMETER = re.compile(r"\{(\w+)\+?\}")


def typed_body(handler: Handler, path: str) -> tuple[str, Callable[[], Body]] | None:
    """The handler's body parameter and, resolved on first use, what it declares: after
    ``ctx``, each parameter is one of ``path``'s or the one typed body,
    ``body: Annotated[Model, JsonApi("type")]`` (a mypy-checked model, parsed by the wrapper
    before the handler runs). None when the handler takes no body.

    The annotation is text (``from __future__ import annotations``), evaluated as mypy reads
    it, in the handler's module; when that module imports its models only for type checking
    (pydantic is 40 to 60 ms of a cold start), it defines ``body_models()``, which imports
    and returns their module (a real import, which the layout test sees): the annotation is
    then resolved with it when the route first gets a request (or the OpenAPI document is
    built), so a function's other requests never load pydantic."""
    in_path = set(_PATH_PARAMETER.findall(path))
    parameters = list(inspect.signature(handler).parameters.values())[1:]
    others = [p for p in parameters if p.name not in in_path and p.kind is not p.VAR_KEYWORD]
    if not others:
        return None
    assert len(others) == 1, f"{handler.__name__} on {path}: one body parameter at most"
    name, annotation = others[0].name, others[0].annotation

    @functools.cache
    def resolve() -> Body:
        module: dict[str, Any] = getattr(handler, "__globals__", {})
        models = module.get("body_models")
        namespace = {**(vars(models()) if models else {}), **module}
        holder = SimpleNamespace(__annotations__={name: annotation})
        hint = get_type_hints(holder, namespace, include_extras=True)[name]
        how = [m for m in get_args(hint)[1:] if isinstance(m, JsonApi)]
        assert get_origin(hint) is Annotated and how, (
            f"{handler.__name__}({name}) on {path}: a parameter after ctx is a path parameter "
            "or the body, Annotated[Model, JsonApi(...)]"
        )
        return Body(get_args(hint)[0], how[0])

    return name, resolve


def check_lengths(request: Request, query: Iterable[Param], params: Mapping[str, str]) -> None:
    """The bounds of the strings a request carries outside its body
    (``chalicelib.core.api.bounds``), checked before the handler: a path parameter over
    ``PATH_PARAMETER`` bytes names nothing (404); a query value over its declared
    parameter's bound (any other over ``QUERY_ANY``) is a 422 naming the parameter, unless
    the parameter says its handler checks the bound itself (``Param.handler_checks``)."""
    for name, value in params.items():
        if utf8_length(value) > bounds.PATH_PARAMETER:
            raise NotFound(f"{name} is longer than {bounds.PATH_PARAMETER} bytes: no such resource")
    declared = {param.name: param for param in query}
    given: Mapping[str, str] = request.query_params or {}
    getlist = getattr(given, "getlist", None)
    for name in given:
        param = declared.get(name)
        if param is not None and param.handler_checks:
            continue
        limit = (param.max_length if param is not None else None) or bounds.QUERY_ANY
        for value in getlist(name) if getlist else [given[name]]:
            if len(value) > limit:
                raise Unprocessable(f"{name}: at most {limit} characters", parameter=name)


def route(
    bp: Blueprint | Chalice,
    path: str,
    methods: tuple[str, ...] = ("GET",),
    *,
    auth: Access,
    render_error: Callable[[ApiError], Response] = error_response,
    content_types: list[str] = CONTENT_TYPES,
    includes: Iterable[str] = (),
    body: RequestBody | None = None,
    query: Sequence[Param] = (),
    success: Success | None = None,
    errors: Mapping[int, str] = {},
    summary: str | None = None,
    tag: str | None = None,
) -> Callable[[HandlerT], HandlerT]:
    """Register ``handler(ctx, **params)`` on ``bp`` at ``path`` for ``methods``.

    ``auth`` declares who may call (``chalicelib.core.api.access``: ``Public``, ``Bearer``,
    ``SiteAdmin``, ``Scim``, ``Signed``): the wrapper admits the caller before anything else
    (includes, body, handler), so a refused caller learns nothing and changes nothing; the
    handler reads the caller as ``ctx.user``.

    ``render_error`` shapes error bodies: JSON:API by default, the registry protocol's
    ``{"errors": ["..."]}`` for ``/api/registry`` routes. ``content_types`` are the request
    bodies accepted (others answer 415). ``includes`` are the include names the route serves
    (kebab-case); on a JSON:API route any other name asked is a 400 before the handler runs.

    For the OpenAPI document (``chalicelib.core.api.openapi``): ``body`` is a request body
    that is not a typed one (``Relationships``: the handler reads it with
    ``ctx.relationships()``; ``Payload``), ``query`` the query parameters the handler reads (the
    ``include`` parameter comes from ``includes``), ``success`` the success status(es) or
    ``Reply``s (default: 201 for POST, 204 for DELETE, else 200), ``errors`` the error
    statuses besides those every route may give (status -> description, "" for the usual
    one; e.g. 502 and 504 when an outside host fails), ``summary`` (default: the
    docstring's first line, or the handler's name) and ``tag`` (default: its room).
    """
    jsonapi = render_error is error_response and path.startswith(JSONAPI_PREFIX)
    declared = tuple(includes)
    assert jsonapi or not declared, f"{path} is not a JSON:API route: it cannot serve includes"

    def decorate(handler: HandlerT) -> HandlerT:
        typed = typed_body(handler, path)
        assert typed is None or body is None, f"{path}: the body is the handler's parameter"

        def view(**params: str) -> Response:
            request = bp.current_request
            assert request is not None, "Chalice sets the request before it calls a view"
            try:
                principal = auth.admit(request)
                ctx = Ctx(request, principal, body=body)
                check_lengths(request, query, params)
                if jsonapi:
                    ctx.include = parse_include(ctx.include_values(), declared)
                arguments: dict[str, Any] = dict(params)
                # The body checked once the caller is admitted, before the handler reads
                # anything (a refused caller's body is never parsed).
                if typed is not None:
                    name, resolve = typed
                    ctx.body = resolve()
                    arguments[name] = ctx.parse_body()
                elif principal is not None:
                    ctx.parse_body()
                return handler(ctx, **arguments)
            except ApiError as error:
                return render_error(error)
            except Exception:  # noqa: BLE001 - the one place unexpected errors become a 500
                log.exception("unhandled error on %s %s", request.method, path)
                return render_error(ApiError("an unexpected error occurred"))

        view.__name__ = handler.__name__
        view.__doc__ = handler.__doc__
        view.__module__ = handler.__module__
        view.__dict__["access"] = auth  # what the route declared, for the route-walking test
        bp.route(path, methods=list(methods), content_types=content_types)(view)
        record(
            path,
            methods,
            handler,
            access=auth,
            jsonapi=jsonapi,
            protocol_errors=render_error is registry_error_response,
            error_style=getattr(render_error, "error_style", None),
            body=typed[1] if typed else body,
            includes=declared,
            query=tuple(query),
            success=success,
            errors=errors,
            summary=summary,
            tag=tag,
            content_types=content_types,
        )
        return handler

    return decorate


_CHALICE_ERRORS: dict[int, type[ApiError]] = {
    400: BadRequest,
    405: MethodNotAllowed,
    415: UnsupportedMediaType,
}


def rewrite_chalice_errors(event: Any, get_response: Callable[[Any], Response]) -> Response:
    """HTTP middleware: Chalice's own ``{"Code","Message"}`` errors become JSON:API errors,
    or the registry protocol's ``{"errors": ["..."]}`` under ``/api/registry/``."""
    response = get_response(event)
    if response.status_code < 400:
        return response
    body = response.body
    if isinstance(body, str | bytes):
        try:
            body = json.loads(body)
        except ValueError:
            return response
    if not (isinstance(body, dict) and "Code" in body and "Message" in body):
        return response
    error_class = _CHALICE_ERRORS.get(response.status_code, ApiError)
    error = error_class(str(body["Message"]))
    error.status = response.status_code
    protocol = speaks_registry_protocol(getattr(event, "path", "") or "")
    rewritten = (registry_error_response if protocol else error_response)(error)
    content_type = rewritten.headers["Content-Type"]
    for name, value in response.headers.items():
        if name.lower() not in ("content-type", "content-length"):
            rewritten.headers[name] = value
    rewritten.headers["Content-Type"] = content_type
    return rewritten


def install_middleware(app: Chalice) -> None:
    app.register_middleware(rewrite_chalice_errors, "http")


# Path parameters that name the organization a request is about (the registry protocol's
# namespace is the organization of a private module).
# Path parameters that carry a link's secret (invitations, password resets, email
# confirmations): never written out, not even in ``make run``'s readable line.
SECRET_PATH_PARAMS = ("secret", "token")
_ORGANIZATION_PARAMS = ("organization_name", "organization", "namespace")
# The registry protocol's download routes (the Downloads metric).
_DOWNLOAD_SUFFIX = "/download"


def install_request_log(app: Chalice) -> None:
    """HTTP middleware, registered first so that it is the outermost: one line per request
    (rate-limited ones and Chalice's own errors included) with the Requests metric, and the
    scope that counts the request's DynamoDB calls. See ``chalicelib.core.observe``."""
    observe.configure()

    def request_log(event: Any, get_response: Callable[[Any], Response]) -> Response:
        context = getattr(event, "context", None) or {}
        lambda_context = getattr(app, "lambda_context", None)
        request_id = context.get("requestId") or getattr(lambda_context, "aws_request_id", None)
        started = time.perf_counter()
        with observe.scope(request_id) as state:
            state.source_address = (context.get("identity") or {}).get("sourceIp")
            state.user_agent = (getattr(event, "headers", None) or {}).get("user-agent")
            status = 500
            try:
                response = get_response(event)
                status = response.status_code
                return response
            finally:
                if state.written:
                    from chalicelib.core.audit import check  # loads with the first write

                    route = context.get("resourcePath") or "(no route)"
                    method = getattr(event, "method", None) or context.get("httpMethod", "")
                    check.hold(state, f"{method} {route}")
                if observe.access_log_on():
                    _log_request(app.app_name, event, context, state, status, started)

    app.register_middleware(request_log, "http")


def _log_request(
    function: str,
    event: Any,
    context: Mapping[str, Any],
    state: observe.Scope,
    status: int,
    started: float,
) -> None:
    milliseconds = round((time.perf_counter() - started) * 1000, 1)
    method = getattr(event, "method", None) or context.get("httpMethod", "")
    route = context.get("resourcePath") or "(no route)"
    params = getattr(event, "uri_params", None) or {}
    fields: dict[str, Any] = {
        "method": method,
        "route": route,
        "status": status,
        "duration_ms": milliseconds,
        "dynamodb_calls": state.dynamodb_calls,
        "function": function,
    }
    if state.principal_kind:
        fields["principal_kind"] = state.principal_kind
        fields["principal_id"] = state.principal_id
    organization = next((params[p] for p in _ORGANIZATION_PARAMS if params.get(p)), None)
    if organization:
        fields["organization"] = organization
    metrics = [
        observe.Metric(
            "Requests",
            dimensions={"Function": function, "StatusClass": observe.status_class(status)},
        )
    ]
    download = route.startswith(REGISTRY_PROTOCOL_PREFIX) and route.endswith(_DOWNLOAD_SUFFIX)
    if download and status < 400:
        metrics.append(observe.Metric("Downloads", dimensions={"Function": function}))
    path = observe.strip_query(context.get("path") or getattr(event, "path", "") or route)
    if any(f"{{{name}}}" in route for name in SECRET_PATH_PARAMS):
        path = route  # a link's secret is in its path: the readable line shows the template
    observe.emit(
        observe.request_log,
        logging.INFO,
        f"{method} {route} {status}",
        fields,
        metrics,
        readable=f"{method} {path} {status} {milliseconds:.0f} ms {state.dynamodb_calls} calls",
    )
