"""Where the test suite's time goes: wall and CPU seconds per test file, and the whole run's.

    .venv/bin/python benchmarks/bench_suite_time.py                       # the whole suite (CI's make test)
    .venv/bin/python benchmarks/bench_suite_time.py tests/codegen --top 10
    .venv/bin/python benchmarks/bench_suite_time.py --tree /tmp/old tests/codegen/test_x.py   # another checkout

Runs ``pytest -q`` offscreen in a child (one torch thread) with a small plugin that writes each test's
wall time and CPU time (the test process's own and that of the children it waited for) as it ends,
then prints the files by wall time and the run's totals. CPU seconds are the figure to compare on a
shared machine: wall time there is mostly the other processes' (on 2 cores at load 9 a test took 14
times its quiet wall time). The run's CPU total comes from the kernel's account of the pytest process
and every descendant it reaped (children forked by a helper process count once that helper ends).
"""
from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PLUGIN = '''
import os, resource, time
import pytest

def _cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    w, c = time.perf_counter(), _cpu()
    yield
    with open(os.environ["BENCH_SUITE_LOG"], "a", encoding="utf-8") as f:
        f.write(f"{item.nodeid}\\t{time.perf_counter() - w:.3f}\\t{_cpu() - c:.3f}\\n")
'''


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", default=["tests"], help="test files or folders (default: tests)")
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout to test (default: this one)")
    parser.add_argument("--top", type=int, default=20, help="how many files to list (default 20)")
    parser.add_argument("--pytest-args", default="", help="more pytest options, one string")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "suite_time_plugin.py").write_text(PLUGIN, encoding="utf-8")
        log = Path(folder) / "tests.tsv"
        env = {**os.environ, "OMP_NUM_THREADS": "1", "QT_QPA_PLATFORM": "offscreen", "BENCH_SUITE_LOG": str(log),
               "PYTHONPATH": os.pathsep.join([str(args.tree.resolve()), folder])}
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "suite_time_plugin",
               *args.pytest_args.split(), *args.paths]
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=args.tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        output, _ = proc.communicate()
        wall = time.perf_counter() - start
        rows = [line.split("\t") for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []
    children = resource_children()
    files: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for nodeid, w, c in rows:
        entry = files[nodeid.split("::")[0]]
        entry[0] += float(w)
        entry[1] += float(c)
        entry[2] += 1
    lines = output.strip().splitlines()
    print(lines[-1] if lines else "(no output)")
    for line in lines:  # the short summary's failures, so a red run says which tests without a second run
        if line.startswith(("FAILED ", "ERROR ")):
            print(line)
    print("\n| file | tests | wall s | CPU s |\n|---|---:|---:|---:|")
    for name, (w, c, n) in sorted(files.items(), key=lambda kv: -kv[1][0])[:args.top]:
        print(f"| {name} | {n} | {w:.1f} | {c:.1f} |")
    print(f"| **all {len(files)} files** | {len(rows)} | {wall:.1f} | {children:.1f} |")
    print(f"\nwall {wall:.1f} s, CPU {children:.1f} s (pytest and every process it reaped), exit {proc.returncode}")
    return proc.returncode


def resource_children() -> float:
    """CPU seconds of this process's reaped children (the pytest run and its descendants)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    sys.exit(main())
