"""Site administration of the module cache's settings, as a page (``/app/admin/module-cache``):
the upstream namespaces it serves and the source hosts a download may point to, one per
line. A save goes through the API's request model and the settings' own ``save`` (the same
bounds, the same refusals, the same audit event): a refused list changes nothing and the
form comes back with the reason and what was sent.
"""

from __future__ import annotations

from typing import Any

from chalice import Blueprint, Response

from chalicelib.core.api.errors import ApiError
from chalicelib.modules.cache import settings
from chalicelib.web.siteadmin.common import ADMIN, admin_post, site_admin, validated
from chalicelib.web.view import SiteAdminPage, WebCtx, page, redirect

bp = Blueprint(__name__)
MODULE_CACHE = ADMIN + "/module-cache"


def _lines(text: str) -> list[str]:
    """A textarea's entries: one a line, blank lines left out."""
    return [line.strip() for line in text.splitlines() if line.strip()]


def _page(
    ctx: WebCtx, status: int = 200, sent: dict[str, str] | None = None, **extra: Any
) -> Response:
    found = settings.stored()
    values = {
        settings.NAMESPACES: "\n".join(found.allowed_namespaces),
        settings.SOURCE_HOSTS: "\n".join(found.allowed_source_hosts),
        **(sent or {}),
    }
    return ctx.render(
        "siteadmin/module_cache.html",
        status,
        values=values,
        saved=ctx.query.get("saved") == "1",
        max_namespaces=settings.MAX_NAMESPACES,
        max_source_hosts=settings.MAX_SOURCE_HOSTS,
        **extra,
    )


@page(bp, MODULE_CACHE, auth=SiteAdminPage)
def module_cache_settings(ctx: WebCtx) -> Response:
    """The module cache's settings: allowed namespaces and source hosts."""
    site_admin(ctx)
    return _page(ctx)


@admin_post(bp, MODULE_CACHE)
def module_cache_settings_save(ctx: WebCtx, _admin: Any, form: dict[str, str]) -> Response:
    """Store both lists (the API's model and the settings' rules)."""
    from chalicelib.modules.cache import settings_schemas  # pydantic: with the first form

    sent = {name: form.get(name, "") for name in (settings.NAMESPACES, settings.SOURCE_HOSTS)}
    try:
        given = validated(
            settings_schemas.CacheSettingsUpdate, {k: _lines(v) for k, v in sent.items()}
        )
        settings.save(_admin, given[settings.NAMESPACES], given[settings.SOURCE_HOSTS])
    except ApiError as refused:
        return _page(
            ctx, 422 if refused.status == 422 else refused.status, sent, error=refused.detail
        )
    return redirect(MODULE_CACHE + "?saved=1")
