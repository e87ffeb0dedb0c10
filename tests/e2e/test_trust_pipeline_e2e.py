"""Issue 36's "done when", as a user meets it through the real local stack: HTTP requests as
curl makes them, the real ``terraform`` binary, the real scanner (Trivy, run by the stack's
scan poller with the scan function's handler).

An organization sets ``block-severity: high``; an insecure module (a public-read S3 ACL, SSH
open to the world, an unencrypted EBS volume, a publicly accessible database) is uploaded and
ends ``quarantined`` with its reasons, with a finding for each flaw; ``terraform init`` cannot
install it; an owner releases it with a reason (recorded: who, when, why) and ``terraform
init`` installs it. A clean module gets nothing above low and is served. The SBOM validates
as CycloneDX 1.6, and the provenance verifies against the served signing key and the SHA-256
of the archive terraform downloaded, while a changed payload does not.

Which archive: terraform unpacks what it downloads into ``.terraform/modules`` (it keeps no
archive), so the test fetches the archive through the download redirect terraform follows
(the protocol's ``download`` answer, its ``X-Terraform-Get`` address) and checks that every
file in it is byte for byte the file terraform installed.

Terraform installs the modules' ``hashicorp/aws`` provider from a local filesystem mirror (a
stand-in binary; ``init`` never runs it): tests never reach the internet. Without terraform
on the PATH, the terraform steps are left out and the test reports itself skipped after the
rest passed."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import platform
import shutil
import subprocess
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest
import requests
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import load_pem_public_key
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator

from tests.conftest import doc, tar_gz
from tests.e2e.conftest import ADMIN_TOKEN, Stack, wait_for
from tests.trust.modules import INSECURE_TF

pytestmark = pytest.mark.e2e

ORG = "trusted"  # this module's own: the e2e modules share one stack, in any order
HOST = "registry.test"  # never resolved: the CLI config's host block maps its services

# Each flaw, by the rule id Trivy 0.76 reports (its AVD id without "AVD-"), and the line of
# main.tf that makes it.
FLAWS = {
    "AWS-0092": 'acl    = "public-read"',  # a public-read ACL
    "AWS-0107": 'cidr_blocks = ["0.0.0.0/0"]',  # SSH open to the world
    "AWS-0026": 'resource "aws_ebs_volume" "data" {',  # no encryption (a missing line)
    "AWS-0180": "publicly_accessible = true",  # a publicly accessible database
}
CLEAN_TF = """\
variable "name" {
  type        = string
  description = "What to call it"
  default     = "clean"
}

resource "terraform_data" "name" {
  input = var.name
}

output "name" {
  value = terraform_data.name.output
}
"""
ROOT_TF = f"""\
module "insecure" {{
  source  = "{HOST}/{ORG}/insecure/aws"
  version = "1.0.0"
}}

