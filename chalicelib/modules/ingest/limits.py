"""How much of an uploaded module the registry keeps, and how it stays servable.

An archive is already bounded as a whole (``archive``: compressed and unpacked bytes,
members). These caps bound each *thing* taken from it, so that parsing fits the ingest
function (1024 MB, 120 s) and every response carrying the metadata fits a Lambda response
(6 MB at most, after API Gateway's proxy envelope escapes the body a second time):

* ``max_parsed_bytes``: all ``.tf``/``.tf.json`` the parser reads (root, ``modules/``,
  ``examples/``). Parse time grows with it; beyond it the archive is refused.
* ``max_hcl_file_bytes``: one ``.tf`` file. tree-sitter holds the whole syntax tree of a file
  (about 100 bytes per node, up to two nodes per byte of dense HCL), so peak memory follows
  the largest file, not the total; beyond it the archive is refused.
* ``max_text_bytes`` / ``max_name_bytes``: one stored text (an input's description, type or
  default, an output's description) / one name-like value (variable, output, module and
  resource names, module sources, provider names, sources and version constraints). A
  value over its cap refuses the archive with a reason naming it: these values mean
  something, and a truncated default or type would publish wrong information.
* ``max_readme_bytes``: one README. A longer README is **truncated**, not refused, and the
  served text ends with a visible note that says so. The README is documentation only and
  appears only in the protocol's version detail: the ``terraform`` CLI never reads it (it
  uses ``versions`` and ``download``); go-tfe (``ReadTerraformRegistryModule``) and the
  Terraform language server decode ``readme`` as a plain string and a UI renders it as
  markdown, so a shorter string ending in a markdown note is something every client copes
  with, while refusing would block publishing a working module because of its
  documentation. The complete README stays in the archive, which is stored unchanged.
* ``max_metadata_bytes``: a version's whole metadata as the protocol serialises it (JSON,
  ASCII escapes). READMEs give way first (the root's is kept longest); when the rest alone
  is over the cap the archive is refused. With the default (2 MiB) a version detail is about
  2 MiB, and at most twice that inside the Lambda proxy envelope even if every character
  had to be escaped again: far below 6 MB.

Measured at the defaults (``parse_module`` alone, fresh process, peak RSS from
``getrusage``; a 2-vCPU AMD EPYC box): 8 MiB of realistic HCL (1,026 files shaped like
``bench/ingest_bench.py``'s module) 4.4 s and +22 MiB; the worst shape, 8 files of 1 MiB
of the densest HCL (``a = [1,1,1,...]``, two tree nodes per byte) 12.8 s and +317 MiB
(+310 MiB for one such file: memory follows the file, time the total); 8 MiB of
``.tf.json`` 1.1-1.4 s and +78 to +207 MiB. Without the caps, 16 MiB of dense HCL in one file
took 25 s and 3.9 GB. The ingest function has 1024 MB and 120 s.

Nesting depth (``MAX_NESTING_DEPTH``) is not a size and not a setting: it is bounded so
that no recursive code (the JSON decoder, ``json.dumps``, our walks) can run out of stack.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from chalicelib.core import settings as _settings

__all__ = [
    "MAX_NESTING_DEPTH",
    "Limits",
    "MetadataTooLarge",
    "fit_metadata",
    "json_size",
    "readme_text",
]

# Levels of blocks, brackets, operators and interpolations (HCL), or of arrays and objects
# (JSON). Real modules stay well below 30; Python's recursion limit is 1000.
MAX_NESTING_DEPTH = 128

_NOTE = (
    "\n\n---\n\n> **README truncated by the module registry**: only the first {kept} bytes "
    "are shown. The complete file is in the module archive.\n"
)
_NOTE_AT_END = re.compile(
    r"(?:\n```)?\n\n---\n\n> \*\*README truncated by the module registry\*\*[^\n]*\n\Z"
)
# Cut at a line break when there is one this close to the cut.
_LINE_SLACK = 2048


@dataclass(frozen=True)
class Limits:
    max_parsed_bytes: int = _settings.DEFAULT_MAX_PARSED_BYTES
    max_hcl_file_bytes: int = _settings.DEFAULT_MAX_HCL_FILE_BYTES
    max_readme_bytes: int = _settings.DEFAULT_MAX_README_BYTES
    max_text_bytes: int = _settings.DEFAULT_MAX_TEXT_BYTES
    max_name_bytes: int = _settings.DEFAULT_MAX_NAME_BYTES
    max_depth: int = MAX_NESTING_DEPTH

    @classmethod
    def from_settings(cls, settings: _settings.Settings) -> Limits:
        return cls(
            max_parsed_bytes=settings.max_parsed_bytes,
            max_hcl_file_bytes=settings.max_hcl_file_bytes,
            max_readme_bytes=settings.max_readme_bytes,
            max_text_bytes=settings.max_text_bytes,
            max_name_bytes=settings.max_name_bytes,
        )


class MetadataTooLarge(Exception):
    """The metadata is over ``max_metadata_bytes`` even without READMEs."""

    def __init__(self, size: int, limit: int) -> None:
        self.message = (
            f"the module's metadata (inputs, outputs, resources, dependencies of the root "
            f"module, its submodules and examples) is {size} bytes as JSON without the READMEs, "
            f"over the limit of {limit} bytes"
        )
        super().__init__(self.message)


def json_size(value: Any) -> int:
    """Bytes of ``value`` as the protocol sends it (``json.dumps`` defaults: ASCII escapes)."""
    return len(json.dumps(value))


def utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _with_note(prefix: str) -> str:
    """``prefix`` cut at a line break nearby, an open code fence closed, and the note."""
    if len(prefix) > 0:
        newline = prefix.rfind("\n", max(0, len(prefix) - _LINE_SLACK))
        if newline > 0:
            prefix = prefix[:newline]
    fence = "\n```" if prefix.count("```") % 2 else ""
    return prefix + fence + _NOTE.format(kept=utf8_size(prefix))


def readme_text(content: bytes, max_bytes: int) -> str:
    """A README's text: decoded (bad UTF-8 replaced), cut to ``max_bytes`` with a note."""
    if len(content) <= max_bytes:
        return content.decode("utf-8", errors="replace")
    cut = max(0, max_bytes)
    while cut > 0 and content[cut] & 0xC0 == 0x80:  # not inside a multi-byte character
        cut -= 1
    return _with_note(content[:cut].decode("utf-8", errors="replace"))


