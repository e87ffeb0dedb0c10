"""A module version's SBOM and signed provenance, as ``attest`` stored them beside its
archive: ``GET .../versions/{version}/sbom`` (CycloneDX JSON) and ``.../provenance`` (a DSSE
envelope). For readers of the module only; everyone else gets the module's own 404. A
version not attested yet (still being scanned, or ingested before attestation existed) is a
404 that says so."""

from __future__ import annotations

from chalice import Blueprint, Response

from chalicelib.artifacts import objects
from chalicelib.core.api.access import Bearer
from chalicelib.core.api.errors import NotFound
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.openapi import Reply
from chalicelib.modules import keys, versions
from chalicelib.modules.paths import MODULE
from chalicelib.modules.service import ModuleRef
from chalicelib.trust import provenance, sbom

bp = Blueprint(__name__)

VERSION = MODULE + "/versions/{version}"
# Far above any real document (the SBOM grows with the metadata, itself capped at 2 MiB).
MAX_EVIDENCE_BYTES = 8 * 1024 * 1024
OBJECT = {"type": "object"}


def _evidence(ctx: Ctx, ref: ModuleRef, wanted: str, what: str, media_type: str) -> Response:
    item, _ = versions.find_version(ctx.user, ref, wanted)  # 404 unless a reader
    upload = keys.UploadKey(item.module_id, item.version, item.id)
    key = upload.sbom_key if what == "SBOM" else upload.provenance_key
    try:
        with objects.fetch(key, MAX_EVIDENCE_BYTES) as found:
            body = found.read()
    except objects.Gone:
        raise NotFound(
            f"the {what} of version {item.version} has not been made yet: it is made after "
            "the version's archive is accepted and scanned"
        ) from None
    # Text, not bytes: Chalice base64-encodes bytes only for its binary media types.
    return Response(body=body.decode(), status_code=200, headers={"Content-Type": media_type})


@route(
    bp,
    VERSION + "/sbom",
    auth=Bearer,
    success=Reply(200, OBJECT, media_type=sbom.MEDIA_TYPE, description="CycloneDX 1.6 JSON"),
)
def version_sbom(
    ctx: Ctx,
    organization_name: str,
    registry_name: str,
    namespace: str,
    name: str,
    provider: str,
    version: str,
) -> Response:
    """A module version's SBOM (CycloneDX 1.6 JSON)."""
    ref = ModuleRef(organization_name, registry_name, namespace, name, provider)
    return _evidence(ctx, ref, version, "SBOM", sbom.MEDIA_TYPE)


@route(
    bp,
    VERSION + "/provenance",
    auth=Bearer,
    success=Reply(
        200, OBJECT, media_type=provenance.MEDIA_TYPE, description="a DSSE envelope (in-toto)"
    ),
)
def version_provenance(
    ctx: Ctx,
    organization_name: str,
    registry_name: str,
    namespace: str,
    name: str,
    provider: str,
    version: str,
) -> Response:
    """A module version's signed provenance (a DSSE envelope of an in-toto statement)."""
    ref = ModuleRef(organization_name, registry_name, namespace, name, provider)
    return _evidence(ctx, ref, version, "provenance", provenance.MEDIA_TYPE)
