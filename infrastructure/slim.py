"""Leave out of the deployment zip what no function loads, then prove the rest still works.

botocore ships the API models of every AWS service (about 15 MB of the zip's 26); the
registry's functions call five. ``python -m infrastructure.slim out/deployment.zip`` drops
the other models (``make package`` runs it after ``chalice package``), then unpacks the result
and creates a client of each kept service from the unpacked copy in a fresh interpreter: a
service the code starts calling without being listed here fails the build, not a request.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# dynamodb through PynamoDB; s3, sqs and kms through chalicelib.core.aws.client; sts is what
# botocore's credential chain may ask when a deployment assumes a role.
SERVICES = ("dynamodb", "s3", "sqs", "kms", "sts")
MODELS = "botocore/data/"


def called_services(package: Path = ROOT / "chalicelib") -> set[str]:
    """The service names the code passes to ``client("<name>")`` anywhere in ``package``."""
    found: set[str] = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", None)) == "client"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                found.add(node.args[0].value)
    return found


def kept(name: str) -> bool:
    """Whether a zip member stays: everything but other services' botocore models."""
    if not name.startswith(MODELS):
        return True
    rest = name[len(MODELS) :]
    return "/" not in rest or rest.split("/", 1)[0] in SERVICES


def slim(archive: Path) -> tuple[int, int]:
    """Rewrite ``archive`` without the unused models; its size before and after, in bytes."""
    before = archive.stat().st_size
    slimmed = archive.with_suffix(".slim.zip")
    with zipfile.ZipFile(archive) as source, zipfile.ZipFile(slimmed, "w") as target:
        for info in source.infolist():
            if kept(info.filename):
                target.writestr(info, source.read(info), compress_type=info.compress_type)
    slimmed.replace(archive)
    return before, archive.stat().st_size


def verify(archive: Path) -> None:
    """Create a client of every kept service from the unpacked zip (not from this venv)."""
    unpacked = Path(tempfile.mkdtemp())
    try:
        with zipfile.ZipFile(archive) as zipped:
            zipped.extractall(unpacked)
        code = (
            "import sys; sys.path.insert(0, sys.argv[1]); import boto3, botocore; "
            "assert botocore.__file__.startswith(sys.argv[1]), botocore.__file__; "
            "[boto3.client(s, region_name='us-east-1') for s in sys.argv[2:]]"
        )
        subprocess.run(
            [sys.executable, "-I", "-c", code, str(unpacked), *SERVICES],
            check=True,
            capture_output=True,
            text=True,
        )
    finally:
        shutil.rmtree(unpacked, ignore_errors=True)


def main(argv: list[str]) -> None:
    missing = called_services() - set(SERVICES)
    if missing:
        raise SystemExit(f"chalicelib calls {sorted(missing)}: add them to SERVICES")
    archive = Path(argv[0])
    before, after = slim(archive)
    verify(archive)
    print(f"slimmed {archive}: {before / 1e6:.1f} MB -> {after / 1e6:.1f} MB")


if __name__ == "__main__":
    main(sys.argv[1:])
