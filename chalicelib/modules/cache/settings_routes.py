"""HTTP routes of the module cache's settings: ``GET``/``PATCH
/api/v2/admin/module-cache-settings`` (served by the admin function).

As every admin route: ``SiteAdmin``, so the hosted edition answers 404 before looking at
the token; otherwise a site admin's token is needed (anyone else: 404). ``data.type`` is
not checked, as on the other settings (go-tfe sends ``""``).
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Annotated

from chalice import Blueprint, Response

from chalicelib.accounts.authorization import SiteAdmin
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.jsonapi import document, resource
from chalicelib.core.api.openapi import JsonApi
from chalicelib.modules.cache import settings

if TYPE_CHECKING:
    from chalicelib.modules.cache.settings_schemas import CacheSettingsUpdate

bp = Blueprint(__name__)
PATH = "/api/v2/admin/module-cache-settings"


def body_models() -> ModuleType:
    """This file's body models, loaded on first use (``core.api.http.typed_body``)."""
    from chalicelib.modules.cache import settings_schemas

    return settings_schemas


def _document(found: settings.CacheSettings) -> Response:
    attributes = {
        settings.NAMESPACES: list(found.allowed_namespaces),
        settings.SOURCE_HOSTS: list(found.allowed_source_hosts),
    }
    return document(resource(settings.KEY, settings.KEY, attributes))


# Tagged with the other site settings in the API document.
@route(bp, PATH, ("GET",), auth=SiteAdmin, tag="admin")
def get_module_cache_settings(ctx: Ctx) -> Response:
    """Show which upstream namespaces the module cache serves, and its source hosts."""
    return _document(settings.stored())


@route(
    bp,
    PATH,
    ("PATCH",),
    auth=SiteAdmin,
    errors={409: "changed concurrently: retry"},
    tag="admin",
)
def update_module_cache_settings(
    ctx: Ctx,
    attrs: Annotated[CacheSettingsUpdate, JsonApi(settings.KEY, type_check="off", required=False)],
) -> Response:
    """Replace the allowed namespaces or source hosts (a list omitted is kept).

    A namespace that is an organization's name is refused (422 naming it), as an
    organization named like an allowed namespace is."""
    saved = settings.save(ctx.user, attrs.allowed_namespaces, attrs.allowed_source_hosts)
    return _document(saved)
