"""Benchmark: how load + full check + report text grow with the graph (20,000 and 100,000 nodes).

Prints one row per size with process CPU seconds (robust to a loaded machine,
unlike wall time) of ``load`` (JSON file -> Graph), ``full_check`` (shapes,
regions, estimate, size warnings) and the text report, plus the growth factor
against the previous size: linear growth shows the factor equal to the size ratio.
Usage: python benchmarks/bench_check_scaling.py [--sizes 2000 20000 100000] [--quick] [--json]
"""
from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def measure(n: int, folder: Path) -> dict[str, Any]:
    from revstudio.clicmd.check import format_report
    from revstudio.core.generate import large_graph
    from revstudio.core.project import load, save
    from revstudio.diagnostics.check import full_check

    path = folder / f"large-{n}.revs"
    save(large_graph(n), path)
    gc.collect()
    t0 = time.process_time()
    graph = load(path)
    t1 = time.process_time()
    report = full_check(graph)
    t2 = time.process_time()
    format_report(report, str(path), graph)
    t3 = time.process_time()
    assert report.valid, report.errors[:3]
    return {"nodes": len(graph), "load_s": t1 - t0, "check_s": t2 - t1, "report_s": t3 - t2, "total_s": t3 - t0}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 20000, 100000])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    sizes = [200, 1000] if args.quick else args.sizes
    with tempfile.TemporaryDirectory() as tmp:
        rows = [measure(n, Path(tmp)) for n in sizes]
    if args.json:
        print(json.dumps(rows))
        return 0
    print(f"{'nodes':>8} {'load':>8} {'check':>8} {'report':>8} {'total':>8}  growth (nodes x -> total x)")
    prev = None
    for row in rows:
        growth = ""
        if prev is not None:
            growth = f"{row['nodes'] / prev['nodes']:.1f}x -> {row['total_s'] / max(prev['total_s'], 1e-9):.1f}x"
        print(f"{row['nodes']:>8} {row['load_s']:>7.2f}s {row['check_s']:>7.2f}s {row['report_s']:>7.2f}s "
              f"{row['total_s']:>7.2f}s  {growth}")
        prev = row
    return 0


if __name__ == "__main__":
    sys.exit(main())
