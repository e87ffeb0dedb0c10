"""Property-based fuzzing of module ingestion with hypothesis.

Whatever the bytes, ``parse_module`` returns metadata or raises HclError, and ``read_archive``
returns contents or raises ArchiveError: never another exception (which would leave a
version stuck in ``reg_ingressing`` and the message bouncing through SQS). Every result must
also be storable (JSON, UTF-8) and fit the metadata cap.

Bounded in time: a fixed number of examples per property, no example database, caches in the
temporary directory (nothing is written to the working tree) and derandomised, so a run is
repeatable and takes a few seconds.
"""

from __future__ import annotations

import contextlib
import io
import json
import tarfile
import tempfile
import zlib
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

from chalicelib.modules.ingest.archive import ArchiveError, read_archive
from chalicelib.modules.ingest.hcl import HclError, parse_module
from chalicelib.modules.ingest.limits import MetadataTooLarge, fit_metadata

# Hypothesis caches what it learns under ./.hypothesis; keep the working tree clean.
set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "registry-tests-hypothesis")

FUZZ = settings(
    max_examples=150,
    deadline=None,  # the parser has its own CPU budget; wall time here depends on the machine
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

SEED_TF = b"""\
terraform {
  required_providers {
    aws = { source = "hashicorp/aws", version = ">= 5.0" }
  }
}

variable "name" {
  description = "Name \\"prefix\\" \\u00e9 \\U0001F600 ${var.x} $${y}"
  type        = map(object({ a = optional(string, "x"), b = list(number) }))
  default     = { a = { a = "1", b = [1, 2.5e3, -3] } }
}

variable "doc" {
  description = <<-EOT
    Indented %{ if true }text%{ endif }
  EOT
  default = [for k, v in { a = 1 } : "${k}=${v}" if v > 0 ? true : !false]
}

resource "aws_vpc" "this" {
  provider   = aws.west
  cidr_block = var.cidr # comment
  dynamic "tag" {
    for_each = local.tags[*].name
    content { key = tag.value }
  }
}

module "net" {
  source  = "git::https://example.com/net.git?ref=v1.2.0"
  version = "~> 1.0"
}

output "id" {
  value       = aws_vpc.this.id /* inline */
  description = "The VPC"
  sensitive   = true
}
"""

SEED_JSON = json.dumps(
    {
        "terraform": {"required_providers": [{"aws": {"source": "hashicorp/aws"}}]},
        "variable": {"a": {"type": "string", "default": {"x": [1, 2.5, None, True]}}},
        "output": [{"o": {"value": "${1}", "description": "d", "sensitive": True}}],
        "resource": {"aws_x": {"y": {"provider": "aws.b"}}},
        "module": {"m": {"source": "./m", "version": "1.0"}},
        "provider": {"aws": [{"version": "~> 5.0"}]},
        "//": "comment",
    }
).encode()

HCL_TOKENS = [
    *(bytes([c]) for c in b"{}[]()=:,.?!+-*/%<>&|\n\t#"),
    b" ",
    b'"',
    b"\\",
    b"\\n",
    b"\\u",
    b"\\U",
    b"FFFFFFFF",
    b"D800",
    b"0010FFFF",
    b"00110000",
    b"${",
    b"$${",
    b"%{",
    b"%%{",
    b"~}",
    b"<<EOT\n",
    b"<<-EOT\n",
    b"\nEOT\n",
    b"//",
    b"/*",
    b"*/",
    b"...",
    b"[*]",
    b"=>",
    b"for",
    b"in",
    b"if",
    b"endif",
    b"endfor",
    b"else",
    b"variable",
    b"output",
    b"module",
    b"resource",
    b"data",
    b"provider",
    b"terraform",
    b"required_providers",
    b"description",
    b"default",
    b"type",
    b"source",
    b"version",
    b"sensitive",
    b"true",
    b"null",
    b'"a"',
    b"x",
    b"0",
    b"1e999",
    b"\xef\xbb\xbf",
    b"\xc3\xa9",
    b"\xff",
    b"\x00",
]

JSON_TOKENS = [
    b"{",
    b"}",
    b"[",
    b"]",
    b":",
    b",",
    b'"',
    b'"variable"',
    b'"output"',
    b'"module"',
    b'"resource"',
    b'"terraform"',
    b'"required_providers"',
    b'"default"',
    b'"description"',
    b'"type"',
    b'"source"',
    b'"a"',
    b'"//"',
    b'"\\ud800"',
    b'"\\uDFFF\\uD800"',
    b'"\\u00"',
    b"\\",
    b"1",
    b"-0.5e-7",
    b"1e999",
    b"9" * 5000,
    b"NaN",
    b"Infinity",
    b"true",
    b"null",
    b" ",
    b"\n",
    b"\xff",
]


def assert_storable(metadata: dict) -> None:
    json.dumps(metadata).encode("utf-8")  # what put_metadata and the protocol do
    with contextlib.suppress(MetadataTooLarge):
        fit_metadata(metadata, 2 * 1024 * 1024)


def check_parse(files: dict[str, bytes]) -> None:
    try:
        metadata = parse_module(files)
    except HclError as exc:
        assert exc.message and isinstance(exc.message, str)
        exc.message.encode("utf-8", "backslashreplace")
        return
    assert_storable(metadata)


def tokens(alphabet: list[bytes], max_size: int) -> st.SearchStrategy[bytes]:
    return st.lists(st.sampled_from(alphabet), max_size=max_size).map(b"".join)


@st.composite
def mutated(draw: st.DrawFn, seed: bytes, alphabet: list[bytes]) -> bytes:
    """``seed`` with a few bytes replaced, inserted or deleted, or cut short."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 8))):
        at = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["replace", "insert", "delete", "cut"]))
        if action == "replace" and at < len(data):
            data[at : at + 1] = draw(st.sampled_from(alphabet))
        elif action == "insert":
            data[at:at] = draw(st.sampled_from(alphabet)) * draw(st.integers(1, 200))
        elif action == "delete":
            del data[at : at + draw(st.integers(1, 50))]
        else:
            del data[at:]
    return bytes(data)


# --- HCL -------------------------------------------------------------------------------------


@FUZZ
@given(st.binary(max_size=2_000))
def test_random_bytes_as_hcl(source: bytes) -> None:
    check_parse({"main.tf": source})


@FUZZ
@given(tokens(HCL_TOKENS, 300))
def test_random_hcl_tokens(source: bytes) -> None:
    check_parse({"main.tf": source})


@FUZZ
@given(mutated(SEED_TF, HCL_TOKENS))
def test_mutated_hcl(source: bytes) -> None:
    check_parse({"main.tf": source, "modules/sub/variables.tf": source[::-1]})


# Generated HCL: well-formed files whose strings carry any escape (valid or not), whose
# expressions nest to random depths, and whose blocks nest, so the parser's later stages
# (unescaping, depth, caps) are reached, not only the syntax check.

HEX = "0123456789abcdefABCDEF"
ESCAPES = st.one_of(
    st.sampled_from(
        ["\\n", "\\t", '\\"', "\\\\", "$${", "%%{", "${var.x}", "%{ if a }b%{ endif }"]
    ),
    st.text(HEX, min_size=4, max_size=4).map(lambda h: "\\u" + h),
    st.text(HEX, min_size=8, max_size=8).map(lambda h: "\\U" + h),
    st.sampled_from(["\\UFFFFFFFF", "\\U00110000", "\\uD800", "\\uDFFF", "\\U0010FFFF"]),
)
PLAIN = st.text(
    st.characters(blacklist_characters='"\\$%\r\n', blacklist_categories=["Cs"]), max_size=6
)
STRINGS = st.lists(PLAIN | ESCAPES, max_size=6).map(lambda parts: '"' + "".join(parts) + '"')
NAMES = st.sampled_from(["a", "b_c", "name", "d-e", "x1"])
LEAVES = STRINGS | st.sampled_from(["1", "2.5e3", "true", "null", "var.x", "local.y[0]", "-1"])


def _wrap(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.lists(st.tuples(NAMES, inner), max_size=3).map(
            lambda kv: "{ " + ", ".join(f"{k} = {v}" for k, v in kv) + " }"
        ),
        st.tuples(inner, st.sampled_from(["+", "*", "==", "&&", "?"]), inner).map(
            lambda t: f"{t[0]} {t[1]} {t[2]} : 0" if t[1] == "?" else " ".join(t)
        ),
        inner.map(lambda x: f"f({x})"),
        inner.map(lambda x: f"({x})"),
        inner.map(lambda x: f'"${{{x}}}"'),
    )


EXPRESSIONS = st.recursive(LEAVES, _wrap, max_leaves=12)


@st.composite
def deep(draw: st.DrawFn) -> str:
    """An expression nested 1-400 levels deep (the limit is 128)."""
    depth = draw(st.integers(1, 400))
    opener, closer = draw(st.sampled_from([("[", "]"), ("f(", ")"), ("(", ")"), ("{a = ", "}")]))
    return opener * depth + draw(LEAVES) + closer * depth


@st.composite
def hcl_files(draw: st.DrawFn) -> bytes:
    blocks = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(
            st.sampled_from(["variable", "output", "module", "resource", "provider", "locals"])
        )
        labels = [draw(STRINGS)] + ([draw(STRINGS)] if kind == "resource" else [])
        attrs = [
            f"{name} = {draw(EXPRESSIONS | deep())}"
            for name in draw(
                st.lists(
                    st.sampled_from(
                        ["description", "default", "type", "source", "version", "sensitive"]
                    ),
                    max_size=4,
                    unique=True,
                )
            )
        ]
        nesting = draw(st.integers(0, 3)) if draw(st.booleans()) else draw(st.integers(0, 200))
        body = "\n".join(attrs)
        body = 'dynamic "d" {\n' * nesting + body + "\n}" * nesting
        blocks.append(f"{kind} {' '.join(labels) if kind != 'locals' else ''} {{\n{body}\n}}\n")
    return "".join(blocks).encode("utf-8", "surrogatepass")


@FUZZ
@given(hcl_files())
def test_generated_hcl(source: bytes) -> None:
    check_parse({"main.tf": source})


# --- tf.json ---------------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["variable", "output", "a", "default", "type", "//", "source", "b"]),
            children,
            max_size=4,
        )
    ),
    max_leaves=40,
)


@FUZZ
@given(
    st.dictionaries(
        st.sampled_from(
            ["variable", "output", "module", "resource", "data", "provider", "terraform"]
        ),
        JSON_VALUES,
        max_size=5,
    )
)
def test_random_terraform_json_documents(doc: dict) -> None:
    check_parse({"main.tf.json": json.dumps(doc).encode()})


@FUZZ
@given(
    st.integers(0, 3_000), st.sampled_from(["[", '{"a":']), st.sampled_from(["variable", "default"])
)
def test_deep_terraform_json(depth: int, opener: str, where: str) -> None:
    closer = "]" if opener == "[" else "}"
    value = opener * depth + "1" + closer * depth
    doc = (
        f'{{"variable": {value}}}'
        if where == "variable"
        else (f'{{"variable": {{"a": {{"default": {value}}}}}}}')
    )
    check_parse({"main.tf.json": doc.encode()})


@FUZZ
@given(tokens(JSON_TOKENS, 200) | mutated(SEED_JSON, JSON_TOKENS))
def test_random_and_mutated_json_bytes(source: bytes) -> None:
    check_parse({"main.tf.json": source})


# --- archives --------------------------------------------------------------------------------


def tar_of(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def gzip_of(data: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=31)
    return compressor.compress(data) + compressor.flush()


SEED_TAR = tar_of(
    {"main.tf": SEED_TF, "README.md": b"# Seed\n", "modules/a/main.tf": b'variable "x" {}\n'}
)
TAR_BYTES = [b"\x00", b"\xff", b"0", b"7", b" ", b"/", b"..", b"ustar", b"x", b"L", b"K", b"2"]


def check_archive(data: bytes) -> None:
    try:
        contents = read_archive(io.BytesIO(data), max_compressed=1 << 20, max_unpacked=4 << 20)
    except ArchiveError as exc:
        assert exc.message and isinstance(exc.message, str)
        return
    check_parse(contents.files)


@FUZZ
@given(st.binary(max_size=4_000) | st.binary(max_size=4_000).map(lambda b: b"\x1f\x8b" + b))
def test_random_archive_bytes(data: bytes) -> None:
    check_archive(data)


@FUZZ
@given(st.binary(max_size=6_000).map(gzip_of) | mutated(SEED_TAR, TAR_BYTES).map(gzip_of))
def test_mutated_tar_inside_valid_gzip(data: bytes) -> None:
    check_archive(data)


@FUZZ
@given(mutated(gzip_of(SEED_TAR), TAR_BYTES))
def test_mutated_gzip_bytes(data: bytes) -> None:
    check_archive(data)
