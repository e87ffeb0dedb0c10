"""What every site-administration page shares: the site-admin check (404 for anyone else,
as the admin API), the CSRF check of a POSTed form, and form values turned into the JSON
types the API's request models take, validated by those same models (same messages).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chalice import Blueprint, Response

from chalicelib.accounts.authorization import ensure_site_admin
from chalicelib.core.api.jsonapi import validate
from chalicelib.core.api.openapi import Reply
from chalicelib.core.auth import Principal
from chalicelib.web import session
from chalicelib.web.view import SiteAdminPage, WebCtx, csrf_refused, page

if TYPE_CHECKING:
    from chalicelib.core.api.attributes import Attributes

ADMIN = "/app/admin"
_INTEGER = re.compile(r"^-?[0-9]{1,12}\Z")
SAVED = (
    Reply(303, description="done: back to the page, which says so"),
    Reply(422, description="refused: the form again, with the reason"),
)


class CsrfRefused(Exception):
    """A form whose CSRF token was not accepted (the handler answers 403)."""


def site_admin(ctx: WebCtx) -> Principal:
    """The signed-in site admin (sign-in first when there is no session; 404 for anyone
    else and on the hosted edition, as the admin API)."""
    principal = ctx.principal_or_sign_in()
    ensure_site_admin(principal)
    return principal


def admin_form(ctx: WebCtx) -> tuple[Principal, dict[str, str]]:
    """A POSTed form of a site admin: the admin check first (a non-admin learns nothing,
    404), then the CSRF token (``CsrfRefused``)."""
    principal = site_admin(ctx)
    form = ctx.form()
    if not session.check_csrf(ctx.request, form.get(session.CSRF_FIELD)):
        raise CsrfRefused()
    return principal, form


@dataclass(frozen=True)
class Field:
    """One input of a settings form, named by its API attribute (kebab-case).

    ``kind``: ``text``, ``textarea``, ``int``, ``bool`` (a checkbox: unchecked is false),
    ``select`` (``options``), ``secret`` / ``secret-textarea`` (write-only: never filled in;
    empty keeps the stored one, the "remove" checkbox clears it). ``keep_blank``: an empty
    text field leaves the stored value alone instead of clearing it."""

    name: str
    label: str
    kind: str = "text"
    help: str = ""
    options: tuple[str, ...] = ()
    keep_blank: bool = False

    @property
    def secret(self) -> bool:
        return self.kind.startswith("secret")

    @property
    def input_id(self) -> str:
        return "f-" + self.name


def form_attributes(fields: tuple[Field, ...], form: dict[str, str]) -> dict[str, Any]:
    """The attributes a form sets, as the JSON a client would send for them (a value of the
    wrong shape is passed as text: the model's own message then names it)."""
    out: dict[str, Any] = {}
    for field in fields:
        raw = form.get(field.name, "").replace("\r\n", "\n")
        if field.kind == "bool":
            out[field.name] = form.get(field.name) == "on"
        elif field.secret:
            if form.get(field.name + "-remove") == "on":
                out[field.name] = ""
            elif raw.strip():
                out[field.name] = raw
        elif field.kind == "int":
            if raw.strip():
                out[field.name] = int(raw) if _INTEGER.match(raw.strip()) else raw
        elif field.kind == "select":
            if raw:  # a browser always sends one of the options
                out[field.name] = raw
        elif raw.strip() or not field.keep_blank:
            out[field.name] = raw.strip() if field.kind != "textarea" else raw
    return out


def validated(model: type[Attributes], attributes: dict[str, Any]) -> dict[str, Any]:
    """``attributes`` checked by the API's request model, with its 422 and message as the
    API gives them; returned as the changes the service takes: kebab names, nulls dropped.
    (The pages import the models where a form is posted: pydantic loads with the first form
    posted, not with the function, as for the API.)"""
    from chalicelib.admin.schemas import changes

    return changes(validate(model, attributes, pointer_prefix="/data/attributes"))


Poster = Callable[..., Response]


def admin_post(
    bp: Blueprint, path: str, success: tuple[Reply, ...] | None = None
) -> Callable[[Poster], Poster]:
    """A site admin's form POST: ``handler(ctx, principal, form, **params)`` runs only for a
    site admin (else 404) whose form carries the session's CSRF token (else 403)."""

    def decorate(handler: Poster) -> Poster:
        def posted(ctx: WebCtx, **params: str) -> Response:
            try:
                principal, form = admin_form(ctx)
            except CsrfRefused:
                return csrf_refused(ctx.request)
            return handler(ctx, principal, form, **params)

        posted.__name__ = handler.__name__
        posted.__doc__ = handler.__doc__
        posted.__module__ = handler.__module__
        page(bp, path, ("POST",), auth=SiteAdminPage, form=True, success=success or SAVED)(posted)
        return handler

    return decorate
