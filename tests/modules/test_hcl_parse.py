"""Tests for module metadata extraction (chalicelib.modules.ingest.hcl)."""

from __future__ import annotations

import contextlib
import json
import random
import shutil
import subprocess
import sys
import time

import pytest

from chalicelib.modules.ingest.hcl import HclError, parse_module

VARIABLES_TF = b"""
variable "region" {
  description = "AWS region to deploy into"
  type        = string
  default     = "us-east-1"
}

variable "name" {
  description = "Name prefix, e.g. \\"prod\\"\\tand ${var.x} or $${literal}"
  type        = string
}

variable "instance_count" {
  type    = number
  default = 2
}

variable "enabled" {
  type    = bool
  default = false
}

variable "subnets" {
  type    = list(string)
  default = []
}

variable "tags" {
  description = <<-EOT
    Tags for every resource.
      Indented line.
    EOT
  type = map(string)
  default = {
    Terraform = "true"
    Owner     = "team-a"
  }
}

variable "rules" {
  type = list(object({
    port     = number # comment in a type
    protocol = optional(string, "tcp")
  }))
  default = null
}

variable "policy" {
  default = <<EOF
{
  "Version": "2012-10-17"
}
EOF
}
"""

MAIN_TF = b"""
resource "aws_vpc" "this" {
  cidr_block = "10.0.0.0/16"
  tags       = var.tags
}

resource "aws_subnet" "private" {
  count    = length(var.subnets)
  provider = aws.west
  vpc_id   = aws_vpc.this.id
}

resource "google_compute_network" "beta" {
  provider = google-beta
}

resource "null_resource" "noop" {}

resource "terraform_data" "marker" {}

data "aws_caller_identity" "current" {}

data "http" "ip" {
  url = "https://example.com"
}

module "labels" {
  source  = "cloudposse/label/null"
  version = "0.25.0"
}

module "local_child" {
  source = "./modules/nat"
}

provider "random" {}
"""

OUTPUTS_TF = b"""
output "vpc_id" {
  description = "The ID of the VPC"
  value       = aws_vpc.this.id
}

output "secret" {
  value     = "x"
  sensitive = true
}
"""

VERSIONS_TF = b"""
terraform {
  required_version = ">= 1.3"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 4.0"
    }
    legacy = ">= 2.0"
    short  = { source = "short" }
    widget = {
      source  = "registry.example.com/acme/widget"
      version = "~> 1.2"
    }
  }
}
"""

NAT_VARIABLES_JSON = json.dumps(
    {
        "//": "generated",
        "variable": {
            "eip_count": {"type": "number", "default": 1, "description": "How many EIPs"},
            "azs": {"type": "list(string)"},
            "extra": {"default": {"a": [1, 2], "b": None}},
            "nothing": {"default": None},
        },
        "output": {"nat_ids": {"description": "NAT gateway IDs", "value": "${aws_nat.this.*.id}"}},
        "resource": {"aws_nat_gateway": {"this": {"count": 1}}},
        "data": {"aws_region": {"current": {}}},
        "module": {"eip": {"source": "../eip", "version": "1.0.0"}},
        "terraform": [
            {"required_providers": {"aws": {"source": "hashicorp/aws", "version": ">= 5.0"}}}
        ],
    }
).encode()


@pytest.fixture
def module_files() -> dict[str, bytes]:
    return {
        "main.tf": MAIN_TF,
        "variables.tf": VARIABLES_TF,
        "outputs.tf": OUTPUTS_TF,
        "versions.tf": VERSIONS_TF,
        "README.md": b"# Root module\n",
        "modules/nat/main.tf": b'resource "aws_eip" "nat" {}\n',
        "modules/nat/variables.tf.json": NAT_VARIABLES_JSON,
        "modules/nat/README.md": b"# NAT",
        "modules/docs-only/README.md": b"no terraform here",
        "modules/deep/inner/main.tf": b'output "x" {\n  value = 1\n}\n',
        "examples/complete/main.tf": b'module "this" {\n  source = "../../"\n}\n',
        "examples/complete/readme": b"Example",
        "test/fixtures/broken/main.tf": b"this is { not valid",
        "._main.tf": b"\x00\x05\x16\x07 AppleDouble junk \xff",
        "main.tf~": b"editor backup {",
    }


