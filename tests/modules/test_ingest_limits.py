"""Hostile module content: escapes, nesting, sizes (chalicelib.modules.ingest.hcl/limits)."""

from __future__ import annotations

import io
import json
import tarfile
import time

import pytest

from chalicelib.core import settings as core_settings
from chalicelib.modules.ingest.archive import ArchiveError, StreamError, read_archive
from chalicelib.modules.ingest.hcl import HclError, parse_module
from chalicelib.modules.ingest.limits import (
    MAX_NESTING_DEPTH,
    Limits,
    MetadataTooLarge,
    fit_metadata,
    json_size,
    readme_text,
)
from tests.conftest import tar_gz

NOTE = "README truncated by the module registry"


def refusal(files: dict[str, bytes], limits: Limits | None = None) -> str:
    with pytest.raises(HclError) as excinfo:
        parse_module(files, limits)
    return excinfo.value.message


# --- A: escapes and nesting ---------------------------------------------------------------------


def test_escapes_that_name_no_character_are_refused_as_terraform_does() -> None:
    """``\\UFFFFFFFF`` and lone surrogates: Terraform's "Invalid escape sequence" (the full
    table is in test_hcl_parse.py), never a crash nor a stored replacement character."""
    source = b'variable "a" {\n  description = "x \\U0001F600 \\u00e9 \\uD800 \\U00110000"\n}\n'
    message = refusal({"main.tf": source})
    assert message.startswith('main.tf:2: invalid escape sequence "\\uD800"'), message


def nested_json(depth: int) -> bytes:
    return b'{"variable": {"a": {"default": ' + b"[" * depth + b"]" * depth + b"}}}"