module "clean" {{
  source  = "{HOST}/{ORG}/clean/aws"
  version = "1.0.0"
}}
"""
SETTLED = {"ok", "quarantined", "reg_ingress_failed"}


def module_api(stack: Stack, name: str, rest: str = "") -> str:
    return stack.api(f"/organizations/{ORG}/registry-modules/private/{ORG}/{name}/aws{rest}")


def publish(stack: Stack, owner: requests.Session, name: str, main_tf: str) -> bytes:
    """Create the module and its version 1.0.0, PUT the archive to the upload link as a CI
    pipeline would, and return the archive."""
    created = owner.post(
        stack.api(f"/organizations/{ORG}/registry-modules"),
        json=doc("registry-modules", name=name, provider="aws"),
    )
    assert created.status_code == 201, created.text
    version = owner.post(
        stack.api(f"/registry-modules/{ORG}/{name}/aws/versions"),
        json=doc("registry-module-versions", version="1.0.0"),
    )
    assert version.status_code == 201, version.text
    archive = tar_gz({"main.tf": main_tf, "README.md": f"# {name}\n"})
    put = requests.put(version.json()["data"]["links"]["upload"], data=archive, timeout=30)
    assert put.status_code == 200, put.text
    return archive


def settled_version(stack: Stack, owner: requests.Session, name: str) -> dict[str, Any]:
    """The version resource once its scan decided it (held until then), read as a client
    that waits for the version does."""

    def read() -> dict[str, Any]:
        reply = owner.get(module_api(stack, name, "/version?module_version=1.0.0"))
        assert reply.status_code == 200, reply.text
        return dict(reply.json()["data"]["attributes"])

    attributes = wait_for(read, lambda a: a["status"] in SETTLED, timeout=120)
    assert attributes["status"] in SETTLED, f"{name} is still {attributes['status']}"
    return attributes


def line_of(text: str, source: str) -> int:
    (number,) = [n for n, line in enumerate(source.splitlines(), 1) if text in line]
    return number


def served_versions(stack: Stack, token: str, name: str) -> list[str]:
    reply = requests.get(
        f"{stack.url}/api/registry/v1/modules/{ORG}/{name}/aws/versions",
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert reply.status_code == 200, reply.text
    return [v["version"] for v in reply.json()["modules"][0]["versions"]]


def download_redirect(stack: Stack, token: str, name: str) -> requests.Response:
    """The protocol's download answer terraform reads ``X-Terraform-Get`` from."""
    return requests.get(
        f"{stack.url}/api/registry/v1/modules/{ORG}/{name}/aws/1.0.0/download",
        headers={"Authorization": f"Bearer {token}"},
        allow_redirects=False,
        timeout=10,
    )


def terraform_workdir(base: Path, stack: Stack, token: str) -> tuple[Path, dict[str, str]]:
    """A root module calling both modules, and terraform's environment: a CLI config mapping
    ``registry.test`` to the stack, with the token, and installing ``hashicorp/aws`` from a
    local mirror (a stand-in binary: init installs providers, it never runs them)."""
    arch = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}[platform.machine()]
    target = f"{platform.system().lower()}_{arch}"
    mirror = base / "mirror"
    binary = mirror / f"registry.terraform.io/hashicorp/aws/5.0.0/{target}"
    binary.mkdir(parents=True)
    (binary / "terraform-provider-aws_v5.0.0").write_text("#!/bin/sh\nexit 1\n")
    (binary / "terraform-provider-aws_v5.0.0").chmod(0o755)
    config = base / "cli.tfrc"
    config.write_text(
        f'host "{HOST}" {{\n'
        f'  services = {{\n    "modules.v1" = "{stack.url}/api/registry/v1/modules/"\n  }}\n}}\n'
        f'credentials "{HOST}" {{\n  token = "{token}"\n}}\n'
        f'provider_installation {{\n  filesystem_mirror {{\n    path = "{mirror}"\n  }}\n}}\n'
    )
    workdir = base / "root"
    workdir.mkdir()
    (workdir / "main.tf").write_text(ROOT_TF)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(base),
        "TF_CLI_CONFIG_FILE": str(config),
        "CHECKPOINT_DISABLE": "1",
        "TF_IN_AUTOMATION": "1",
    }
    return workdir, env


