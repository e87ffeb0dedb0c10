"""What Renovate asks a Terraform registry that is not registry.terraform.io, unchanged: the
calls of its ``terraform-module`` and ``terraform-provider`` datasources
(renovatebot/renovate ``lib/modules/datasource/terraform-module/index.ts``
``queryRegistryVersions``, ``terraform-provider/index.ts`` ``queryRegistryVersions`` and
``getBuilds``), with the token its ``hostRules`` give the host as a Bearer token.

* service discovery: ``GET <registry>/.well-known/terraform.json``;
* a module's releases: ``GET <modules.v1>/<namespace>/<name>/<provider>/versions``, the
  ``version`` of each entry of ``modules[0].versions`` (nothing else is read: Renovate
  ignores ``deprecation``);
* a provider's releases: ``GET <providers.v1>/<namespace>/<type>/versions``, each
  ``versions[].version``; its builds (for the lock file's hashes): each platform's
  ``<providers.v1>/<namespace>/<type>/<version>/download/<os>/<arch>``.

A relative service URL is joined to the registry's URL (``createSDBackendURL``), slashes
collapsed as ``url-join`` does. ``get`` is the transport (the in-process client or HTTP).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

# (URL, Bearer token or None) -> (HTTP status, JSON body)
Get = Callable[[str, str | None], tuple[int, Any]]


def join(*parts: str) -> str:
    """``url-join``'s join: one slash between parts, the scheme's ``//`` kept."""
    joined = "/".join(part.strip("/") for part in parts if part)
    joined = re.sub(r"(?<!:)/{2,}", "/", joined)
    return joined if re.match(r"^[a-z]+://", joined) else "/" + joined


class Renovate:
    def __init__(self, get: Get, registry_url: str, token: str | None) -> None:
        self.get = get
        self.registry_url = registry_url.rstrip("/")
        self.token = token

    def _json(self, url: str) -> Any:
        status, body = self.get(url, self.token)
        if status != 200:
            raise LookupError(f"GET {url}: {status} {body!r}")
        return body

    def discovery(self) -> dict[str, Any]:
        found: dict[str, Any] = self._json(f"{self.registry_url}/.well-known/terraform.json")
        return found

    def backend(self, service: str, sub_path: str) -> str:
        full = join(self.discovery().get(service) or "", sub_path)
        return full if full.startswith(("http://", "https://")) else join(self.registry_url, full)

    def module_releases(self, repository: str) -> list[str] | None:
        """``namespace/name/provider`` -> its versions (None: "result mismatch")."""
        body = self._json(self.backend("modules.v1", f"{repository}/versions"))
        if len(body["modules"]) < 1:
            return None
        return [entry["version"] for entry in body["modules"][0]["versions"]]

    def provider_releases(self, repository: str) -> list[str]:
        """``namespace/type`` -> its versions."""
        body = self._json(self.backend("providers.v1", f"{repository}/versions"))
        return [entry["version"] for entry in body["versions"]]

    def provider_builds(self, repository: str, version: str) -> list[dict[str, Any]]:
        """Each platform's download answer of a provider version (its ``download_url``,
        ``shasums_url``...), as Renovate reads them for the lock file."""
        url = self.backend("providers.v1", repository)
        listed = self._json(f"{url}/versions")["versions"]
        builds = next(entry for entry in listed if entry["version"] == version)
        return [
            self._json(f"{url}/{version}/download/{p['os']}/{p['arch']}")
            for p in builds["platforms"]
        ]
