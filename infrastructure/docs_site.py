"""The documentation site's MkDocs hook (mkdocs.yml `hooks:`): three files made at build time
from what lives outside docs/, so there is one home for each and nothing to keep in step.

- `changelog.md`: the root CHANGELOG.md, its links (written relative to the repository root,
  `docs/upgrade.md#...`) re-pointed for a page that sits beside the docs pages.
- `openapi.json`: the generated OpenAPI document (chalicelib/meta/openapi.json, what
  `GET /api/v2/openapi.json` serves), copied as is.
- `api.md`: that document rendered as one table of operations per tag (method, path, what it
  does, who may call it), plain Markdown: no JavaScript viewer, nothing fetched.

The pages link those files' sources (`../CHANGELOG.md`, `../chalicelib/meta/openapi.json`), so
the links also work on GitHub; `on_page_markdown` points them at the site's copies.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
OPENAPI = ROOT / "chalicelib" / "meta" / "openapi.json"
# What a page's link to a source outside docs/ becomes in the site.
SITE_COPIES = {"../CHANGELOG.md": "changelog.md", "../chalicelib/meta/openapi.json": "api.md"}
LINK = re.compile(r"\]\((?!https?:|#)([^)\s]+)\)")
METHODS = ("get", "put", "post", "patch", "delete")
# x-access (chalicelib/core/api/access.py's declarations) as a reader says it.
WHO = {
    "public": "anyone",
    "bearer": "an API token",
    "site-admin": "a site admin",
    "signed-in": "a signed-in web session",
    "scim": "a SCIM token",
    "signed": "the webhook's own signature",
}


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


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def operations_page(document: dict[str, Any]) -> str:
    """The OpenAPI document's operations, grouped by their first tag, in the document's order."""
    by_tag: dict[str, list[str]] = {tag["name"]: [] for tag in document.get("tags", [])}
    for path, item in document["paths"].items():
        for method in METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            tag = (operation.get("tags") or ["other"])[0]
            who = WHO.get(operation.get("x-access", ""), operation.get("x-access", ""))
            by_tag.setdefault(tag, []).append(
                f"| `{method.upper()}` | `{cell(path)}` | {cell(operation.get('summary', ''))} "
                f"| {who} |"
            )
    info = document["info"]
    lines = [
        "# API operations",
        "",
        f"{info['description']}",
        "",
        f"Version {info['version']}: {sum(len(rows) for rows in by_tag.values())} operations. "
        "The whole document, with parameters, request bodies and responses: "
        "[openapi.json](openapi.json) (also served by every stack at `/api/v2/openapi.json`). "
        "Who may call an operation is its `x-access`; inside an organization the "
        "[permissions](security.md) decide the rest.",
    ]
    for tag, rows in by_tag.items():
        if rows:
            lines += ["", f"## {tag}", "", "| method | path | what | who |", "|---|---|---|---|"]
            lines += rows
    return "\n".join(lines) + "\n"


def on_files(files: Files, config: MkDocsConfig) -> Files:
    changelog = repoint((ROOT / "CHANGELOG.md").read_text(encoding="utf-8"))
    files.append(File.generated(config, "changelog.md", content=changelog))
    raw = OPENAPI.read_bytes()
    files.append(File.generated(config, "openapi.json", content=raw))
    files.append(File.generated(config, "api.md", content=operations_page(json.loads(raw))))
    return files


def on_page_markdown(markdown: str, **_: Any) -> str:
    for source, copy in SITE_COPIES.items():
        markdown = markdown.replace(f"]({source})", f"]({copy})")
    return markdown
