"""Leave out of the deployment zip what no function loads, then prove the rest still works.

botocore ships the API models of every AWS service (about 15 MB of the zip's 26); the
registry's functions call five. ``python -m infrastructure.slim out/deployment.zip`` drops
the other models (``make package`` runs it after ``chalice package``), then unpacks the result
and creates a client of each kept service from the unpacked copy in a fresh interpreter: a
service the code starts calling without being listed here fails the build, not a request.

It also ships our own code (``app.py``, ``chalicelib/``) as bytecode: Lambda's ``/var/task``
is read-only and the zip Chalice builds has no ``.pyc``, so without it every cold start
compiles each module it imports again (about a third of an entry module's import). Since
issue #40 the bytecode replaces the sources (``x.py`` -> ``x.pyc`` beside it, which Python
imports without a source: 0.7 MB less): a traceback in the logs names each file and line but
no longer quotes the line (the release's tag has it). The ``.pyc`` files are unchecked-hash
ones (PEP 552), compiled by this interpreter: the one whose version ``chalice package`` wrote
into the template as the runtime. The check then imports every function's entry module, and
the libraries they load at first use, from the unpacked zip.

Issue #40's budget is 15 MB. Besides the models, what no function loads goes: parts of
libraries nothing imports (``UNUSED``: dulwich's command line and porcelain, pydantic's v1,
cffi's and pycparser's Python halves, which only build extensions, ...), files no import
reads (type stubs, Cython sources and C headers, wheels' ``RECORD``, botocore's examples and
its CA bundle, which certifi's replaces), and the symbol tables of the compiled extensions
(``strip --strip-unneeded``, binutils': the dynamic symbols Python links against stay). Our
bytecode is compiled without the column tables of each instruction (``-X no_debug_ranges``:
they only place a traceback's ``^^^`` markers; 0.3 MB). Members are compressed at level 9.
"""

from __future__ import annotations

import ast
import functools
import os
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
# botocore's models, and boto3's resource models (the code makes clients only), by service.
MODELS = ("botocore/data/", "boto3/data/")
# Parts of libraries nothing imports, and files no import reads.
UNUSED = (
    # lxml's objectify, html and schematron modules and its C headers (signxml, the SAML
    # signatures, uses lxml.etree alone): about 2.2 MB of the zip.
    "lxml/objectify.",
    "lxml/html/",
    "lxml/isoschematron/",
    "lxml/includes/",
    # ... nor its SAX bridge, builder, doctest and cssselect helpers, nor the pure-Python
    # copy of _elementpath (its compiled twin is what lxml.etree imports).
    "lxml/sax.",
    "lxml/builder.",
    "lxml/ElementInclude.py",
    "lxml/cssselect.py",
    "lxml/doctestcompare.py",
    "lxml/usedoctest.py",
    "lxml/pyclasslookup.py",
    "lxml/_elementpath.py",
    # dulwich's command line, porcelain (its git-like commands), servers and tests: the code
    # fetches with dulwich.client into a dulwich.repo.MemoryRepo.
    "dulwich/porcelain/",
    "dulwich/cli.py",
    "dulwich/__main__.py",
    "dulwich/tests/",
    "dulwich/contrib/",
    "dulwich/aiohttp/",
    "dulwich/cloud/",
    "dulwich/lfs_server.py",
    # porcelain's commands, which no other module imports
    *(
        f"dulwich/{command}.py"
        for command in (
            "am",
            "annotate",
            "bisect",
            "diffstat",
            "fastexport",
            "filter_branch",
            "mailmap",
            "maintenance",
            "mbox",
            "range_diff",
            "rerere",
            "stash",
            "stripspace",
            "subtree",
            "whitespace",
        )
    ),
    # pydantic's v1 API: imported only for a type with v1's __get_validators__ (none here).
    "pydantic/v1/",
    # cffi's Python half and its C parser build extensions; a built one (argon2's) needs
    # only _cffi_backend, which stays.
    "cffi/",
    "pycparser/",
    # dateutil's own time zone database: botocore uses tzutc and tzlocal only.
    "dateutil/zoneinfo/dateutil-zoneinfo.tar.gz",
    # botocore's CA bundle: botocore.httpsession uses certifi's when certifi is installed
    # (signxml requires it); verify() checks that it does.
    "botocore/cacert.pem",
    # cyclonedx's schemas serve its validators (and cyclonedx.spdx): the SBOM is built and
    # serialized only.
    "cyclonedx/schema/_res/bom-",
    "cyclonedx/schema/_res/jsf-",
    "cyclonedx/schema/_res/cryptography-defs.",
    "cyclonedx/schema/_res/spdx.SNAPSHOT.",
    # ... nor its SPDX license parsing (cyclonedx.spdx, which only the license factories
    # import: the SBOM names no licenses), with the libraries only it uses.
    "cyclonedx/spdx.py",
    "cyclonedx/contrib/license/",
    "license_expression/",
    "boolean/",
)
# Files no import reads, by how their names end: type stubs, Cython sources and includes, C
# headers, wheels' installation records, botocore's examples (documentation).
UNUSED_ENDINGS = (".pyi", ".pyx", ".pxd", ".pxi", ".h", ".dist-info/RECORD", "/examples-1.json")
# ... and by the folder they are in: the SBOMs of what a wheel bundles (its dist-info/sboms).
UNUSED_FOLDERS = (".dist-info/sboms/",)
# A wheel's METADATA keeps its headers (what importlib.metadata reads: name, version,
# requirements, entry points' owner) and loses its body, the project's long description.
METADATA = ".dist-info/METADATA"
# Libraries the code imports at first use (so the entry modules' import does not prove them):
# the check imports them from the zip too, with each stripped extension.
FIRST_USE = (
    "signxml",
    "lxml.etree",
    "pgpy",
    "dulwich.repo",
    "dulwich.client",
    "markdown_it",
    "nh3",
    "jinja2",
    "markupsafe._speedups",
    "argon2",
    "cryptography.hazmat.primitives.ciphers.aead",
    "pydantic",
    "tree_sitter",
    "tree_sitter_hcl",
    "cyclonedx.output.json",
    "cyclonedx.model.bom",
)


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
    """Whether a zip member stays: everything but other services' models and the ``UNUSED``
    parts of libraries."""
    if name.startswith(UNUSED) or name.endswith(UNUSED_ENDINGS):
        return False
    if any(folder in name for folder in UNUSED_FOLDERS):
        return False
    for models in MODELS:
        if name.startswith(models):
            rest = name[len(models) :]
            return "/" not in rest or rest.split("/", 1)[0] in SERVICES
    return True


