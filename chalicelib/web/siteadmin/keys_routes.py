"""Site administration of SCIM provisioning and the OIDC signing keys, as pages.

* ``/app/admin/scim``: enable, pause, link existing users (the SCIM service's rules: SAML
  first); the SCIM tokens: create (the value is shown once, on the answer to the POST),
  list, revoke.
* ``/app/admin/oidc``: the public signing keys and their timers; rotate and trim.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from chalice import Blueprint, Response

from chalicelib.admin import oidc
from chalicelib.core.api.errors import Unprocessable
from chalicelib.core.api.openapi import Reply
from chalicelib.core.auth import Principal
from chalicelib.core.data.ids import iso, now
from chalicelib.web.siteadmin.common import ADMIN, admin_post, site_admin, validated
from chalicelib.web.view import SiteAdminPage, WebCtx, page, redirect

bp = Blueprint(__name__)
SCIM = ADMIN + "/scim"
OIDC = ADMIN + "/oidc"
CREATED = (
    Reply(201, description="the new token, shown once"),
    Reply(303, description="no session: to the sign-in page"),
    Reply(422),
)


# ----- SCIM -------------------------------------------------------------------------------------


def _scim_page(ctx: WebCtx, status: int = 200, **extra: Any) -> Response:
    from chalicelib.scim import service as scim  # the SCIM pages' own, not the cold start's

    item = scim.settings()
    tokens = sorted(scim.list_tokens(), key=lambda t: t.created_at, reverse=True)
    return ctx.render(
        "siteadmin/scim.html",
        status,
        settings=item,
        tokens=tokens,
        saved=ctx.query.get("saved"),
        default_days=scim.TOKEN_MAX_DAYS,
        min_days=scim.TOKEN_MIN_DAYS,
        **extra,
    )


@page(bp, SCIM, auth=SiteAdminPage)
def scim_settings(ctx: WebCtx) -> Response:
    """SCIM provisioning: its state and tokens."""
    site_admin(ctx)
    return _scim_page(ctx)


@admin_post(bp, SCIM)
def scim_save(ctx: WebCtx, _admin: Any, form: dict[str, str]) -> Response:
    """Enable, pause, or let SCIM link existing users (the SCIM service's rules)."""
    from chalicelib.scim import schemas
    from chalicelib.scim import service as scim  # the SCIM pages' own, not the cold start's

    sent = {name: form.get(name) == "on" for name in ("enabled", "paused", "link-existing-users")}
    try:
        scim.update_settings(_admin, validated(schemas.ScimSettings, sent))
    except Unprocessable as refused:
        return _scim_page(ctx, 422, error=refused.detail)
    return redirect(SCIM + "?saved=settings")


@admin_post(bp, SCIM + "/tokens", success=CREATED)
def scim_token_create(ctx: WebCtx, admin: Principal, form: dict[str, str]) -> Response:
    """A new SCIM token for the identity provider: its value is on this answer only."""
    from chalicelib.scim import schemas
    from chalicelib.scim import service as scim  # the SCIM pages' own, not the cold start's

    days = (form.get("days") or "").strip()
    attributes: dict[str, Any] = {"description": (form.get("description") or "").strip() or None}
    try:
        if days:
            if not days.isdigit() or len(days) > 4:
                raise Unprocessable("expired-at: the expiry must be a whole number of days")
            attributes["expired-at"] = iso(now() + timedelta(days=int(days)))
        given = validated(schemas.ScimTokenCreate, attributes)
        token, secret = scim.create_token(admin, given.get("description"), given.get("expired-at"))
    except Unprocessable as refused:
        return _scim_page(ctx, 422, token_error=refused.detail)
    return _scim_page(ctx, 201, new_token=token, new_secret=secret)


@admin_post(bp, SCIM + "/tokens/{token_id}/revoke")
def scim_token_revoke(ctx: WebCtx, _admin: Any, form: dict[str, str], token_id: str) -> Response:
    """Revoke a SCIM token: the identity provider's requests with it stop working."""
    from chalicelib.scim import service as scim  # the SCIM pages' own, not the cold start's

    scim.delete_token(_admin, token_id)
    return redirect(SCIM + "?saved=revoked")


# ----- OIDC signing keys ------------------------------------------------------------------------


@page(bp, OIDC, auth=SiteAdminPage)
def oidc_keys(ctx: WebCtx) -> Response:
    """The OIDC public signing keys (``/.well-known/jwks``) and when they rotate and trim."""
    site_admin(ctx)
    return ctx.render(
        "siteadmin/oidc.html",
        keys=oidc.jwks()["keys"],
        timers=oidc.timers(),
        saved=ctx.query.get("saved"),
    )


@admin_post(bp, OIDC + "/rotate")
def oidc_rotate(ctx: WebCtx, _admin: Any, form: dict[str, str]) -> Response:
    """A new signing key now (the old ones stay published until trimmed)."""
    oidc.rotate(_admin)
    return redirect(OIDC + "?saved=rotated")


@admin_post(bp, OIDC + "/trim")
def oidc_trim(ctx: WebCtx, _admin: Any, form: dict[str, str]) -> Response:
    """Keep only the newest signing key."""
    oidc.trim(_admin)
    return redirect(OIDC + "?saved=trimmed")
