"""Leave out of the deployment zip what no function loads, then prove the rest still works.

botocore ships the API models of every AWS service (about 15 MB of the zip's 26); the
registry's functions call five. ``python -m infrastructure.slim out/deployment.zip`` drops
the other models (``make package`` runs it after ``chalice package``), then unpacks the result
and creates a client of each kept service from the unpacked copy in a fresh interpreter: a
service the code starts calling without being listed here fails the build, not a request.

It also adds the bytecode of our own code (``app.py``, ``chalicelib/``): Lambda's
``/var/task`` is read-only and the zip Chalice builds has no ``.pyc``, so without it every
cold start compiles each module it imports again (about a third of an entry module's import).
The ``.pyc`` files are unchecked-hash ones (PEP 552: loaded without comparing the source's
timestamp, which unzipping need not keep), compiled by this interpreter: the one whose
version ``chalice package`` wrote into the template as the runtime. The check then imports
every function's entry module, and the libraries they load at first use, from the unpacked
zip.
"""

from __future__ import annotations

import ast
import importlib.util
import py_compile
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# dynamodb through PynamoDB; s3, sqs, kms and logs (the audit export) through
# chalicelib.core.data.aws.client; sts is what botocore's credential chain may ask when a
# deployment assumes a role.
SERVICES = ("dynamodb", "s3", "sqs", "kms", "logs", "sts")
MODELS = "botocore/data/"
# Parts of libraries nothing imports: lxml's objectify, html and schematron modules and its C
# headers (signxml, the SAML signatures, uses lxml.etree alone): about 2.2 MB of the zip.
UNUSED = ("lxml/objectify.", "lxml/html/", "lxml/isoschematron/", "lxml/includes/")
# Libraries the code imports at first use (so the entry modules' import does not prove them):
# the check imports them from the zip too.
FIRST_USE = ("signxml", "lxml.etree", "pgpy", "dulwich.repo", "markdown_it", "nh3", "jinja2")


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
    """Whether a zip member stays: everything but other services' botocore models and the
    ``UNUSED`` parts of libraries."""
    if name.startswith(UNUSED):
        return False
    if not name.startswith(MODELS):
        return True
    rest = name[len(MODELS) :]
    return "/" not in rest or rest.split("/", 1)[0] in SERVICES


def ours(name: str) -> bool:
    """Whether a zip member is our own source, shipped with its bytecode."""
    return name == "app.py" or (name.startswith("chalicelib/") and name.endswith(".py"))


def local_bytecode(name: str) -> bool:
    """Whether a zip member is a bytecode cache of our code that Chalice copied from the
    project folder (compiled here, maybe by another Python): replaced by the build's own."""
    return name.startswith(("chalicelib/", "__pycache__/")) and "__pycache__/" in name


def bytecode(source: bytes, name: str) -> tuple[str, bytes]:
    """The zip member name and content of ``name``'s unchecked-hash ``.pyc``."""
    with tempfile.TemporaryDirectory() as work:
        path = Path(work, "module.py")
        path.write_bytes(source)
        compiled = py_compile.compile(
            str(path),
            dfile=name,
            doraise=True,
            invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
        )
        assert compiled is not None  # doraise: a failure raises
        cached = importlib.util.cache_from_source(name)
        return cached, Path(compiled).read_bytes()


def slim(archive: Path) -> tuple[int, int]:
    """Rewrite ``archive`` without the unused models and with our code's bytecode; its size
    before and after, in bytes."""
    before = archive.stat().st_size
    slimmed = archive.with_suffix(".slim.zip")
    with zipfile.ZipFile(archive) as source, zipfile.ZipFile(slimmed, "w") as target:
        for info in source.infolist():
            if not kept(info.filename) or local_bytecode(info.filename):
                continue
            data = source.read(info)
            target.writestr(info, data, compress_type=info.compress_type)
            if ours(info.filename):
                cached, pyc = bytecode(data, info.filename)
                target.writestr(cached, pyc, compress_type=zipfile.ZIP_DEFLATED)
    slimmed.replace(archive)
    return before, archive.stat().st_size


def verify(archive: Path) -> None:
    """Create a client of every kept service, and import every function's entry module,
    from the unpacked zip (not from this venv)."""
    from infrastructure.groups import ALL_FUNCTIONS

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
        entries = sorted({f.entry_module for f in ALL_FUNCTIONS}) + list(FIRST_USE)
        code = (
            "import importlib, sys; sys.path.insert(0, sys.argv[1]); "
            "[importlib.import_module(m) for m in sys.argv[2:]]; "
            "import chalicelib; assert chalicelib.__file__.startswith(sys.argv[1])"
        )
        imported = subprocess.run(
            [sys.executable, "-I", "-B", "-c", code, str(unpacked), *entries],
            capture_output=True,
            text=True,
            env={"AWS_DEFAULT_REGION": "us-east-1"},
        )
        if imported.returncode:
            raise SystemExit(f"the entry modules do not import from the zip:\n{imported.stderr}")
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