def ours(name: str) -> bool:
    """Whether a zip member is our own source, shipped as its bytecode alone."""
    return name == "app.py" or (name.startswith("chalicelib/") and name.endswith(".py"))


def local_bytecode(name: str) -> bool:
    """Whether a zip member is a bytecode cache of our code that Chalice copied from the
    project folder (compiled here, maybe by another Python): replaced by the build's own."""
    return name.startswith(("chalicelib/", "__pycache__/")) and "__pycache__/" in name


def headers(metadata: bytes) -> bytes:
    """A wheel's METADATA without its body (the long description after the headers)."""
    head, blank, _ = metadata.partition(b"\n\n")
    return head + b"\n" if blank else metadata


def extension(name: str) -> bool:
    """Whether a zip member is a compiled extension (or library), stripped of its symbols."""
    return name.endswith(".so") or ".so." in name.rsplit("/", 1)[-1]


_COMPILE = """
import py_compile, sys
work = sys.argv[1]
for i, name in enumerate(sys.argv[2:]):
    py_compile.compile(
        f"{work}/{i}.py",
        cfile=f"{work}/{i}.pyc",
        dfile=name,
        doraise=True,
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
"""


def bytecodes(sources: dict[str, bytes]) -> dict[str, bytes]:
    """The unchecked-hash ``.pyc`` of each source (zip member name -> content), by its
    member name beside where the source was (``x.py`` -> ``x.pyc``: Python imports it
    without a source), compiled in one interpreter without column tables."""
    names = list(sources)
    with tempfile.TemporaryDirectory() as work:
        for i, name in enumerate(names):
            Path(work, f"{i}.py").write_bytes(sources[name])
        subprocess.run(
            [sys.executable, "-X", "no_debug_ranges", "-c", _COMPILE, work, *names],
            check=True,
            capture_output=True,
        )
        return {f"{name}c": Path(work, f"{i}.pyc").read_bytes() for i, name in enumerate(names)}


def stripped(binaries: dict[str, bytes]) -> dict[str, bytes]:
    """Each extension (zip member name -> content) without its symbol tables and debugging
    sections (``strip --strip-unneeded``): what the dynamic linker needs stays."""
    if not binaries:
        return {}
    strip = shutil.which("strip")
    if strip is None:
        raise SystemExit("infrastructure.slim needs binutils' strip (apt-get install binutils)")
    with tempfile.TemporaryDirectory() as work:
        paths = [Path(work, str(i)) for i in range(len(binaries))]
        for path, data in zip(paths, binaries.values(), strict=True):
            path.write_bytes(data)
        subprocess.run([strip, "--strip-unneeded", *map(str, paths)], check=True)
        return {name: path.read_bytes() for name, path in zip(binaries, paths, strict=True)}


def slim(archive: Path) -> tuple[int, int]:
    """Rewrite ``archive`` without what no function loads, with stripped extensions and our
    code as bytecode; its size before and after, in bytes."""
    before = archive.stat().st_size
    slimmed = archive.with_suffix(".slim.zip")
    with zipfile.ZipFile(archive) as source:
        members = [
            (info, source.read(info))
            for info in source.infolist()
            if kept(info.filename) and not local_bytecode(info.filename)
        ]
    # Our sources leave the zip: their bytecode replaces them (below).
    sources = {info.filename: data for info, data in members if ours(info.filename)}
    binaries = {info.filename: data for info, data in members if extension(info.filename)}
    replaced = stripped(binaries)
    compiled = bytecodes(sources)
    with zipfile.ZipFile(slimmed, "w", compresslevel=9) as target:
        for info, data in members:
            if info.filename in sources:
                continue
            if info.filename.endswith(METADATA):
                data = headers(data)
            target.writestr(info, replaced.get(info.filename, data), info.compress_type, 9)
        for name, pyc in compiled.items():
            target.writestr(name, pyc, zipfile.ZIP_DEFLATED, 9)
    slimmed.replace(archive)
    return before, archive.stat().st_size


