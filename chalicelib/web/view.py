"""The web room's own route wrapper: HTML pages instead of JSON:API documents.

``page(bp, path, methods)`` registers ``handler(ctx, **params) -> Response`` and turns every
error into the error page with the right status: a missing or unreadable resource is 404 (the
API's rule: a caller without permission sees "not found"), a bad query value 400, and
anything unexpected a 500 (logged), never a traceback. Every page declares who may open it
(``auth=``): ``PublicPage``; ``SignedIn``, where without a session the browser is sent to the
sign-in page and back afterwards; ``SiteAdminPage``, signed in and a site admin (404 for
anyone else, as the admin API). The wrapper decides before the handler runs.

Every page carries a strict Content-Security-Policy (no inline script, nothing from another
origin except ``https`` images in READMEs), ``X-Content-Type-Options``,
``Referrer-Policy`` and ``Cache-Control: no-store`` (pages show private data); assets under
``/app/static/`` have a content hash in their name and are cached for a year.

Each registration is recorded for the OpenAPI document (tag ``web``, ``text/html``
responses, the session cookie as the security of pages that need a signed-in caller).
"""

from __future__ import annotations

import hashlib
import logging
import mimetypes
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qs, quote, unquote

from chalice import Blueprint, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape

from chalicelib.core.api import bounds
from chalicelib.core.api.access import Access
from chalicelib.core.api.errors import ApiError, BadRequest
from chalicelib.core.api.http import RequestContext, check_lengths
from chalicelib.core.api.openapi import Param, Payload, Reply, record
from chalicelib.core.auth import Principal
from chalicelib.core.settings import get_settings
from chalicelib.web import session

log = logging.getLogger("registry.web")

HERE = Path(__file__).resolve().parent
STATIC_DIR = HERE / "static"
HTML = "text/html; charset=utf-8"
FORM = "application/x-www-form-urlencoded"
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' https:; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}
# The support address TFE ships as the default: shown only once a site admin sets another.
DEFAULT_SUPPORT_EMAIL = "support@hashicorp.com"
# Where signing in leads when the client named no (acceptable) page.
DEFAULT_PAGE = "/app/organizations"
MAX_NEXT_LENGTH = 4096  # terraform login's longest valid request is about 2.2 KB
# The sign-in pages' ``next``: past ``MAX_NEXT_LENGTH`` it opens the default page
# (``safe_next``); the wrapper refuses only what no query value may be.
NEXT = Param(
    "next",
    "the page to open after signing in (a foreign or longer one: the default page)",
    {"type": "string", "maxLength": bounds.QUERY_ANY},
)
# A local path under the UI: visible ASCII, no backslash (see ``safe_next``).
_LOCAL_PATH = re.compile(r"/app/[\x21-\x5b\x5d-\x7e]*")
STATUS_TITLES = {
    400: "Bad request",
    403: "Forbidden",
    404: "Page not found",
    405: "Method not allowed",
    429: "Too many requests",
    500: "Something went wrong",
}


class SignInRequired(Exception):
    """Raised by ``ctx.principal_or_sign_in()``: the browser is sent to the sign-in page."""


# ----- static assets ----------------------------------------------------------------------


@cache
def assets() -> dict[str, tuple[str, bytes]]:
    """Served name (``ui.<hash>.css``) -> (content type, bytes), read once per process."""
    served: dict[str, tuple[str, bytes]] = {}
    for path in sorted(STATIC_DIR.iterdir()):
        if path.is_file():
            data = path.read_bytes()
            digest = hashlib.sha256(data).hexdigest()[:12]
            content_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            if content_type.startswith("text/") or content_type.endswith("javascript"):
                content_type += "; charset=utf-8"
            served[f"{path.stem}.{digest}{path.suffix}"] = (content_type, data)
    return served


@cache
def static_url(name: str) -> str:
    """The hashed URL of ``static/<name>`` (e.g. ``ui.css`` -> ``/app/static/ui.1a2b….css``)."""
    stem, _, suffix = name.rpartition(".")
    for served in assets():
        ours = served.startswith(stem + ".") and served.endswith("." + suffix)
        if ours and served.count(".") == name.count(".") + 1:
            return f"/app/static/{served}"
    raise LookupError(f"no static asset {name!r}")


# ----- templates --------------------------------------------------------------------------


@cache
def templates() -> Environment:
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["static_url"] = static_url
    env.globals["edition"] = get_settings().edition
    env.globals["shows_site_admin"] = shows_site_admin
    env.globals["signed_in_as"] = signed_in_as
    return env


