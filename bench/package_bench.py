"""Deployment package size and cold import time of each route group's entry module.

Packages the app with ``chalice package`` (no AWS account needed) into a temporary folder,
then times ``import chalicelib.entry.<group>`` in fresh interpreters against the bare import of
the libraries (interleaved rounds, medians) and prints each one's ratio to bare and the target.
``python bench/package_bench.py [rounds]``; ``--imports-only`` skips packaging.
"""

from __future__ import annotations

import collections
import math
import os
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
from infrastructure.slim import BUDGET_BYTES  # noqa: E402

# Issue #40's budget for the deployment zip (`make package` stops past it).
ZIP_BUDGET_MB = BUDGET_BYTES / 1e6


def package_size() -> None:
    from infrastructure.slim import package  # what `make package` does

    out = Path(tempfile.mkdtemp())
    try:
        archive = package(out)
        sizes: collections.Counter[str] = collections.Counter()
        with zipfile.ZipFile(archive) as zipped:
            for info in zipped.infolist():
                sizes[info.filename.split("/")[0]] += info.compress_size
        top = ", ".join(f"{name} {size / 1e6:.1f} MB" for name, size in sizes.most_common(4))
        size = archive.stat().st_size / 1e6
        verdict = "ok" if size <= ZIP_BUDGET_MB else "over"
        print(
            f"Deployment zip: {size:.1f} MB, budget {ZIP_BUDGET_MB:.0f} MB: {verdict} "
            f"(largest: {top})"
        )
    finally:
        shutil.rmtree(out, ignore_errors=True)


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
    """A copy of chalicelib as the zip ships it (infrastructure/slim.py): bytecode alone."""
    from infrastructure.slim import bytecodes

    copy = Path(tempfile.mkdtemp())
    shutil.copytree(ROOT / "chalicelib", copy / "chalicelib", ignore=_no_caches)
    sources = {str(path.relative_to(copy)): path for path in (copy / "chalicelib").rglob("*.py")}
    compiled = bytecodes({name: path.read_bytes() for name, path in sources.items()})
    for name, pyc in compiled.items():
        Path(copy, name).write_bytes(pyc)
    for path in sources.values():
        path.unlink()
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
