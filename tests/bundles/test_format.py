"""The bundle's manifest as the import reads it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chalicelib.bundles import manifest

DIGEST = "a" * 64


def _doc(**entry: Any) -> bytes:
    base = {
        "kind": "module",
        "address": "acme/acme/vpc/aws",
        "version": "1.0.0",
        "files": [
            {
                "path": "modules/acme/acme/vpc/aws/1.0.0.tar.gz",
                "sha256": DIGEST,
                "size": 3,
                "role": "archive",
            }
        ],
    }
    return json.dumps(
        {"format": "registry-bundle", "format-version": 1, "entries": [{**base, **entry}]}
    ).encode()


def test_a_good_manifest_reads() -> None:
    (entry,) = manifest.parse(_doc()).entries
    assert (entry.kind, entry.address, entry.version) == ("module", "acme/acme/vpc/aws", "1.0.0")


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"kind": "script"}, "unknown entry kind"),
        ({"address": "acme/vpc"}, "is not a module address"),
        ({"address": "acme/../vpc/aws"}, "is not a name a bundle may hold"),
        (
            {"files": [{"path": "/etc/passwd", "sha256": DIGEST, "size": 1, "role": "archive"}]},
            "is not where module",
        ),
        (
            {"files": [{"path": "x", "sha256": "nothex", "size": 1, "role": "archive"}]},
            "needs a hex sha256",
        ),
        ({"files": []}, "must list its files"),
    ],
)
def test_a_bad_manifest_is_refused(change: dict[str, Any], words: str) -> None:
    with pytest.raises(manifest.BadBundle, match=words):
        manifest.parse(_doc(**change))


def test_another_format_version_is_refused() -> None:
    raw = json.loads(_doc())
    raw["format-version"] = 2
    with pytest.raises(manifest.BadBundle, match="format-version"):
        manifest.parse(json.dumps(raw).encode())


CACHED = {
    "kind": "cached-module",
    "address": "terraform-aws-modules/vpc/aws",
    "version": "5.0.0",
    "identity": "git:" + "b" * 40,
    "source-host": "github.com",
    "files": [
        {
            "path": "cached-modules/terraform-aws-modules/vpc/aws/5.0.0.tar.gz",
            "sha256": DIGEST,
            "size": 3,
            "role": "archive",
        }
    ],
}


def test_a_cached_module_reads_and_writes_back_the_same() -> None:
    (entry,) = manifest.parse(_doc(**CACHED)).entries
    assert (entry.kind, entry.address, entry.identity) == (
        "cached-module",
        "terraform-aws-modules/vpc/aws",
        "git:" + "b" * 40,
    )
    assert entry.document() == CACHED


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"address": "acme/terraform-aws-modules/vpc/aws"}, "is not a cached-module address"),
        (
            {
                "files": [
                    {
                        **CACHED["files"][0],
                        "path": "modules/terraform-aws-modules/vpc/aws/5.0.0.tar.gz",
                    }
                ]
            },
            "is not where cached-module",
        ),
        ({"identity": 7}, "identity must be a non-empty string"),
        ({"source-host": "x" * 300}, "source-host must be a non-empty string"),
    ],
)
def test_a_bad_cached_module_is_refused(change: dict[str, Any], words: str) -> None:
    with pytest.raises(manifest.BadBundle, match=words):
        manifest.parse(_doc(**{**CACHED, **change}))
