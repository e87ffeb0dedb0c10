"""Time of the test suite: wall time and CPU seconds of ``make test`` (or any command).

``python bench/suite_bench.py [--junit FILE] [command ...]`` (default: ``make test``) runs the
command and prints its wall time, the CPU seconds (user + system) it and the processes it
waited for used (pytest's workers, the e2e stacks, terraform, chromium, mypy, packaging), the
whole machine's busy CPU seconds over the same time (from /proc/stat: the other jobs' load
included), and an estimate of the wall time on an idle machine of ``--cores`` cores
(default 2): CPU / cores. The machine this team measures on is shared: the command gets only
part of it, and its CPU seconds, not its wall time, are what it needs. The estimate assumes the
cores stay busy (the stages before pytest run on one core: their CPU counts once, see the
docs) and is a lower bound when a test file is left running alone at the end of the suite.
With ``--junit`` (pytest's ``--junitxml`` output, e.g. through ``make test PYTEST_ARGS=...``)
it also prints the slowest test files.
"""

from __future__ import annotations

import argparse
import collections
import os
import resource
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def machine_cpu_seconds() -> float:
    """The CPU seconds every process on the machine has used (busy, not idle or iowait)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def files_seconds(junit: Path) -> dict[str, float]:
    """Seconds per test file (setup, call and teardown of its tests) from pytest's junit XML."""
    per_file: dict[str, float] = collections.defaultdict(float)
    for case in ElementTree.parse(junit).iter("testcase"):
        per_file[case.get("classname", "")] += float(case.get("time", 0))  # the module (or class)
    return dict(per_file)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", nargs="*", default=["make", "test"])
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--junit", type=Path, help="pytest's --junitxml output, for per-file times")
    args = parser.parse_args()

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    machine_before = machine_cpu_seconds()
    started = time.monotonic()
    result = subprocess.run(args.command, cwd=ROOT)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    machine = machine_cpu_seconds() - machine_before
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    print(f"command: {' '.join(args.command)} (exit {result.returncode})")
    print(f"wall: {wall:.0f} s ({wall / 60:.1f} min)")
    print(f"CPU of the command and its processes: {cpu:.0f} s")
    print(f"CPU of the whole machine meanwhile: {machine:.0f} s of {wall * os.cpu_count():.0f} s")
    print(f"share of the machine the command got: {cpu / max(machine, 1e-9):.0%}")
    print(f"idle estimate on {args.cores} cores (CPU / cores): {cpu / args.cores / 60:.1f} min")
    if args.junit and args.junit.exists():
        per_file = sorted(files_seconds(args.junit).items(), key=lambda kv: -kv[1])
        print(f"suite's test seconds (summed over workers): {sum(s for _, s in per_file):.0f}")
        print("slowest test files (seconds under this load):")
        for name, seconds in per_file[:25]:
            print(f"  {seconds:7.1f}  {name}")
    sys.exit(result.returncode)


if __name__ == "__main__":
    main()