def test_root_inputs(module_files: dict[str, bytes]) -> None:
    root = parse_module(module_files)["root"]
    assert root["path"] == "" and root["name"] == "" and root["empty"] is False
    assert root["readme"] == "# Root module\n"
    inputs = {i["name"]: i for i in root["inputs"]}
    # main.tf < outputs.tf < variables.tf < versions.tf: variables come in file order.
    assert list(inputs) == [
        "region",
        "name",
        "instance_count",
        "enabled",
        "subnets",
        "tags",
        "rules",
        "policy",
    ]
    assert inputs["region"] == {
        "name": "region",
        "type": "string",
        "description": "AWS region to deploy into",
        "default": '"us-east-1"',
        "required": False,
    }
    assert inputs["name"]["required"] is True
    assert inputs["name"]["default"] == ""
    assert inputs["name"]["description"] == 'Name prefix, e.g. "prod"\tand ${var.x} or ${literal}'
    assert (inputs["instance_count"]["default"], inputs["instance_count"]["type"]) == (
        "2",
        "number",
    )
    assert inputs["enabled"]["default"] == "false"
    assert (inputs["subnets"]["type"], inputs["subnets"]["default"]) == ("list(string)", "[]")
    assert inputs["tags"]["description"] == "Tags for every resource.\n  Indented line.\n"
    assert inputs["tags"]["default"] == '{\n  Terraform = "true"\n  Owner     = "team-a"\n}'
    assert inputs["rules"]["type"] == (
        'list(object({ port = number, protocol = optional(string, "tcp") }))'
    )
    assert inputs["rules"]["default"] == "null"
    assert inputs["rules"]["required"] is False
    assert inputs["policy"]["type"] == ""
    assert inputs["policy"]["default"] == '<<EOF\n{\n  "Version": "2012-10-17"\n}\nEOF'


def test_root_outputs_resources_and_dependencies(module_files: dict[str, bytes]) -> None:
    root = parse_module(module_files)["root"]
    assert root["outputs"] == [
        {"name": "vpc_id", "description": "The ID of the VPC", "sensitive": False},
        {"name": "secret", "description": "", "sensitive": True},
    ]
    assert root["resources"] == [
        {"name": "this", "type": "aws_vpc"},
        {"name": "private", "type": "aws_subnet"},
        {"name": "beta", "type": "google_compute_network"},
        {"name": "noop", "type": "null_resource"},
        {"name": "marker", "type": "terraform_data"},
    ]
    assert root["dependencies"] == [
        {"name": "labels", "source": "cloudposse/label/null", "version": "0.25.0"},
        {"name": "local_child", "source": "./modules/nat", "version": ""},
    ]


def test_provider_dependencies(module_files: dict[str, bytes]) -> None:
    result = parse_module(module_files)
    providers = {p["name"]: p for p in result["root"]["provider_dependencies"]}
    # Sorted, no duplicates; "terraform" (terraform_data) is built in and not listed.
    assert list(providers) == sorted(providers)
    assert result["providers"] == list(providers)
    assert set(providers) == {
        "aws",
        "google-beta",  # from the resource's provider meta-argument
        "http",  # from a data source
        "legacy",
        "null",
        "random",  # from a provider block
        "short",
        "widget",
    }
    assert providers["aws"] == {
        "name": "aws",
        "namespace": "hashicorp",
        "source": "hashicorp/aws",
        "version": ">= 4.0",
    }
    assert providers["legacy"]["source"] == "hashicorp/legacy"
    assert providers["legacy"]["version"] == ">= 2.0"
    assert providers["short"]["source"] == "hashicorp/short"
    assert providers["widget"]["namespace"] == "acme"
    assert providers["widget"]["source"] == "registry.example.com/acme/widget"
    assert providers["random"] == {
        "name": "random",
        "namespace": "hashicorp",
        "source": "hashicorp/random",
        "version": "",
    }