def _shrink(text: str, budget: int) -> str:
    """The longest truncation of ``text`` whose JSON size is at most ``budget`` ("" if none)."""
    text = _NOTE_AT_END.sub("", text)
    lo, hi = 0, len(text)
    while lo < hi:  # the note's JSON size grows with the prefix: search the prefix length
        mid = (lo + hi + 1) // 2
        if json_size(_with_note(text[:mid])) <= budget:
            lo = mid
        else:
            hi = mid - 1
    shrunk = _with_note(text[:lo])
    return shrunk if json_size(shrunk) <= budget else ""


def fit_metadata(metadata: dict[str, Any], max_bytes: int) -> int:
    """Make ``metadata`` (``parse_module``'s result) at most ``max_bytes`` as JSON, in place.

    READMEs are truncated (with the note) in order: the root module's, then submodules',
    then examples'. Returns the final size; raises MetadataTooLarge when everything but the
    READMEs is already over the cap.
    """
    size = json_size(metadata)
    if size <= max_bytes:
        return size
    nested = [*metadata.get("submodules", []), *metadata.get("examples", [])]
    dirs = [d for d in [metadata.get("root"), *nested] if isinstance(d, dict)]
    extra = [json_size(d.get("readme") or "") - 2 for d in dirs]  # beyond an empty string
    rest = size - sum(extra)
    if rest > max_bytes:
        raise MetadataTooLarge(rest, max_bytes)
    budget = max_bytes - rest
    for directory, more in zip(dirs, extra, strict=True):
        if more <= budget:
            budget -= more
            continue
        directory["readme"] = _shrink(directory.get("readme") or "", budget + 2)
        budget -= json_size(directory["readme"]) - 2
    return json_size(metadata)
