"""Where a module version's objects live in S3.

``v1/object/<module>/<version>/<version id>.tar.gz`` is the upload target (links.upload);
the ingest handler validates it, copies it to ``v1/archives/...`` (what downloads serve, so a
late re-upload can never replace a published archive) and stores the parsed metadata under
``v1/metadata/...``. The bucket itself and its presigned links are ``artifacts.objects``.
"""

from __future__ import annotations

from dataclasses import dataclass

UPLOAD_PREFIX = "v1/object/"


@dataclass(frozen=True)
class UploadKey:
    module_id: str
    version: str
    version_id: str

    @property
    def key(self) -> str:
        return f"{UPLOAD_PREFIX}{self.module_id}/{self.version}/{self.version_id}.tar.gz"

    @property
    def archive_key(self) -> str:
        return f"v1/archives/{self.module_id}/{self.version_id}.tar.gz"

    @property
    def metadata_key(self) -> str:
        return f"v1/metadata/{self.module_id}/{self.version_id}.json.gz"

    @property
    def findings_key(self) -> str:
        """The version's scan report (``trust.findings.ScanReport``, gzipped JSON)."""
        return f"v1/findings/{self.module_id}/{self.version_id}.json.gz"

    @property
    def sbom_key(self) -> str:
        """The version's CycloneDX SBOM (JSON)."""
        return f"v1/sbom/{self.module_id}/{self.version_id}.cdx.json"

    @property
    def provenance_key(self) -> str:
        """The version's signed provenance (a DSSE envelope, JSON)."""
        return f"v1/provenance/{self.module_id}/{self.version_id}.dsse.json"

    @classmethod
    def parse(cls, key: str) -> UploadKey | None:
        if not key.startswith(UPLOAD_PREFIX) or not key.endswith(".tar.gz"):
            return None
        parts = key[len(UPLOAD_PREFIX) : -len(".tar.gz")].split("/")
        if len(parts) != 3 or not all(parts):
            return None
        return cls(*parts)