def test_submodules_and_examples(module_files: dict[str, bytes]) -> None:
    result = parse_module(module_files)
    assert [m["path"] for m in result["submodules"]] == ["modules/deep/inner", "modules/nat"]
    assert [m["name"] for m in result["submodules"]] == ["inner", "nat"]
    nat = result["submodules"][1]
    assert nat["readme"] == "# NAT"
    # .tf before .tf.json (file-name order); the JSON data source is excluded.
    assert nat["resources"] == [
        {"name": "nat", "type": "aws_eip"},
        {"name": "this", "type": "aws_nat_gateway"},
    ]
    assert [e["path"] for e in result["examples"]] == ["examples/complete"]
    example = result["examples"][0]
    assert example["readme"] == "Example"
    assert example["dependencies"] == [{"name": "this", "source": "../../", "version": ""}]
    # Every directory has exactly the documented keys.
    keys = {
        "path",
        "name",
        "readme",
        "empty",
        "inputs",
        "outputs",
        "dependencies",
        "provider_dependencies",
        "resources",
    }
    for directory in [result["root"], *result["submodules"], *result["examples"]]:
        assert set(directory) == keys


def test_tf_json(module_files: dict[str, bytes]) -> None:
    nat = parse_module(module_files)["submodules"][1]
    assert nat["inputs"] == [
        {
            "name": "eip_count",
            "type": "number",
            "description": "How many EIPs",
            "default": "1",
            "required": False,
        },
        {"name": "azs", "type": "list(string)", "description": "", "default": "", "required": True},
        {
            "name": "extra",
            "type": "",
            "description": "",
            "default": '{"a": [1, 2], "b": null}',
            "required": False,
        },
        {"name": "nothing", "type": "", "description": "", "default": "null", "required": False},
    ]
    assert nat["outputs"] == [
        {"name": "nat_ids", "description": "NAT gateway IDs", "sensitive": False}
    ]
    assert nat["dependencies"] == [{"name": "eip", "source": "../eip", "version": "1.0.0"}]
    assert nat["provider_dependencies"] == [
        {"name": "aws", "namespace": "hashicorp", "source": "hashicorp/aws", "version": ">= 5.0"}
    ]


def test_invalid_json_names_file_and_line() -> None:
    files = {"main.tf.json": b'{\n  "variable": {\n    "x": {,}\n  }\n}\n'}
    with pytest.raises(HclError) as excinfo:
        parse_module(files)
    assert excinfo.value.message.startswith("main.tf.json:3: invalid JSON")


def test_root_without_terraform_files_is_empty() -> None:
    result = parse_module({"README.md": b"hi", "modules/a/main.tf": b""})
    assert result["root"]["empty"] is True
    assert result["root"]["readme"] == "hi"
    assert [m["path"] for m in result["submodules"]] == ["modules/a"]
    assert result["submodules"][0]["empty"] is False


def test_override_files_replace_only_what_they_set() -> None:
    files = {
        "variables.tf": b'variable "x" {\n  type = string\n  description = "d"\n}\n',
        "override.tf": b'variable "x" {\n  default = "o"\n}\n',
        "z.tf": b'variable "x" {\n  default = "ignored duplicate"\n}\n',
    }
    (x,) = parse_module(files)["root"]["inputs"]
    assert (x["type"], x["description"], x["default"], x["required"]) == (
        "string",
        "d",
        '"o"',
        False,
    )


def test_bom_and_crlf() -> None:
    src = b'\xef\xbb\xbfvariable "a" {\r\n  description = <<-EOT\r\n    hi\r\n  EOT\r\n}\r\n'
    (a,) = parse_module({"main.tf": src})["root"]["inputs"]
    assert a["description"] == "hi\n"


# --- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            b'variable "a" {\n  type = string\n\nresource "x" "y" {\n  a = 1\n}\n',
            "main.tf:6: syntax error: unexpected end of file, missing '}' to close the block "
            "opened at line 1",
        ),
        (b'variable "a" {\n  type = string\n  default = [1, 2\n}\n', "main.tf:"),
        (b'output "x" {\n  value = 1\n}\n\noutput "y" {\n  value = = 2\n}\n', "main.tf:6:"),
        (b'locals {\n  a = "unterminated\n}\n', "main.tf:"),
    ],
)
def test_syntax_errors_name_file_and_line(source: bytes, expected: str) -> None:
    with pytest.raises(HclError) as excinfo:
        parse_module({"main.tf": source})
    assert excinfo.value.message.startswith(expected)
    assert "syntax error" in excinfo.value.message


# --- escapes, as Terraform takes them ------------------------------------------------------
#
# Each case is the expression of ``locals { x = ... }`` on line 2 (or a whole file), with
# Terraform's verdict: None when ``terraform validate`` (v1.11.4) accepts the file, else the
# start of our reason after "main.tf:<line>: ". ``test_escape_table_agrees_with_terraform``
# checks the verdicts against the real binary when it is installed.

