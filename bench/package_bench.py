"""Deployment package size and cold import time of each route group's entry module.

Packages the app with ``chalice package`` (no AWS account needed) into a temporary folder,
then times ``import chalicelib.entry.<group>`` in fresh interpreters against the bare import of
the libraries (interleaved rounds, medians) and prints each one's ratio to bare and the target.
``python bench/package_bench.py [rounds]``; ``--imports-only`` skips packaging.
"""

from __future__ import annotations

import collections
import compileall
import math
import os
import py_compile
import shutil
import statistics
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from infrastructure.groups import ALL_FUNCTIONS  # noqa: E402


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


BARE = "import chalice, boto3, pynamodb.models, pydantic"
# Issue #16's target: each function's entry module imports in at most this times the bare
# import of the libraries every function loads.
TARGET_RATIO = 1.15


# CPython 3.11 grows its frame stack in chunks: a recursive function that keeps crossing a
# chunk's end allocates and frees one on every call. re's parser is recursive, so a module
# compiling large patterns at import (urllib3.util.url, every function's) takes 5 or 40 ms
# depending on how deep in the stack its import happens. Each round imports at another
# depth, the same for every row, so that no row owes its figure to where the chunks end.
DEPTH_STEP = 11


def _cold_import_ms(statement: str, cwd: Path, depth: int = 0) -> float:
    """One fresh interpreter's CPU time for ``statement`` (NaN if it fails), run ``depth``
    calls deep, with our code imported from ``cwd``. CPU time rather than wall time: this
    machine is shared, and waiting for a core is not import work. The libraries keep their
    installed bytecode."""
    code = (
        "import time\n"
        "def deeper(n):\n"
        "    if n:\n"
        "        return deeper(n - 1)\n"
        "    t = time.process_time()\n"
        f"    {statement}\n"
        "    return time.process_time() - t\n"
        f"print(deeper({depth}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
    )
    if result.returncode:
        print(f"  {statement} failed: {result.stderr.strip().splitlines()[-1]}")
        return math.nan
    return float(result.stdout) * 1000


def _compiled_copy() -> Path:
    """A copy of chalicelib with the bytecode the zip ships (infrastructure/slim.py)."""
    copy = Path(tempfile.mkdtemp())
    shutil.copytree(ROOT / "chalicelib", copy / "chalicelib", ignore=_no_caches)
    compileall.compile_dir(
        copy / "chalicelib",
        quiet=1,
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
    return copy


def _no_caches(directory: str, names: list[str]) -> list[str]:
    return [name for name in names if name == "__pycache__"]


def import_times(rounds: int = 9) -> None:
    """Each round times the bare import and then every entry module twice, each in a fresh
    interpreter: from source (no bytecode cache, as a zip without .pyc files makes Lambda
    compile every module at each cold start) and with the bytecode the zip now ships. Rows
    are medians over the rounds, so the machine's drift hits every row alike (and each round
    runs at another stack depth, see DEPTH_STEP)."""
    functions = ALL_FUNCTIONS
    compiled = _compiled_copy()
    runs = [("bare", BARE, ROOT)]
    for f in functions:
        runs.append((f"{f.logical_id} source", f"import {f.entry_module}", ROOT))
        runs.append((f"{f.logical_id} bytecode", f"import {f.entry_module}", compiled))
    samples: dict[str, list[float]] = {label: [] for label, _, _ in runs}
    try:
        for round_ in range(rounds):
            depth = round_ * DEPTH_STEP % 100
            for label, statement, cwd in runs:
                samples[label].append(_cold_import_ms(statement, cwd, depth))
    finally:
        shutil.rmtree(compiled, ignore_errors=True)
    median = {label: statistics.median(values) for label, values in samples.items()}
    bare = median["bare"]
    cached = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "chalicelib").rglob("__pycache__"))
    print(
        f"Cold import of each function's entry module (CPU time in fresh interpreters, median "
        f"of {rounds} interleaved rounds), against the bare `{BARE}` ({bare:.1f} ms); "
        f"target at most {TARGET_RATIO}x bare, as shipped (with bytecode):"
    )
    if cached:
        print(f"  (warning: bytecode caches in {', '.join(cached[:3])}: 'source' is too low)")
    print(f"  {'function':<18} {'entry module':<28} {'source':>16} {'bytecode':>16}")
    for function in functions:
        source = median[f"{function.logical_id} source"]
        shipped = median[f"{function.logical_id} bytecode"]
        verdict = "ok" if shipped / bare <= TARGET_RATIO else "over"
        print(
            f"  {function.logical_id:<18} {function.entry_module:<28} "
            f"{source:6.1f} ms {source / bare:4.2f}x {shipped:6.1f} ms {shipped / bare:4.2f}x"
            f"  {verdict}"
        )


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--imports-only"]
    if "--imports-only" not in sys.argv:
        package_size()
    import_times(int(args[0]) if args else 9)
