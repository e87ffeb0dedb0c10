# ruff: noqa: E501  (the HCL templates below keep realistic long lines)
"""Benchmark module ingestion: read_archive + parse_module on a generated VPC-sized module.

Run: python bench/ingest_bench.py [--runs N] [--no-hcl2]

The module is generated in memory, shaped like terraform-aws-vpc: a large root module with
hundreds of variables and outputs, plus submodules and examples (~85 files, a few hundred KB
of HCL).  Each figure is the median of N runs (default 5).
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chalicelib.modules.ingest.archive import read_archive  # noqa: E402
from chalicelib.modules.ingest.hcl import parse_module  # noqa: E402

SUBNET_KINDS = [
    "public",
    "private",
    "database",
    "redshift",
    "elasticache",
    "intra",
    "outpost",
    "customer",
]


FEATURES = [
    "enable_dns_hostnames",
    "enable_flow_log",
    "manage_default_security_group",
    "create_igw",
    "enable_vpn_gateway",
    "customer_gateways",
    "dhcp_options_domain_name",
    "nat_eip_tags",
    "flow_log_max_aggregation_interval",
    "default_route_table_routes",
]


def _variable(name: str, i: int) -> str:
    shape = i % 6
    if shape == 0:
        return f'''variable "{name}" {{
  description = "Controls if {name.replace("_", " ")} should be created (it affects almost all resources)"
  type        = bool
  default     = {"true" if i % 2 else "false"}
}}
'''
    if shape == 1:
        return f'''variable "{name}" {{
  description = "A list of {name.replace("_", " ")} inside the VPC"
  type        = list(string)
  default     = []
}}
'''
    if shape == 2:
        return f'''variable "{name}" {{
  description = "Additional tags for the {name.replace("_", " ")}"
  type        = map(string)
  default = {{
    Terraform   = "true"
    Environment = "dev-${{{i}}}"
  }}
}}
'''
    if shape == 3:
        return f'''variable "{name}" {{
  description = <<-EOT
    Configuration object for {name}.
    Each key maps to a rule; see the README for details (#{i}).
  EOT
  type = list(object({{
    rule_number = number
    rule_action = string
    from_port   = optional(number, 0)
    to_port     = optional(number)
    protocol    = string
    cidr_block  = optional(string, "0.0.0.0/0")
  }}))
  default = [
    {{
      rule_number = 100
      rule_action = "allow"
      protocol    = "-1"
    }},
  ]
}}
'''
    if shape == 4:
        return f'''variable "{name}" {{
  description = "Name to be used on {name} resources as identifier"
  type        = string
  default     = null
}}
'''
    return f'''variable "{name}" {{
  description = "The ARN of the KMS Key to use when encrypting {name}. Must be set when enabled"
  type        = string
}}
'''


def _resources(kind: str) -> str:
    return f'''locals {{
  create_{kind}_subnets = local.create_vpc && local.len_{kind}_subnets > 0
  len_{kind}_subnets    = max(length(var.{kind}_subnets), length(var.{kind}_subnet_ipv6_prefixes))
}}

resource "aws_subnet" "{kind}" {{
  count = local.create_{kind}_subnets && (!var.one_nat_gateway_per_az || local.len_{kind}_subnets >= length(var.azs)) ? local.len_{kind}_subnets : 0

  assign_ipv6_address_on_creation = var.enable_ipv6 && var.{kind}_subnet_ipv6_native ? true : var.{kind}_subnet_assign_ipv6_address_on_creation
  availability_zone               = length(regexall("^[a-z]{{2}}-", element(var.azs, count.index))) > 0 ? element(var.azs, count.index) : null
  cidr_block                      = var.{kind}_subnet_ipv6_native ? null : element(concat(var.{kind}_subnets, [""]), count.index)
  ipv6_cidr_block                 = var.enable_ipv6 && length(var.{kind}_subnet_ipv6_prefixes) > 0 ? cidrsubnet(aws_vpc.this[0].ipv6_cidr_block, 8, var.{kind}_subnet_ipv6_prefixes[count.index]) : null
  vpc_id                          = local.vpc_id

  tags = merge(
    {{
      Name = try(
        var.{kind}_subnet_names[count.index],
        format("${{var.name}}-${{var.{kind}_subnet_suffix}}-%s", element(var.azs, count.index))
      )
    }},
    var.tags,
    var.{kind}_subnet_tags,
    lookup(var.{kind}_subnet_tags_per_az, element(var.azs, count.index), {{}})
  )
}}

resource "aws_route_table" "{kind}" {{
  count = local.create_{kind}_subnets ? 1 : 0

  vpc_id = local.vpc_id

  dynamic "route" {{
    for_each = var.{kind}_routes
    content {{
      cidr_block = route.value.cidr_block
      gateway_id = try(route.value.gateway_id, null)
    }}
  }}

  tags = merge(
    {{ "Name" = "${{var.name}}-${{var.{kind}_subnet_suffix}}" }},
    var.tags,
    var.{kind}_route_table_tags,
  )
}}

resource "aws_route_table_association" "{kind}" {{
  count = local.create_{kind}_subnets ? local.len_{kind}_subnets : 0

  subnet_id      = element(aws_subnet.{kind}[*].id, count.index)
  route_table_id = element(aws_route_table.{kind}[*].id, var.single_nat_gateway ? 0 : count.index)
}}

resource "aws_network_acl" "{kind}" {{
  count = local.create_{kind}_subnets && var.{kind}_dedicated_network_acl ? 1 : 0

  vpc_id     = local.vpc_id
  subnet_ids = aws_subnet.{kind}[*].id

  tags = merge(
    {{ "Name" = "${{var.name}}-${{var.{kind}_subnet_suffix}}" }},
    var.tags,
    var.{kind}_acl_tags,
  )
}}

resource "aws_network_acl_rule" "{kind}_inbound" {{
  count = local.create_{kind}_subnets && var.{kind}_dedicated_network_acl ? length(var.{kind}_inbound_acl_rules) : 0

  network_acl_id = aws_network_acl.{kind}[0].id

  egress          = false
  rule_number     = var.{kind}_inbound_acl_rules[count.index]["rule_number"]
  rule_action     = var.{kind}_inbound_acl_rules[count.index]["rule_action"]
  from_port       = lookup(var.{kind}_inbound_acl_rules[count.index], "from_port", null)
  to_port         = lookup(var.{kind}_inbound_acl_rules[count.index], "to_port", null)
  protocol        = var.{kind}_inbound_acl_rules[count.index]["protocol"]
  cidr_block      = lookup(var.{kind}_inbound_acl_rules[count.index], "cidr_block", null)
}}

data "aws_iam_policy_document" "{kind}_flow_log" {{
  count = local.create_{kind}_subnets ? 1 : 0

  statement {{
    sid     = "AWSVPCFlowLogsAssumeRole"
    actions = ["sts:AssumeRole"]
    principals {{
      type        = "Service"
      identifiers = ["vpc-flow-logs.amazonaws.com"]
    }}
  }}
}}
'''


def _outputs(kind: str) -> str:
    parts = []
    for attr, desc in [
        ("subnets", "List of IDs of {k} subnets"),
        ("subnet_arns", "List of ARNs of {k} subnets"),
        ("subnets_cidr_blocks", "List of cidr_blocks of {k} subnets"),
        ("subnets_ipv6_cidr_blocks", "List of IPv6 cidr_blocks of {k} subnets in an IPv6 VPC"),
        ("route_table_ids", "List of IDs of {k} route tables"),
        ("network_acl_id", "ID of the {k} network ACL"),
        ("network_acl_arn", "ARN of the {k} network ACL"),
    ]:
        parts.append(
            f'''output "{kind}_{attr}" {{
  description = "{desc.format(k=kind)}"
  value       = try(aws_subnet.{kind}[*].id, [])
}}
'''
        )
    return "\n".join(parts)


def _readme(title: str) -> str:
    body = "\n".join(f"| {kind}_subnets | list(string) | [] | no |" for kind in SUBNET_KINDS)
    return f"# {title}\n\nTerraform module which creates VPC resources on AWS.\n\n{body}\n"


def generate_module() -> dict[str, bytes]:
    files: dict[str, str] = {}
    names = [
        f"{kind}_{suffix}"
        for kind in SUBNET_KINDS
        for suffix in [
            "subnets",
            "subnet_names",
            "subnet_tags",
            "subnet_tags_per_az",
            "route_table_tags",
            "acl_tags",
            "inbound_acl_rules",
            "outbound_acl_rules",
            "dedicated_network_acl",
            "subnet_suffix",
            "subnet_ipv6_native",
            "subnet_ipv6_prefixes",
            "subnet_assign_ipv6_address_on_creation",
            "routes",
            "kms_key_arn",
        ]
    ]
    names += [f"{feature}_{i:02d}" for i, feature in enumerate(FEATURES * 10)]
    files["variables.tf"] = "\n".join(_variable(n, i) for i, n in enumerate(names))
    for kind in SUBNET_KINDS:
        files[f"{kind}.tf"] = _resources(kind)
    files["outputs.tf"] = "\n".join(_outputs(kind) for kind in SUBNET_KINDS)
    files["versions.tf"] = """terraform {
  required_version = ">= 1.0"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.30"
    }
  }
}
"""
    files["README.md"] = _readme("AWS VPC Terraform module")
    for sub in ["vpc-endpoints", "flow-log", "nat", "peering", "transit", "ipam"]:
        base = f"modules/{sub}"
        files[f"{base}/variables.tf"] = "\n".join(
            _variable(f"{sub.replace('-', '_')}_{n}", i) for i, n in enumerate(names[:80])
        )
        files[f"{base}/main.tf"] = _resources(sub.replace("-", "_"))
        files[f"{base}/outputs.tf"] = _outputs(sub.replace("-", "_"))
        files[f"{base}/versions.tf"] = files["versions.tf"]
        files[f"{base}/locals.tf"] = 'locals {\n  name = "x"\n}\n'
        files[f"{base}/README.md"] = _readme(sub)
    for ex in [
        "complete",
        "simple",
        "ipv6",
        "network-acls",
        "outpost",
        "secondary",
        "ipam",
        "flow",
    ]:
        base = f"examples/{ex}"
        files[f"{base}/main.tf"] = f"""provider "aws" {{
  region = local.region
}}