def test_deep_json_is_refused_with_a_reason() -> None:
    # "variable", "a" and the body are three levels already.
    ok = parse_module({"main.tf.json": nested_json(MAX_NESTING_DEPTH - 3)})
    assert ok["root"]["inputs"][0]["default"].startswith("[[")
    message = refusal({"main.tf.json": nested_json(1_000)})
    assert (
        message
        == f"main.tf.json: JSON nested 1003 levels deep, over the limit of {MAX_NESTING_DEPTH}"
    )
    # Brackets inside strings are text, not nesting.
    text = json.dumps({"variable": {"a": {"description": "[" * 5_000}}}).encode()
    assert parse_module({"main.tf.json": text})["root"]["inputs"][0]["description"] == "[" * 5_000
    # Deeper than Python's recursion limit, and lists of blocks nested in lists.
    assert "nested" in refusal(
        {"main.tf.json": b'{"variable": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"}
    )


@pytest.mark.parametrize(
    "source",
    [
        b'variable "a" {\n  default = ' + b"[" * 300 + b"]" * 300 + b"\n}\n",
        b"terraform {\n" * 300 + b"}\n" * 300,
        b"locals {\n  x = " + b"1 + " * 300 + b"1\n}\n",
        b"locals {\n  x = " + b"f(" * 300 + b")" * 300 + b"\n}\n",
        b"locals {\n  x = <<EOT\n"
        + b"%{ if a }" * 150
        + b"x"
        + b"%{ endif }" * 150
        + b"\nEOT\n}\n",
    ],
    ids=["tuples", "blocks", "operators", "calls", "template-directives"],
)
def test_deep_hcl_is_refused_with_a_reason(source: bytes) -> None:
    message = refusal({"main.tf": source})
    assert f"nested more than {MAX_NESTING_DEPTH} levels deep" in message
    assert message.startswith("main.tf:")


def test_realistic_nesting_is_accepted() -> None:
    source = (
        b'variable "a" {\n  default = ' + b"{ x = [" * 20 + b"1" + b"] }" * 20 + b"\n}\n"
        b'resource "aws_x" "y" {\n'
        + b'  dynamic "d" {\n    content {\n' * 10
        + b"  }\n  }\n" * 10
        + b"}\n"
        b"locals {\n  z = " + b"1 + " * 40 + b"1\n}\n"
    )
    root = parse_module({"main.tf": source})["root"]
    assert root["inputs"][0]["default"].count("[") == 20
    assert root["resources"] == [{"name": "y", "type": "aws_x"}]


@pytest.mark.parametrize(
    "source",
    [
        b'{"variable": {"a": {"default": 1' + b"0" * 5_000 + b"}}}",  # over Python's digit limit
        b'{"variable": {"a": {"default": 1e999}}}',
        b'{"variable": {"a": {"default": NaN}}}',
        b'{"variable": {"a": {"default": -Infinity}}}',
    ],
    ids=["huge-int", "huge-float", "nan", "infinity"],
)
def test_json_numbers_that_are_not_numbers_are_refused(source: bytes) -> None:
    assert refusal({"main.tf.json": source}).startswith("main.tf.json: invalid JSON")


# --- B: sizes -----------------------------------------------------------------------------------


def test_a_huge_readme_is_kept_truncated_with_a_visible_note() -> None:
    line = "| `name` | Name of the thing, caf\u00e9 \u2603 | `string` | n/a | yes |\n"
    readme = ("# Module\n\n```hcl\n" + line * 2_000 + "```\n" + line * 200_000).encode()
    assert len(readme) > 10 * 1024 * 1024
    started = time.perf_counter()
    described = parse_module({"main.tf": b'variable "a" {}\n', "README.md": readme})["root"]
    assert time.perf_counter() - started < 5
    text = described["readme"]
    kept = text.split("\n\n---\n\n> **" + NOTE)[0]
    assert len(text.encode()) <= core_settings.DEFAULT_MAX_README_BYTES + 300
    assert readme.decode().startswith(kept) and kept.endswith("|")  # cut at a line break
    assert f"only the first {len(kept.encode())} bytes are shown" in text
    assert text.rstrip().endswith("The complete file is in the module archive.")
    # A small README is untouched; the note closes a code fence the cut left open.
    assert readme_text(b"# Hi\n", 1024) == "# Hi\n"
    fenced = readme_text(b"# Hi\n```\n" + b"code\n" * 100, 64)
    assert fenced.startswith("# Hi\n```\ncode\n") and "\n```\n\n---\n\n> **" + NOTE in fenced
    # Never a broken character at the cut.
    cut = readme_text("\u00e9".encode() * 10, 5)
    assert cut.startswith("\u00e9\u00e9\n\n---") and "\ufffd" not in cut


def test_too_many_parsed_bytes_are_refused_before_parsing() -> None:
    per_file = b'variable "v" {\n  default = 1\n}\n' * 30_000  # ~0.9 MiB
    files = {f"f{i}.tf": per_file for i in range(10)}  # ~9 MiB, over the 8 MiB default
    started = time.perf_counter()
    message = refusal(files)
    assert time.perf_counter() - started < 0.5  # nothing was parsed
    total = len(per_file) * 10
    assert message == (
        f"the module's Terraform files (root, modules/ and examples/) total {total} bytes, "
        f"over the limit of {core_settings.DEFAULT_MAX_PARSED_BYTES} bytes"
    )
    # JSON counts too; directories that are not described do not.
    small = Limits(max_parsed_bytes=100)
    assert "total 101 bytes" in refusal({"a.tf.json": b"{" + b" " * 99 + b"}"}, small)
    ignored = {"main.tf": b"", "test/fixture/big.tf": b"#" * 1000}
    assert parse_module(ignored, small)["root"]["empty"] is False


def test_one_tf_file_over_its_cap_is_refused() -> None:
    big = b"#" * (core_settings.DEFAULT_MAX_HCL_FILE_BYTES + 1)
    assert refusal({"main.tf": b"", "modules/x/big.tf": big}) == (
        f"modules/x/big.tf: file is {len(big)} bytes, over the limit of "
        f"{core_settings.DEFAULT_MAX_HCL_FILE_BYTES} bytes for one .tf file"
    )


def test_per_field_caps() -> None:
    cap = core_settings.DEFAULT_MAX_TEXT_BYTES
    at_cap = b'variable "a" {\n  description = "' + b"d" * cap + b'"\n}\n'
    assert len(parse_module({"main.tf": at_cap})["root"]["inputs"][0]["description"]) == cap
    over = b'variable "a" {\n  description = "' + b"d" * (cap + 1) + b'"\n}\n'
    assert refusal({"main.tf": over}) == (
        f"variable 'a': its description is {cap + 1} bytes, over the limit of {cap} bytes"
    )
    default = b'variable "big" {\n  default = [' + b'"xxxxxxx",' * 7_000 + b"]\n}\n"
    assert refusal({"modules/m/main.tf": default}).startswith(
        "modules/m: variable 'big': its default is "
    )
    name = b"n" * (core_settings.DEFAULT_MAX_NAME_BYTES + 1)
    assert refusal({"main.tf": b'output "' + name + b'" {\n  value = 1\n}\n'}).startswith(
        f"the name of an output is {len(name)} bytes (it starts 'nnnn"
    )
    source = json.dumps({"module": {"m": {"source": "git::https://x/" + "y" * 2_000}}})
    assert "module 'm': its source is 2015 bytes" in refusal({"main.tf.json": source.encode()})
    tight = Limits(max_text_bytes=10, max_name_bytes=11)
    typed = b'variable "a" {\n  type = list(string)\n}\n'
    assert refusal({"main.tf": typed}, tight).endswith(
        "its type is 12 bytes, over the limit of 10 bytes"
    )
    named = b'resource "a" "abcdefghijkl" {}\n'
    assert refusal({"main.tf": named}, tight).startswith("the name of a resource is 12 bytes")


def metadata_with(readmes: list[str], inputs: int = 0) -> dict:
    def directory(path: str, readme: str) -> dict:
        return {
            "path": path,
            "readme": readme,
            "inputs": [{"name": f"v{i}", "description": "d" * 100} for i in range(inputs)],
        }

    root, *subs = readmes
    return {
        "root": directory("", root),
        "submodules": [directory(f"modules/m{i}", r) for i, r in enumerate(subs)],
        "examples": [],
    }


def test_the_whole_metadata_fits_its_cap_readmes_first() -> None:
    small = metadata_with(["# a", "# b"])
    assert fit_metadata(small, 10_000) == json_size(small)
    assert small["root"]["readme"] == "# a"

    quotes = '"\\' * 600_000  # every character escaped: twice its size as JSON
    metadata = metadata_with(["# root\n" + "r" * 900_000, quotes, "# last"], inputs=50)
    size = fit_metadata(metadata, 1024 * 1024)
    assert size == json_size(metadata) <= 1024 * 1024
    root, sub, last = metadata["root"], *metadata["submodules"]
    assert root["readme"].startswith("# root\n") and NOTE not in root["readme"]  # root first
    assert sub["readme"].startswith('"\\"\\') and NOTE in sub["readme"]
    assert last["readme"] in ("", "# last") or NOTE in last["readme"]
    assert len(root["inputs"]) == 50  # only READMEs give way

    with pytest.raises(MetadataTooLarge) as excinfo:
        fit_metadata(metadata_with(["# a"], inputs=20_000), 1024 * 1024)
    assert "without the READMEs, over the limit of 1048576 bytes" in excinfo.value.message


# --- reading archives ---------------------------------------------------------------------------


class BrokenStream:
    """An S3 body whose connection drops after the first chunk."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)
        self.reads = 0

    def read(self, size: int = -1) -> bytes:
        self.reads += 1
        if self.reads > 1:
            raise ConnectionResetError("connection reset by peer")
        return self._data.read(min(size, 100))


def test_a_failing_stream_is_a_stream_error_not_a_refusal() -> None:
    data = tar_gz({"main.tf": 'variable "a" {}\n' * 1_000})
    with pytest.raises(StreamError) as excinfo:
        read_archive(BrokenStream(data), max_compressed=10**6, max_unpacked=10**7)
    assert isinstance(excinfo.value.error, ConnectionResetError)


def test_an_unforeseen_error_inside_tarfile_is_a_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(self: tarfile.TarFile) -> None:
        raise OverflowError("Python int too large to convert to C int")

    monkeypatch.setattr(tarfile.TarFile, "next", explode)
    with pytest.raises(ArchiveError) as excinfo:
        read_archive(io.BytesIO(tar_gz({"main.tf": ""})), max_compressed=10**6, max_unpacked=10**6)
    assert (
        excinfo.value.message == "archive is corrupt or unreadable (OverflowError while reading it)"
    )


# --- settings -----------------------------------------------------------------------------------


def test_caps_are_settings_with_environment_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    names = {
        "REGISTRY_MAX_PARSED_BYTES": "max_parsed_bytes",
        "REGISTRY_MAX_HCL_FILE_BYTES": "max_hcl_file_bytes",
        "REGISTRY_MAX_README_BYTES": "max_readme_bytes",
        "REGISTRY_MAX_TEXT_BYTES": "max_text_bytes",
        "REGISTRY_MAX_NAME_BYTES": "max_name_bytes",
        "REGISTRY_MAX_METADATA_BYTES": "max_metadata_bytes",
    }
    core_settings.get_settings.cache_clear()
    try:
        defaults = core_settings.get_settings()
        assert Limits.from_settings(defaults) == Limits()
        for number, env in enumerate(names, start=1):
            monkeypatch.setenv(env, str(1000 + number))
        core_settings.get_settings.cache_clear()
        overridden = core_settings.get_settings()
        for number, field in enumerate(names.values(), start=1):
            assert getattr(overridden, field) == 1000 + number
        limits = Limits.from_settings(overridden)
        assert (limits.max_parsed_bytes, limits.max_name_bytes) == (1001, 1005)
    finally:
        for env in names:
            monkeypatch.delenv(env, raising=False)
        core_settings.get_settings.cache_clear()