INVALID = "invalid escape sequence "
ESCAPE_CASES: list[tuple[str, str, str | None]] = [
    # name, file or expression, our reason (None: valid)
    ("newline", r'"a\nb"', None),
    ("return", r'"a\rb"', None),
    ("tab", r'"a\tb"', None),
    ("quote", r'"a\"b"', None),
    ("backslash", r'"a\\b"', None),
    ("backslash then q", r'"a\\q"', None),
    ("u4", r'"\u0041\u00e9\u00E9"', None),
    ("u4 then a digit", r'"\u00411"', None),
    ("u nul", r'"\u0000"', None),
    ("U8", r'"\U0001F600\U0001f600"', None),
    ("U last character", r'"\U0010FFFF"', None),
    ("template escapes", r'"$${x} %%{x} $$"', None),
    ("escape in an interpolation", r'"${"\n"}"', None),
    ("UFFFFFFFF", r'"\UFFFFFFFF"', INVALID + r'"\UFFFFFFFF": U+FFFFFFFF is past U+10FFFF'),
    ("U past the last", r'"\U00110000"', INVALID + r'"\U00110000": U+110000 is past U+10FFFF'),
    ("lone high surrogate", r'"\uD800"', INVALID + r'"\uD800": U+D800 is a surrogate'),
    ("lone low surrogate", r'"\uDFFF"', INVALID + r'"\uDFFF": U+DFFF is a surrogate'),
    ("surrogate pair", r'"\uD83D\uDE00"', INVALID + r'"\uD83D": U+D83D is a surrogate'),
    ("surrogate as U", r'"\U0000D800"', INVALID + r'"\U0000D800": U+D800 is a surrogate'),
    ("u short", r'"\u12"', INVALID + r'"\u12": \u must be followed by four hexadecimal'),
    ("u not hex", r'"\u12zz"', INVALID + r'"\u12zz": \u must be followed by four'),
    ("u braces", r'"\u{41}"', INVALID + r'"\u{41}": \u must be followed by four'),
    ("U short", r'"\U0001F60"', INVALID + r'"\U0001F60": \U must be followed by eight'),
    ("q", r'"\q"', INVALID + r'"\q": a quoted string' + "'s escapes are"),
    ("bell", r'"\a"', INVALID + r'"\a"'),
    ("backspace", r'"\b"', INVALID + r'"\b"'),
    ("form feed", r'"\f"', INVALID + r'"\f"'),
    ("vertical tab", r'"\v"', INVALID + r'"\v"'),
    ("octal nul", r'"\0"', INVALID + r'"\0"'),
    ("apostrophe", r'"\'"', INVALID + r'"\'"'),
    ("slash", r'"\/"', INVALID + r'"\/"'),
    ("dollar", r'"\${x}"', INVALID + r'"\$"'),
    ("percent", r'"\%"', INVALID + r'"\%"'),
    ("hex", r'"\x41"', INVALID + r'"\x"'),
    ("space", '"\\ "', INVALID + r'"\ "'),
    ("escape in an interpolation", r'"${"\q"}"', INVALID + r'"\q"'),
    ("escape in a directive", r'"%{ if true }\q%{ endif }"', INVALID + r'"\q"'),
    # whole files: (line of the reason)
    ("block label", 'variable "a\\q" {\n}\n', "1: " + INVALID + r'"\q"'),
    ("valid block label", 'variable "a\\u0041" {\n}\n', None),
    ("label surrogate", 'variable "a\\uD800" {\n}\n', "1: " + INVALID + r'"\uD800"'),
    ("heredocs take no escapes", "locals {\n  x = <<EOT\n\\q \\uD800\nEOT\n}\n", None),
    ("comments", "# \\q\nlocals {\n  x = 1 // \\q \\uD800\n}\n", None),
    (
        "in a default, line 3",
        'variable "v" {\n  type = map(string)\n  default = { "k\\q" = "v" }\n}\n',
        "3: " + INVALID + r'"\q"',
    ),
    (
        "after a heredoc and a comment, line 6",
        'locals {\n  h = <<-EOT\n    "\\q"\n    EOT\n  # "\\q"\n  x = "ok \\\\ \\UFFFFFFFF"\n}\n',
        "6: " + INVALID + r'"\UFFFFFFFF"',
    ),
]