locals {{
  name   = "ex-{ex}"
  region = "eu-west-1"
  azs    = slice(data.aws_availability_zones.available.names, 0, 3)
}}

data "aws_availability_zones" "available" {{}}

module "vpc" {{
  source = "../../"

  name = local.name
  cidr = "10.0.0.0/16"
  azs  = local.azs

  private_subnets = [for k, v in local.azs : cidrsubnet("10.0.0.0/16", 4, k)]
  public_subnets  = [for k, v in local.azs : cidrsubnet("10.0.0.0/16", 8, k + 48)]

  enable_nat_gateway = true
  single_nat_gateway = true
}}

module "vpc_endpoints" {{
  source  = "terraform-aws-modules/vpc/aws//modules/vpc-endpoints"
  version = "~> 5.0"

  vpc_id = module.vpc.vpc_id
}}
"""
        files[f"{base}/outputs.tf"] = _outputs("private")
        files[f"{base}/variables.tf"] = _variable("example_toggle", 0)
        files[f"{base}/versions.tf"] = files["versions.tf"]
        files[f"{base}/README.md"] = _readme(ex)
    return {path: text.encode() for path, text in files.items()}


def build_targz(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path, content in sorted(files.items()):
            info = tarfile.TarInfo(f"./{path}")
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return buf.getvalue()


class _Body:
    """Non-seekable stream like a boto3 StreamingBody."""

    def __init__(self, data: bytes) -> None:
        self._buf = io.BytesIO(data)

    def read(self, n: int = -1) -> bytes:
        return self._buf.read(n)


def median_ms(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-hcl2", action="store_true", help="skip the python-hcl2 baseline")
    args = parser.parse_args()

    files = generate_module()
    data = build_targz(files)
    tf_files = {p: c for p, c in files.items() if p.endswith(".tf")}
    hcl_bytes = sum(len(c) for c in tf_files.values())
    print(
        f"module: {len(files)} files ({len(tf_files)} .tf, {hcl_bytes / 1024:.0f} KB of HCL), "
        f"archive {len(data) / 1024:.1f} KB"
    )

    limits = {"max_compressed": 50 * 2**20, "max_unpacked": 200 * 2**20}
    contents = read_archive(_Body(data), **limits)
    assert contents.files == files, "archive round trip changed the files"
    meta = parse_module(contents.files)
    print(
        f"parsed: {len(meta['root']['inputs'])} inputs, {len(meta['root']['outputs'])} outputs, "
        f"{len(meta['root']['resources'])} resources, {len(meta['submodules'])} submodules, "
        f"{len(meta['examples'])} examples"
    )

    read_ms = median_ms(lambda: read_archive(_Body(data), **limits), args.runs)
    parse_ms = median_ms(lambda: parse_module(contents.files), args.runs)
    line = f"ingest: read_archive {read_ms:.1f} ms, parse {parse_ms:.1f} ms (tree-sitter)"
    try:
        import hcl2  # type: ignore[import-not-found]
    except ImportError:
        hcl2 = None
    if hcl2 is not None and not args.no_hcl2:
        texts = [c.decode() for c in tf_files.values()]
        hcl2_ms = median_ms(lambda: [hcl2.loads(t) for t in texts], args.runs)
        line += f", python-hcl2 {hcl2_ms:.0f} ms ({hcl2_ms / parse_ms:.0f}x slower)"
    print(line)


if __name__ == "__main__":
    main()
