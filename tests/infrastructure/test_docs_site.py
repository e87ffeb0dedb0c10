"""The documentation site (mkdocs.yml, docs/*.md, infrastructure/docs_site.py) builds in strict
mode, so a broken link or anchor fails the suite; it loads nothing from outside; and the
README's own links resolve inside the repository."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import yaml
from markdown.extensions.toc import slugify

from infrastructure import docs_site

ROOT = Path(__file__).resolve().parents[2]


def build(site: Path, config: Path = ROOT / "mkdocs.yml") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )


class Loads(HTMLParser):
    """What a page makes the browser fetch: stylesheets, icons, scripts, images, frames."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "link" and found.get("href"):
            self.urls.append(found["href"] or "")
        if tag in {"script", "img", "iframe", "source", "video", "audio"} and found.get("src"):
            self.urls.append(found["src"] or "")


def test_the_site_builds_in_strict_mode_and_fetches_nothing_from_outside(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    result = build(site)
    assert result.returncode == 0, result.stdout + result.stderr
    pages = sorted(site.glob("*.html"))
    names = {page.name for page in pages}
    # every docs page, and the three the hook adds from outside docs/
    expected = {f"{path.stem}.html" for path in (ROOT / "docs").glob("*.md")}
    assert expected | {"changelog.html", "api.html"} <= names
    assert (site / "openapi.json").read_bytes() == docs_site.OPENAPI.read_bytes()
    for page in pages:
        parser = Loads()
        parser.feed(page.read_text(encoding="utf-8"))
        outside = [url for url in parser.urls if urlsplit(url).scheme or url.startswith("//")]
        assert outside == [], f"{page.name} loads {outside}"
    for css in site.rglob("*.css"):
        assert not re.search(r"@import\s+url\(\s*['\"]?(https?:)?//", css.read_text()), css
    api = (site / "api.html").read_text(encoding="utf-8")
    assert "/api/v2/organizations/{organization_name}/registry-modules" in api


def test_a_broken_link_or_anchor_fails_the_build(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for page in (ROOT / "docs").glob("*.md"):
        (docs / page.name).write_text(page.read_text(encoding="utf-8"), encoding="utf-8")
    (docs / "screenshots").symlink_to(ROOT / "docs" / "screenshots")
    with (docs / "security.md").open("a", encoding="utf-8") as security:
        security.write("\n[gone](no-such-page.md) and [moved](deploy.md#no-such-heading)\n")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    config["docs_dir"] = str(docs)
    config["hooks"] = [str(ROOT / hook) for hook in config["hooks"]]
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config), encoding="utf-8")

    result = build(tmp_path / "site", tmp_path / "mkdocs.yml")

    assert result.returncode != 0
    assert "no-such-page.md" in result.stderr
    assert "no-such-heading" in result.stderr


def test_changelog_links_are_pointed_at_the_site_pages() -> None:
    written = "[a](docs/upgrade.md#steps), [b](README.md#x), [c](tests/x.py), [d](https://x.y/)"
    assert docs_site.repoint(written) == (
        "[a](upgrade.md#steps), [b](index.md), [c](../tests/x.py), [d](https://x.y/)"
    )


def test_the_readme_is_short_and_its_links_stay_in_the_repository() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    assert "../" not in readme  # a clone has nothing beside it
    targets = re.findall(r"\]\(([^)\s]+)\)", readme)
    assert targets
    for target in targets:
        if target.startswith("https://"):
            continue
        path, _, anchor = target.partition("#")
        assert (ROOT / path).exists(), target
        if anchor:
            headings = re.findall(r"^#+ (.+)$", (ROOT / path).read_text(), re.MULTILINE)
            assert anchor in {slugify(text.replace("`", ""), "-") for text in headings}, target