# What the stripped extensions and the trimmed libraries still do, run from the unpacked zip:
# an SBOM of a module parsed with tree-sitter (cyclonedx without its schemas), a password
# hash (argon2 through _cffi_backend), AES-GCM (cryptography), a sanitized README (nh3), an
# XML document (lxml).
_FIRST_USES = """
import sys
sys.path.insert(0, sys.argv[1])
from datetime import UTC, datetime
import argon2, nh3
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from lxml import etree
from chalicelib.modules.ingest.hcl import parse_module
from chalicelib.trust.sbom import ModuleSubject, Tool, build_sbom
module = parse_module({"main.tf": b'terraform {\\n required_version = ">= 1.5"\\n}\\n'})
subject = ModuleSubject("registry.test/acme/vpc/aws", "1.0.0", "ab" * 32)
when = datetime(2026, 1, 1, tzinfo=UTC)
assert '"specVersion": "1.6"' in build_sbom(subject, module, tool=Tool("t", "1"), timestamp=when)
hasher = argon2.PasswordHasher()
assert hasher.verify(hasher.hash("secret"), "secret")
key = AESGCM.generate_key(128)
assert AESGCM(key).decrypt(b"n" * 12, AESGCM(key).encrypt(b"n" * 12, b"x", None), None) == b"x"
assert nh3.clean("<b>a</b><script>b</script>") == "<b>a</b>"
assert etree.fromstring(b"<a><b/></a>").find("b").tag == "b"
"""


def verify(archive: Path) -> None:
    """Create a client of every kept service, import every function's entry module and run
    the libraries' first uses (``_FIRST_USES``), from the unpacked zip (not from this venv)."""
    from infrastructure.groups import ALL_FUNCTIONS

    unpacked = Path(tempfile.mkdtemp())
    try:
        with zipfile.ZipFile(archive) as zipped:
            zipped.extractall(unpacked)
        code = (
            "import sys; sys.path.insert(0, sys.argv[1]); import boto3, botocore; "
            "assert botocore.__file__.startswith(sys.argv[1]), botocore.__file__; "
            "[boto3.client(s, region_name='us-east-1') for s in sys.argv[2:]]; "
            # botocore's own CA bundle is left out: its HTTPS uses certifi's.
            "import os, botocore.httpsession as h; bundle = h.get_cert_path(True); "
            "assert bundle.startswith(sys.argv[1]) and os.path.isfile(bundle), bundle"
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
        used = subprocess.run(
            [sys.executable, "-I", "-B", "-c", _FIRST_USES, str(unpacked)],
            capture_output=True,
            text=True,
            env={"AWS_DEFAULT_REGION": "us-east-1"},
        )
        if used.returncode:
            raise SystemExit(f"the libraries' first uses fail from the zip:\n{used.stderr}")
    finally:
        shutil.rmtree(unpacked, ignore_errors=True)


def package(out: Path) -> Path:
    """Package the app as ``make package`` does (the merged template, then ``chalice
    package``; no AWS account read) into ``out``, and slim its zip; the zip's path."""
    env = {**os.environ, "AWS_DEFAULT_REGION": os.environ.get("AWS_DEFAULT_REGION", "us-east-1")}
    run = functools.partial(subprocess.run, cwd=ROOT, env=env, check=True, capture_output=True)
    run([sys.executable, "-m", "infrastructure.template", str(out / "merge.json")])
    chalice = Path(sys.executable).with_name("chalice")
    run(
        [
            str(chalice),
            "package",
            "--stage",
            "prod",
            "--merge-template",
            str(out / "merge.json"),
            str(out / "pkg"),
        ]
    )
    archive = out / "pkg" / "deployment.zip"
    slim(archive)
    return archive


# The deployment zip's budget (issue #40): `make package` fails past it, so `make test`
# (which packages before the suite) and CI do.
BUDGET_BYTES = 15_000_000


def within_budget(archive: Path, budget: int = BUDGET_BYTES) -> None:
    """Stop the build when the slimmed zip is larger than its budget."""
    size = archive.stat().st_size
    if size > budget:
        raise SystemExit(
            f"{archive} is {size / 1e6:.2f} MB, past its budget of {budget / 1e6:.0f} MB: "
            "see bench/package_bench.py for what it holds"
        )


def main(argv: list[str]) -> None:
    missing = called_services() - set(SERVICES)
    if missing:
        raise SystemExit(f"chalicelib calls {sorted(missing)}: add them to SERVICES")
    archive = Path(argv[0])
    before, after = slim(archive)
    verify(archive)
    within_budget(archive)
    print(f"slimmed {archive}: {before / 1e6:.1f} MB -> {after / 1e6:.1f} MB")


if __name__ == "__main__":
    main(sys.argv[1:])
