"""Generate the API's OpenAPI document into ``chalicelib/meta/openapi.json``.

``python -m infrastructure.openapi`` writes it (``make package`` runs it first, so the
deployment always ships a fresh one); ``--check`` only says whether the file is current.
The document is built by ``chalicelib.core.api.openapi`` from the routes' own registrations in
the whole app (``app.py``), which is why it is generated here and not in the meta function
(see ``chalicelib.meta.routes``). ``tests/test_openapi.py`` fails when the committed file
differs from a fresh generation.
"""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "chalicelib" / "meta" / "openapi.json"
DESCRIPTION = (
    "Terraform Enterprise's API v2 as this registry serves it (organizations, teams, tokens, "
    "registry modules, publishing from VCS, workspaces and tags, site-admin settings), the "
    "module registry protocol (`modules.v1`) and VCS webhooks. Generated from the routes "
    "themselves. JSON:API requests send `application/vnd.api+json`; every error is a JSON:API "
    'error document, except on the registry protocol (`{"errors": ["..."]}`).'
)


def generate() -> dict[str, Any]:
    """The document of every route the whole app serves."""
    from app import app
    from chalicelib.core.api.openapi_build import build_document

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return build_document(
        app, title=project["name"], version=project["version"], description=DESCRIPTION
    )


def render(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    text = render(generate())
    current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else None
    if "--check" in argv:
        if current != text:
            print(f"{TARGET.relative_to(ROOT)} is stale: run python -m infrastructure.openapi")
            return 1
        return 0
    if current != text:
        TARGET.write_text(text, encoding="utf-8")
    print(f"{TARGET.relative_to(ROOT)}: {len(json.loads(text)['paths'])} paths")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
