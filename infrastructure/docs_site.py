"""The documentation site's MkDocs hook (mkdocs.yml `hooks:`): two files from outside docs/.

- `changelog.md`: the root CHANGELOG.md, whose links are written relative to the repository
  root (`docs/upgrade.md#...`), re-pointed for a page that sits beside the docs pages.
- `openapi.json`: the generated OpenAPI document (chalicelib/meta/openapi.json, what
  `GET /api/v2/openapi.json` serves), copied as is so the reference page can link it.

Both are generated in memory at build time: nothing is copied into docs/, nothing is fetched.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\((?!https?:|#)([^)\s]+)\)")


def repoint(markdown: str) -> str:
    """Links relative to the repository root, made relative to docs/ (README.md: the home)."""

    def one(match: re.Match[str]) -> str:
        target = match.group(1)
        if target.startswith("docs/"):
            target = target.removeprefix("docs/")
        elif target.split("#")[0] == "README.md":
            target = "index.md"
        else:
            target = "../" + target  # not in the site: the strict build reports it
        return f"]({target})"

    return LINK.sub(one, markdown)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    changelog = repoint((ROOT / "CHANGELOG.md").read_text(encoding="utf-8"))
    files.append(File.generated(config, "changelog.md", content=changelog))
    openapi = (ROOT / "chalicelib" / "meta" / "openapi.json").read_bytes()
    files.append(File.generated(config, "openapi.json", content=openapi))
    return files