def _escape_file(case: str) -> bytes:
    return (case if "\n" in case else f"locals {{\n  x = {case}\n}}\n").encode()


@pytest.mark.parametrize(("name", "case", "reason"), ESCAPE_CASES, ids=[c[0] for c in ESCAPE_CASES])
def test_escapes_terraform_refuses_are_refused_with_file_and_line(
    name: str, case: str, reason: str | None
) -> None:
    source = _escape_file(case)
    if reason is None:
        parse_module({"main.tf": source})
        return
    with pytest.raises(HclError) as excinfo:
        parse_module({"main.tf": source})
    expected = f"main.tf:{reason}" if reason[0].isdigit() else f"main.tf:2: {reason}"
    assert excinfo.value.message.startswith(expected), excinfo.value.message


def test_an_escape_refusal_names_the_path_in_a_submodule() -> None:
    files = {"main.tf": b"", "modules/a/main.tf": b'output "o" {\n  value = "\\uD800"\n}\n'}
    with pytest.raises(HclError) as excinfo:
        parse_module(files)
    assert excinfo.value.message.startswith(
        'modules/a/main.tf:2: invalid escape sequence "\\uD800"'
    )


@pytest.mark.skipif(not shutil.which("terraform"), reason="no terraform binary")
def test_escape_table_agrees_with_terraform(tmp_path) -> None:
    """The table's verdicts are Terraform's: each file through ``terraform validate``."""
    disagree = []
    for index, (name, case, reason) in enumerate(ESCAPE_CASES):
        directory = tmp_path / str(index)
        directory.mkdir()
        (directory / "main.tf").write_bytes(_escape_file(case))
        run = subprocess.run(
            ["terraform", "validate", "-json", "-no-color"],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=60,
        )
        report = json.loads(run.stdout)
        line = next(
            (d["range"]["start"]["line"] for d in report["diagnostics"] if "range" in d), None
        )
        if report["valid"] != (reason is None):
            disagree.append((name, report["diagnostics"]))
        elif reason is not None and line != (int(reason[0]) if reason[0].isdigit() else 2):
            disagree.append((name, f"terraform says line {line}"))
    assert disagree == []


def test_syntax_error_in_submodule_names_its_path() -> None:
    files = {"main.tf": b"", "modules/a/main.tf": b'resource "x" "y" {\n  a = \n}\n'}
    with pytest.raises(HclError) as excinfo:
        parse_module(files)
    assert excinfo.value.message.startswith("modules/a/main.tf:")


def test_not_utf8_names_file() -> None:
    with pytest.raises(HclError) as excinfo:
        parse_module({"main.tf": b'variable "a" {}\n# caf\xe9\n'})
    assert excinfo.value.message == "main.tf:2: file is not valid UTF-8"


def _parse_outcome(source: bytes) -> None:
    """Parsing must either succeed or raise HclError, and stop within its CPU budget.

    CPU time of this thread, not wall time: the parser's budget is CPU time, and wall time
    depends on whatever else the machine is running.
    """
    started = time.thread_time()
    with contextlib.suppress(HclError):
        parse_module({"main.tf": source})
    used = time.thread_time() - started
    assert used < 1.0, f"used {used:.2f}s of CPU for {len(source)} bytes"


def test_fuzz_truncated_files() -> None:
    source = VARIABLES_TF + MAIN_TF + OUTPUTS_TF + VERSIONS_TF
    for cut in range(0, len(source), 7):
        _parse_outcome(source[:cut])


def test_fuzz_random_bytes_and_mutations() -> None:
    rng = random.Random(1234)
    source = bytearray(VARIABLES_TF + MAIN_TF)
    for _ in range(100):
        mutated = bytearray(source)
        for _ in range(rng.randint(1, 10)):
            mutated[rng.randrange(len(mutated))] = rng.choice(b'{}[]()"=$<>#\n\\ax0')
        _parse_outcome(bytes(mutated))
    for _ in range(5):
        _parse_outcome(rng.randbytes(100_000))


@pytest.mark.parametrize(
    "source",
    [
        b"a = " + b"{" * 100_000,
        b"a = " + b"[" * 100_000,
        b"x {\n" * 25_000,
        b'a = "' + b"${" * 50_000,
        b"a = <<EOT\n" + b"${" * 50_000,
        b'a = [{x = "${(' * 7_000,
        b"a = " + b"{a = " * 20_000 + b"1" + b"}" * 20_000,
    ],
    ids=["braces", "brackets", "blocks", "interpolations", "heredoc", "mixed", "balanced"],
)
def test_pathological_nesting_finishes_quickly(source: bytes) -> None:
    _parse_outcome(source)


