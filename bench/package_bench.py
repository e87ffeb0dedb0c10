"""Deployment package size and cold import time of each route group's entry module.

Packages the app with ``chalice package`` (no AWS account needed) into a temporary folder,
then times ``import chalicelib.entry.<group>`` in fresh interpreters (median of 7).
"""

from __future__ import annotations

import collections
import os
import statistics
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from infrastructure.groups import EVENT_FUNCTIONS, ROUTE_GROUPS  # noqa: E402


def package_size() -> None:
    out = Path(tempfile.mkdtemp())
    env = {**os.environ, "AWS_DEFAULT_REGION": os.environ.get("AWS_DEFAULT_REGION", "us-east-1")}
    subprocess.run(
        [sys.executable, "-m", "infrastructure.template", str(out / "merge.json")],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    chalice = Path(sys.executable).with_name("chalice")
    subprocess.run(
        [
            str(chalice),
            "package",
            "--stage",
            "prod",
            "--merge-template",
            str(out / "merge.json"),
            str(out / "pkg"),
        ],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    archive = out / "pkg" / "deployment.zip"
    from infrastructure.slim import slim  # what `make package` does after chalice package

    slim(archive)
    sizes: collections.Counter[str] = collections.Counter()
    with zipfile.ZipFile(archive) as zipped:
        for info in zipped.infolist():
            sizes[info.filename.split("/")[0]] += info.compress_size
    top = ", ".join(f"{name} {size / 1e6:.1f} MB" for name, size in sizes.most_common(4))
    print(f"Deployment zip: {archive.stat().st_size / 1e6:.1f} MB (largest: {top})")


def import_times(runs: int = 7) -> None:
    print("Cold import of each function's entry module (fresh interpreter, median of 7):")
    for function in (*ROUTE_GROUPS, *EVENT_FUNCTIONS):
        samples = []
        for _ in range(runs):
            code = (
                f"import time; t = time.perf_counter(); import {function.entry_module}; "
                "print(time.perf_counter() - t)"
            )
            result = subprocess.run(
                [sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True, text=True
            )
            samples.append(float(result.stdout) * 1000)
        print(
            f"  {function.logical_id:<18} {function.entry_module:<28} "
            f"{statistics.median(samples):6.1f} ms"
        )


if __name__ == "__main__":
    package_size()
    import_times()