def signed_in_as(principal: Principal) -> str:
    """The header's "who": the user's username whichever way they signed in (password, SSO,
    a pasted token), or the kind of token a team or organization session runs on."""
    from chalicelib.accounts.users.service import shown_username

    username = shown_username(principal)
    if username:
        return f"Signed in as {username}"
    return (
        f"Signed in with {'an' if principal.kind == 'organization' else 'a'} {principal.kind} token"
    )


def shows_site_admin(principal: Principal | None) -> bool:
    """Whether the header links to site administration: a site admin of the self-hosted
    edition (the cached user: no read on a warm instance)."""
    if principal is None or not principal.is_user or get_settings().hosted:
        return False
    from chalicelib.accounts.users.service import shown_as_site_admin

    return shown_as_site_admin(principal)


# ----- the request context ----------------------------------------------------------------


@dataclass(frozen=True)
class SiteText:
    """The customization settings a site admin sets (``/api/v2/admin/customization-settings``)
    as the pages show them: Markdown rendered and sanitized as READMEs are."""

    login_help_html: str
    footer_html: str
    error_html: str
    new_user_html: str
    support_email: str | None


@lru_cache(maxsize=8)
def _site_text(values: tuple[tuple[str, str], ...]) -> SiteText:
    from chalicelib.web import markdown

    found = dict(values)
    support = found.get("support-email-address") or None
    return SiteText(
        login_help_html=markdown.render(found.get("login-help")),
        footer_html=markdown.render(found.get("footer")),
        error_html=markdown.render(found.get("error")),
        new_user_html=markdown.render(found.get("new-user")),
        support_email=None if support == DEFAULT_SUPPORT_EMAIL else support,
    )


def site_text() -> SiteText | None:
    """This site's texts (cached per instance with the settings); None when the settings
    cannot be read: a page never fails for want of its footer."""
    try:
        from chalicelib.admin.service import cached_customization

        values = cached_customization()
    except Exception:  # noqa: BLE001 - logged; the page goes on without the texts
        log.exception("customization settings unreadable")
        return None
    return _site_text(tuple(sorted((k, str(v or "")) for k, v in values.items())))


@dataclass
class WebCtx(RequestContext):
    """What a page handler needs of the request: the API's request context, with the
    caller signed in by the session cookie instead of a bearer token."""

    @property
    def principal(self) -> Principal | None:
        return session.signed_in(self.request)

    def principal_or_sign_in(self) -> Principal:
        principal = self.principal
        if principal is None:
            raise SignInRequired()
        return principal

    def form(self) -> dict[str, str]:
        """A POSTed form's fields (the first value of each)."""
        return {k: v[0] for k, v in form_fields(self.request).items()}

    def csrf(self) -> str:
        """The CSRF token to put in this page's forms (the session's, or a signed pre-sign-in
        token; a new nonce's cookie is set by ``render``)."""
        token = session.csrf_token(self.request)
        if token:
            return token
        token, new_nonce = session.pre_session_csrf(self.request)
        if new_nonce:
            self.request._web_set_csrf = new_nonce  # type: ignore[attr-defined]  # read by render()
        return token

    def render(self, template: str, status: int = 200, **context: Any) -> Response:
        """A page: ``template`` with the caller and a CSRF token for the header's forms."""
        principal = self.principal
        body = (
            templates()
            .get_template(template)
            .render(
                principal=principal,
                csrf_token=self.csrf(),
                current_path=self.path,
                site=site_text(),
                **context,
            )
        )
        return html_response(body, status, self.request)


def html_response(body: str, status: int = 200, request: Any = None) -> Response:
    headers: dict[str, Any] = {"Content-Type": HTML, "Cache-Control": "no-store"}
    headers.update(SECURITY_HEADERS)
    pending = getattr(request, "_web_set_csrf", None)
    if pending:
        headers["Set-Cookie"] = session.set_cookie(
            session.CSRF_COOKIE, pending, session.PRE_SESSION_CSRF_SECONDS
        )
    return Response(body=body, status_code=status, headers=headers)


def redirect(location: str, status: int = 303, cookies: list[str] | None = None) -> Response:
    headers: dict[str, Any] = {"Location": location, "Cache-Control": "no-store"}
    if cookies:
        # Chalice sends a list value as repeated headers (multiValueHeaders on API Gateway).
        headers["Set-Cookie"] = cookies if len(cookies) > 1 else cookies[0]
    return Response(body="", status_code=status, headers=headers)