def test_import_does_not_load_the_grammar() -> None:
    code = (
        "import sys, chalicelib.modules.ingest.hcl\n"
        "print(any(m.startswith('tree_sitter') for m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"


def test_opentofu_files_are_read_and_hide_the_tf_file_of_their_name() -> None:
    """OpenTofu's rule: ``main.tofu`` and ``main.tf`` both present, ``main.tf`` is ignored
    (likewise ``.tofu.json`` and ``.tf.json``); a ``.tf`` file without a twin is read."""
    outputs = {
        "output": {"id": {"value": "x", "description": "The id"}},
        "terraform": {
            "required_providers": {"aws": {"source": "hashicorp/aws", "version": "~> 5.0"}}
        },
    }
    files = {
        "main.tofu": b'variable "only_in_tofu" {\n  type = string\n}\n'
        b'resource "aws_s3_bucket" "logs" {}\n',
        # Ignored: its variable of the same name would conflict (another type, a default),
        # its other variable and resource would appear.
        "main.tf": b'variable "only_in_tofu" {\n  type = number\n  default = 1\n}\n'
        b'variable "from_tf" {}\nresource "google_storage_bucket" "hidden" {}\n',
        "outputs.tofu.json": json.dumps(outputs).encode(),
        "outputs.tf.json": b'{"output": {"hidden": {"value": 1}}}',
        "versions.tf": b'variable "kept" { default = "yes" }\n',
        "override.tofu": b'variable "kept" { default = "overridden" }\n',
        "modules/sub/main.tofu": b'variable "sub_input" {}\n',
        "modules/sub/main.tf": b'variable "sub_hidden" {}\n',
    }
    result = parse_module(files)
    root = result["root"]
    inputs = {i["name"]: i for i in root["inputs"]}
    assert set(inputs) == {"only_in_tofu", "kept"}
    assert (inputs["only_in_tofu"]["type"], inputs["only_in_tofu"]["required"]) == ("string", True)
    assert inputs["kept"]["default"] == '"overridden"'
    assert root["outputs"] == [{"name": "id", "description": "The id", "sensitive": False}]
    assert root["resources"] == [{"name": "logs", "type": "aws_s3_bucket"}]
    assert result["providers"] == ["aws"]
    assert root["provider_dependencies"] == [
        {"name": "aws", "namespace": "hashicorp", "source": "hashicorp/aws", "version": "~> 5.0"}
    ]
    (sub,) = result["submodules"]
    assert [i["name"] for i in sub["inputs"]] == ["sub_input"]


def test_a_hidden_tf_file_is_not_parsed() -> None:
    """The ``.tf`` twin of a ``.tofu`` file is not read at all: a syntax OpenTofu never
    sees there does not refuse the module."""
    files = {"main.tofu": b'variable "a" {}\n', "main.tf": b"this is { not HCL"}
    assert [i["name"] for i in parse_module(files)["root"]["inputs"]] == ["a"]
    with pytest.raises(HclError):
        parse_module({"main.tf": b"this is { not HCL"})


def test_required_version_of_the_root(module_files: dict[str, bytes]) -> None:
    """The root's Terraform version constraint is kept beside its directories (for the
    SBOM), from HCL and JSON alike; the directories themselves do not carry it."""
    result = parse_module(module_files)
    assert result["required_version"] == ">= 1.3"
    assert "required_version" not in result["root"]
    json_only = {"main.tf.json": b'{"terraform": {"required_version": "~> 1.6"}}'}
    assert parse_module(json_only)["required_version"] == "~> 1.6"
    both = {"a.tf": b'terraform {\n  required_version = ">= 1.0"\n}\n', **json_only}
    assert parse_module(both)["required_version"] == ">= 1.0, ~> 1.6"
    assert parse_module({"main.tf": b""})["required_version"] == ""


def test_required_version_is_bounded() -> None:
    long = b'terraform {\n  required_version = "' + b"1" * 2000 + b'"\n}\n'
    with pytest.raises(HclError, match="required_version is 2000 bytes"):
        parse_module({"main.tf": long})