def terraform_init(workdir: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["terraform", "init", "-no-color", "-input=false", "-backend=false"],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def unpacked(archive: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        return {
            member.name: tar.extractfile(member).read()  # type: ignore[union-attr]
            for member in tar.getmembers()
            if member.isfile()
        }


def verifies(envelope: dict[str, Any], keys: dict[str, str]) -> bool:
    """Whether a signature of the DSSE envelope verifies, with ``cryptography`` alone, over
    the pre-authentication encoding of its payload, with a key the registry serves."""
    payload = base64.b64decode(envelope["payload"])
    kind = envelope["payloadType"].encode()
    signed = b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)
    for signature in envelope["signatures"]:
        pem = keys.get(signature["keyid"])
        if pem is None:
            continue
        public = load_pem_public_key(pem.encode())
        assert isinstance(public, ec.EllipticCurvePublicKey)
        try:
            public.verify(base64.b64decode(signature["sig"]), signed, ec.ECDSA(hashes.SHA256()))
            return True
        except InvalidSignature:
            continue
    return False


def changed(envelope: dict[str, Any], statement: dict[str, Any]) -> dict[str, Any]:
    payload = base64.b64encode(json.dumps(statement).encode()).decode()
    return {**envelope, "payload": payload}


def test_a_policy_quarantines_the_insecure_module_until_released_and_evidence_verifies(
    stack: Stack, tmp_path: Path
) -> None:
    started = time.monotonic()
    terraform = shutil.which("terraform") is not None
    owner = stack.session()  # the site admin, who creates the organization: its owner
    made = owner.post(
        stack.api("/organizations"), json=doc("organizations", name=ORG, email="o@trusted.io")
    )
    assert made.status_code == 201, made.text

    # The organization holds back any version with a finding of high severity or above.
    policy = owner.patch(
        stack.api(f"/organizations/{ORG}/registry-policy"),
        json=doc("registry-policies", **{"block-severity": "high"}),
    )
    assert policy.status_code == 200, policy.text
    assert policy.json()["data"]["attributes"]["holds-versions"] is True

    insecure_archive = publish(stack, owner, "insecure", INSECURE_TF)
    publish(stack, owner, "clean", CLEAN_TF)

    # The insecure module ends quarantined, with the reasons naming its flaws' rules.
    held = settled_version(stack, owner, "insecure")
    assert held["status"] == "quarantined", held
    assert held["scan-status"] == "findings"
    quarantine = held["quarantine"]
    (reason,) = quarantine["reasons"]
    assert "at or above high" in reason and all(rule in reason for rule in FLAWS), reason
    assert quarantine["quarantined-at"] and quarantine["released-by"] is None

    # Its findings API shows a finding for each flaw, high or above, at its file and line.
    reply = owner.get(module_api(stack, "insecure", "/versions/1.0.0/findings?page%5Bsize%5D=100"))
    assert reply.status_code == 200, reply.text
    listed = reply.json()
    assert listed["meta"]["scanner"] == "trivy" and listed["meta"]["scanner-version"]
    by_rule = {f["attributes"]["rule-id"]: f["attributes"] for f in listed["data"]}
    assert set(FLAWS) <= set(by_rule), sorted(by_rule)
    for rule, line in FLAWS.items():
        finding = by_rule[rule]
        assert finding["severity"] in ("high", "critical"), finding
        assert finding["file"] == "main.tf", finding
        where = line_of(line, INSECURE_TF)
        assert finding["start-line"] <= where <= finding["end-line"], (finding, where)
    # Held back, it is not served by the registry protocol: not listed, no download.
    assert served_versions(stack, ADMIN_TOKEN, "insecure") == []
    assert download_redirect(stack, ADMIN_TOKEN, "insecure").status_code == 404

    # The clean module: nothing above low, and served.
    clean = settled_version(stack, owner, "clean")
    assert clean["status"] == "ok", clean
    counts = clean["scan-counts"]
    assert counts["critical"] == counts["high"] == counts["medium"] == 0, clean
    reply = owner.get(module_api(stack, "clean", "/versions/1.0.0/findings"))
    assert reply.status_code == 200, reply.text
    assert {f["attributes"]["severity"] for f in reply.json()["data"]} <= {"low", "unknown"}
    assert served_versions(stack, ADMIN_TOKEN, "clean") == ["1.0.0"]

    # terraform init cannot install the quarantined module.
    workdir, env = terraform_workdir(tmp_path, stack, ADMIN_TOKEN)
    refused = ""
    if terraform:
        result = terraform_init(workdir, env)
        refused = result.stdout + result.stderr
        assert result.returncode != 0, refused
        # What terraform answers: the registry lists no version of it (the clean one installs).
        assert "Error: Module has no versions" in refused, refused
        assert f'"{HOST}/{ORG}/insecure/aws" (main.tf:1) has no versions' in refused, refused
        assert not (workdir / ".terraform/modules/insecure").exists()

    # An owner releases it with a reason, recorded with who and when.
    why = "the bucket serves a public website: reviewed by the platform team"
    released = owner.post(
        module_api(stack, "insecure", "/versions/1.0.0/actions/release"),
        json=doc("registry-module-version-releases", reason=why),
    )
    assert released.status_code == 200, released.text
    attributes = released.json()["data"]["attributes"]
    assert attributes["status"] == "ok"
    record = attributes["quarantine"]
    assert record["reasons"] == [reason] and record["release-reason"] == why
    assert record["released-by"]["type"] == "user" and record["released-by"]["name"] == "admin"
    assert record["released-at"] >= quarantine["quarantined-at"]
    assert served_versions(stack, ADMIN_TOKEN, "insecure") == ["1.0.0"]

    # terraform init now installs both; the archive it downloaded is the one the download
    # redirect it follows points at, byte for byte what it unpacked.
    redirect = download_redirect(stack, ADMIN_TOKEN, "insecure")
    assert redirect.status_code == 204, redirect.text
    fetched = requests.get(redirect.headers["X-Terraform-Get"], timeout=30)
    assert fetched.status_code == 200
    downloaded = fetched.content
    assert downloaded == insecure_archive
    if terraform:
        result = terraform_init(workdir, env)
        assert result.returncode == 0, result.stdout + result.stderr
        manifest = json.loads((workdir / ".terraform/modules/modules.json").read_text())
        installed = {m["Key"]: m for m in manifest["Modules"] if m["Key"]}
        assert {k: m["Version"] for k, m in installed.items()} == {
            "insecure": "1.0.0",
            "clean": "1.0.0",
        }
        directory = workdir / installed["insecure"]["Dir"]
        for name, content in unpacked(downloaded).items():
            assert (directory / name).read_bytes() == content, name

    # The SBOM: CycloneDX 1.6 JSON, valid against cyclonedx-python-lib's bundled schema.
    sbom = owner.get(module_api(stack, "insecure", "/versions/1.0.0/sbom"))
    assert sbom.status_code == 200, sbom.text
    assert sbom.headers["Content-Type"].startswith("application/vnd.cyclonedx+json")
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(sbom.text) is None
    bom = sbom.json()
    assert bom["specVersion"] == "1.6"
    archive_sha256 = hashlib.sha256(downloaded).hexdigest()
    hashes_listed = bom["metadata"]["component"]["hashes"]
    assert {"alg": "SHA-256", "content": archive_sha256} in hashes_listed

    # The provenance: verifies against the served key (no token needed) and names the
    # archive terraform downloaded; a changed payload does not verify.
    provenance = owner.get(module_api(stack, "insecure", "/versions/1.0.0/provenance"))
    assert provenance.status_code == 200, provenance.text
    assert provenance.headers["Content-Type"].startswith("application/vnd.dsse.envelope.v1+json")
    served = requests.get(f"{stack.url}/api/registry/v1/signing-keys", timeout=10)
    assert served.status_code == 200, served.text
    keys = {key["keyid"]: key["pem"] for key in served.json()["keys"]}
    envelope = provenance.json()
    assert verifies(envelope, keys)
    statement = json.loads(base64.b64decode(envelope["payload"]))
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    assert statement["predicateType"] == "https://slsa.dev/provenance/v1"
    assert [s["digest"]["sha256"] for s in statement["subject"]] == [archive_sha256]
    how = statement["predicate"]["buildDefinition"]["externalParameters"]
    assert how["source"] == "upload" and how["version"] == "1.0.0", how
    forged = json.loads(json.dumps(statement))
    forged["subject"][0]["digest"]["sha256"] = hashlib.sha256(b"another archive").hexdigest()
    assert not verifies(changed(envelope, forged), keys)
    assert not verifies(changed(envelope, {**statement, "extra": 1}), keys)

    print(f"trust pipeline scenario: {time.monotonic() - started:.1f} s")
    if refused:
        print(f"terraform init of the quarantined module answered:\n{refused}")
    if not terraform:
        pytest.skip("terraform is not on PATH: the scenario ran without its terraform steps")
