"""The request model of the module cache's settings (``PATCH /api/v2/admin/module-cache-settings``).

Both lists are optional: an omitted one, or one sent as ``null``, is kept. Each list and
each entry is bounded here (the document shows ``maxItems`` and ``maxLength``), and each
entry is checked by ``settings.namespace`` / ``settings.source_host``, the rules' one home.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from chalicelib.core.api.attributes import Attributes
from chalicelib.modules.cache import settings

Namespace = Annotated[
    str, Field(max_length=settings.MAX_NAMESPACE), AfterValidator(settings.namespace)
]
SourceHost = Annotated[
    str, Field(max_length=settings.MAX_SOURCE_HOST), AfterValidator(settings.source_host)
]


class CacheSettingsUpdate(Attributes):
    allowed_namespaces: (
        Annotated[list[Namespace], Field(max_length=settings.MAX_NAMESPACES)] | None
    ) = None
    allowed_source_hosts: (
        Annotated[list[SourceHost], Field(max_length=settings.MAX_SOURCE_HOSTS)] | None
    ) = None