def add_cookie(response: Response, cookie: str) -> Response:
    """``response`` with one more ``Set-Cookie`` (sent as repeated headers)."""
    had = response.headers.get("Set-Cookie")
    response.headers["Set-Cookie"] = [*([had] if isinstance(had, str) else had or []), cookie]
    if len(response.headers["Set-Cookie"]) == 1:
        response.headers["Set-Cookie"] = cookie
    return response


def safe_next(target: str | None, default: str = DEFAULT_PAGE) -> str:
    """The one check of a redirect target the client sends (the sign-in page's ``next``):
    ``target`` when it is a plain local path under the UI, anything else ``default``.

    Accepted: ``/app/…`` of visible ASCII only (``!`` to ``~``: no space, no control
    character, no CR/LF, NUL, NEL or U+2028, which would break or split the ``Location``
    header), percent-encoding allowed, at most ``MAX_NEXT_LENGTH`` characters, no backslash
    (browsers read it as ``/``), no ``.``/``..`` segment (plain or percent-encoded) that
    would climb out of ``/app/``. ``//host`` and ``/\\host`` (another site) and
    ``https:``/``javascript:`` URLs never start with ``/app/``."""
    if not target or len(target) > MAX_NEXT_LENGTH or not _LOCAL_PATH.fullmatch(target):
        return default
    path = target.split("?", 1)[0].split("#", 1)[0]
    if any(unquote(segment) in (".", "..") for segment in path.split("/")):
        return default
    return target


def with_error(error: ApiError, answer: Response) -> Response:
    """``answer`` (the page again, saying why) with ``error``'s status and headers: a
    throttled sign-in (``signin.Throttled``) is a 429 with its ``Retry-After``."""
    answer.status_code = error.status
    answer.headers.update(error.headers)
    return answer


def error_page(request: Any, status: int, message: str | None = None) -> Response:
    """The error page (404, 400, 500, ...) in the UI's layout."""
    ctx = WebCtx(request)
    try:
        return ctx.render(
            "error.html",
            status,
            code=status,
            title=STATUS_TITLES.get(status, "Error"),
            message=message,
        )
    except Exception:  # noqa: BLE001 - the error page itself must never fail
        log.exception("error page failed")
        return html_response(
            f"<!doctype html><title>Error {status}</title><p>Error {status}", status
        )


def csrf_refused(request: Any) -> Response:
    """A form whose CSRF token the server did not accept: 403, nothing changed."""
    return error_page(
        request,
        403,
        "This form could not be verified: it expired, or it was not sent from this site's "
        "own page. Reload the page and try again.",
    )


def unknown_page_html(cookie: str = "") -> str:
    """The not-found page for a path no route serves (the local server's fallback for
    ``/app/...``), in every page's layout: the session's header (read from ``cookie``, the
    request's ``Cookie`` header), the site's customized error text and footer."""
    request = SimpleNamespace(headers={"cookie": cookie} if cookie else {})
    principal = session.signed_in(request)
    return (
        templates()
        .get_template("error.html")
        .render(
            principal=principal,
            csrf_token=(session.csrf_token(request) or "") if principal else "",
            site=site_text(),
            code=404,
            title=STATUS_TITLES[404],
            message=None,
        )
    )


def _status_for(error: ApiError) -> int:
    """What the browser sees: forbidden is not found (the API's rule), unprocessable query
    values are a bad request."""
    if error.status in (401, 403, 404):
        return 404
    if error.status in (400, 409, 415, 422):
        return 400
    return error.status


def _anyone(request: Any) -> None:
    return None


def _signed_in(request: Any) -> Principal:
    principal = session.signed_in(request)
    if principal is None:
        raise SignInRequired()
    return principal


def _site_admin(request: Any) -> Principal:
    from chalicelib.accounts.authorization import ensure_site_admin

    principal = _signed_in(request)
    ensure_site_admin(principal)
    return principal


# Who may open a page (``page(..., auth=...)``), as ``chalicelib.core.api.access`` for the API.
PublicPage = Access("public", _anyone, description="anyone")
SignedIn = Access(
    "signed-in",
    _signed_in,
    scheme="sessionCookie",
    description="a signed-in user (without a session: to the sign-in page and back)",
)
SiteAdminPage = Access(
    "site-admin",
    _site_admin,
    scheme="sessionCookie",
    description="a signed-in site admin (sign-in first; 404 for anyone else and when hosted)",
)

