"""Benchmark: import time of revstudio.core and load + check time of generated projects.

Prints a table; targets are import < 0.2 s and load + check of 2,000 nodes < 0.5 s.
Usage: python benchmarks/bench_check.py [--sizes 500 2000 10000] [--repeat 5] [--quick] [--json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

IMPORT_SNIPPET = (
    "import time; t = time.perf_counter(); import revstudio.core; "
    "print(time.perf_counter() - t)"
)


def import_time(repeat: int) -> float:
    """Median in-process time of ``import revstudio.core`` in fresh interpreters."""
    times = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", IMPORT_SNIPPET], capture_output=True, text=True,
                             check=True, cwd=ROOT)
        times.append(float(out.stdout.strip()))
    return statistics.median(times)


def median_time(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 2000, 10000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="small sizes, 2 repeats (smoke test)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.repeat = [200], 2

    from revstudio.core.check import check
    from revstudio.core.generate import large_graph
    from revstudio.core.project import dumps, loads

    try:
        from revstudio.diagnostics.check import full_check
    except ImportError:
        full_check = None

    rows: list[dict[str, Any]] = []
    imp = import_time(max(3, args.repeat))
    for n in args.sizes:
        text = dumps(large_graph(n))
        graph = loads(text)
        report = check(graph)
        assert report.valid, report.errors[:3]
        row = {
            "nodes": len(graph),
            "edges": len(graph.edges),
            "load_s": median_time(lambda text=text: loads(text), args.repeat),
            "load_check_s": median_time(lambda text=text: check(loads(text)), args.repeat),
        }
        if full_check is not None:
            # The region analysis dominates on big graphs; one run is enough to see it there.
            full_repeat = args.repeat if n <= 2000 else 1
            row["load_full_check_s"] = median_time(lambda text=text: full_check(loads(text)), full_repeat)
            row["full_check_runs"] = full_repeat
        rows.append(row)

    if args.json:
        print(json.dumps({"import_core_s": imp, "sizes": rows}))
        return 0
    print(f"import revstudio.core: {imp * 1000:.0f} ms (median of {max(3, args.repeat)} fresh interpreters; "
          f"target < 200 ms)")
    print()
    header = f"{'nodes':>7} {'edges':>7} {'load':>9} {'load+check':>11} {'load+full check':>16}"
    print(header)
    for r in rows:
        full = f"{r['load_full_check_s'] * 1000:>13.0f} ms" if "load_full_check_s" in r else f"{'n/a':>16}"
        print(f"{r['nodes']:>7} {r['edges']:>7} {r['load_s'] * 1000:>6.0f} ms {r['load_check_s'] * 1000:>8.0f} ms "
              f"{full}")
    print(f"\nmedian of {args.repeat} runs each (full check: 1 run above 2,000 nodes); "
          "target: load+check of 2,000 nodes < 500 ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
