"""One release number: the code's, the package's, the changelog's newest entry, what ping
reports and what the deployed stack outputs."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from chalicelib import __version__

ROOT = Path(__file__).resolve().parents[2]


def test_the_package_and_the_changelog_name_the_codes_release() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["version"] == __version__
    newest = re.search(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert newest is not None and newest.group(1) == __version__


def test_ping_reports_the_release(api) -> None:
    reply = api.as_(None).call("GET", "/api/v2/ping")
    assert reply.status == 204
    assert reply.headers["X-TFE-Current-Version"] == __version__


def test_the_stack_outputs_the_release() -> None:
    from infrastructure.template import merge_template

    template = merge_template()
    assert template["Outputs"]["RegistryVersion"]["Value"] == __version__
    assert __version__ in template["Description"]