Handler = Callable[..., Response]


def page(
    bp: Blueprint,
    path: str,
    methods: tuple[str, ...] = ("GET",),
    *,
    auth: Access,
    query: tuple[Param, ...] = (),
    success: tuple[Reply, ...] | None = None,
    form: bool = False,
) -> Callable[[Handler], Handler]:
    """Register an HTML page (see the module's docstring). ``auth`` declares who may open it
    (``PublicPage``, ``SignedIn``, ``SiteAdminPage``), decided before the handler runs."""

    def decorate(handler: Handler) -> Handler:
        def view(**params: str) -> Response:
            request = bp.current_request
            try:
                auth.admit(request)
                check_lengths(request, query, params)
                return handler(WebCtx(request), **params)
            except SignInRequired:
                here = request.context.get("path") or request.path
                if request.query_params:
                    here += "?" + "&".join(
                        f"{quote(k)}={quote(v)}" for k, v in request.query_params.items()
                    )
                return redirect("/app/sign-in?next=" + quote(here, safe=""))
            except ApiError as error:
                return error_page(request, _status_for(error), error.detail)
            except Exception:  # noqa: BLE001 - never a traceback to the browser
                log.exception("unhandled error on %s %s", request.method, path)
                return error_page(request, 500)

        view.__name__ = handler.__name__
        view.__doc__ = handler.__doc__
        view.__module__ = handler.__module__
        view.__dict__["access"] = auth  # what the page declared, for the route-walking test
        content_types = [FORM] if form else ["application/json", FORM]
        bp.route(path, methods=list(methods), content_types=content_types)(view)
        html = Reply(200, schema={"type": "string"}, media_type="text/html", description="HTML")
        record(
            path,
            methods,
            handler,
            access=auth,
            jsonapi=False,
            protocol_errors=False,
            body=Payload((FORM,), "an HTML form") if form else None,
            includes=(),
            query=query,
            success=success or (html,),
            errors={},
            summary=None,
            tag="web",
            content_types=content_types,
            html_errors=True,
        )
        return handler

    return decorate


# The status of a form that checks a password, refused while failures are throttled
# (the sign-in pages, two-factor, password change and reset).
THROTTLED = Reply(429, description="too many failed attempts; the password was not checked")


@dataclass(frozen=True)
class Form:
    """A POSTed form whose CSRF token was accepted."""

    fields: dict[str, list[str]]

    def get(self, name: str) -> str:
        """The first value of ``name``, trimmed ("" when absent)."""
        return (self.fields.get(name) or [""])[0].strip()

    def raw(self, name: str) -> str:
        """The first value as sent (passwords keep their spaces)."""
        return (self.fields.get(name) or [""])[0]

    def all(self, name: str) -> list[str]:
        """Every value of ``name`` (checkboxes), each once, in order."""
        return list(dict.fromkeys(v.strip() for v in self.fields.get(name) or () if v.strip()))


def form_fields(request: Any) -> dict[str, list[str]]:
    """The one reader of a POSTed form: every field and its values, at most
    ``bounds.FORM_FIELDS`` fields of at most ``bounds.FORM_FIELD`` characters each (a
    longer one is a 400 naming it, before the handler reads or writes anything)."""
    raw = request.raw_body or b""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    try:
        fields = parse_qs(text, keep_blank_values=True, max_num_fields=bounds.FORM_FIELDS)
    except ValueError:
        raise BadRequest(f"a form has at most {bounds.FORM_FIELDS} fields") from None
    for name, values in fields.items():
        if any(len(value) > bounds.FORM_FIELD for value in values):
            raise BadRequest(f"{name[:64]}: at most {bounds.FORM_FIELD} characters")
    return fields


def posted(ctx: WebCtx) -> Form | Response:
    """The request's form, or the 403 page when its CSRF token is not accepted (then the
    handler returns it and nothing changes)."""
    fields = form_fields(ctx.request)
    submitted = (fields.get(session.CSRF_FIELD) or [""])[0] or None
    if not session.check_csrf(ctx.request, submitted):
        return csrf_refused(ctx.request)
    return Form(fields)


def page_number(raw: str | None) -> int:
    """``?page=``: a positive integer (400 otherwise)."""
    if raw is None or raw == "":
        return 1
    if not raw.isdigit() or int(raw) < 1 or len(raw) > 6:
        raise BadRequest(f"page must be a positive whole number, not {raw[:20]!r}")
    return int(raw)
