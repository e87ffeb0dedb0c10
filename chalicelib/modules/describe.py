"""A version's short description: its README's first paragraph of prose, as plain text.

Computed once, when the version is ingested (``ingest.handler``), and kept on the version
item; the module item keeps its latest servable version's (``store.refresh_listing``), which
is what the web UI's module list shows for each row without reading any version
(``latest_description``).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from chalicelib.artifacts import objects, semver
from chalicelib.artifacts.statuses import VersionStatus
from chalicelib.modules import store, writes
from chalicelib.modules.store import ModuleModel, ModuleVersionModel

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

LIMIT = 200


@cache
def _markdown() -> MarkdownIt:
    # Loaded with the first README described (ingest, the backfill): no request needs it.
    from markdown_it import MarkdownIt

    # Raw HTML is parsed as HTML (``<p align="center">`` is a block, not prose), as the
    # README is rendered (``chalicelib.web.markdown``).
    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def summary(text: str | None, limit: int = LIMIT) -> str:
    """The README's first paragraph of prose, as plain text (a module's description):
    headings, badges and images are skipped. Plain text: a page escapes it."""
    if not text:
        return ""
    tokens = _markdown().parse(text)
    for index, token in enumerate(tokens):
        if token.type != "paragraph_open" or index + 1 >= len(tokens):
            continue
        inline = tokens[index + 1]
        words = "".join(
            " " if child.type in ("softbreak", "hardbreak") else child.content
            for child in inline.children or []
            if child.type in ("text", "code_inline", "softbreak", "hardbreak")
        )
        words = " ".join(words.split())
        if len(words) >= 3:
            return words if len(words) <= limit else words[: limit - 1].rstrip() + "…"
    return ""


# ----- the descriptions kept for the lists ---------------------------------------------------


def latest_description(module: ModuleModel) -> str:
    """The short description of the module's latest servable version ("" without one). Kept
    on the module item (``latest_summary``), so nothing is read; for a module the backfill
    has not reached yet (``backfill_descriptions``), read from its version item, or for a
    version ingested before descriptions were kept, from its README's parsed metadata."""
    latest = module.latest_servable()
    if latest is None:
        return ""
    kept = module.latest_summary or {}
    if kept.get("version") == latest and "description" in kept:
        return str(kept["description"])
    version = store.find_version(module.id, semver.parse(latest).order_key)
    return _description(version) if version is not None else ""


def _description(version: ModuleVersionModel) -> str:
    """A version's description, from its README when it was ingested before they were kept."""
    if version.description is not None:
        return version.description
    if version.status != VersionStatus.OK or not version.metadata_key:
        return ""
    return summary((objects.get_metadata(version.metadata_key).get("root") or {}).get("readme"))


def backfill_descriptions() -> dict[str, int]:
    """Keep on every module item its latest servable version's description (the web UI's
    module list reads nothing else per row), for modules whose latest version was ingested
    before descriptions were kept: the version's description from its README in S3, then
    the module's ``latest_summary`` through ``store.refresh_listing`` (which rereads the
    module, so a module changing meanwhile is not overwritten). Scans the modules (a
    one-off, ``python -m infrastructure.backfill``); a second run writes nothing. Older
    versions get theirs when they become the latest (a newer one revoked or deleted) and
    are read from S3 for the list until then."""
    report: dict[str, int] = {"modules": 0, "descriptions written": 0, "summaries written": 0}
    for module in store.every_module():
        report["modules"] += 1
        latest = module.latest_servable()
        kept = module.latest_summary or {}
        if (latest is None and not kept) or (
            kept.get("version") == latest and "description" in kept
        ):
            continue
        if latest is not None:
            version = store.find_version(module.id, semver.parse(latest).order_key)
            if version is None:
                continue
            missing = version.description is None
            if missing and writes.record_description(version, _description(version)):
                report["descriptions written"] += 1
        store.refresh_listing(module.organization, module.key)
        report["summaries written"] += 1
    return report
