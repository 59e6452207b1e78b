"""``revstudio gradcheck FILE [--batch B] [--dtype float64|float32] [--json]``.

Runs one training step in reversible and in standard mode on the same weights,
batch and random streams and compares every parameter and input gradient (and
each region's inversion error). Exit 0 when they agree within tolerance
(1e-10 in float64), 1 when they do not or the graph has errors, 2 for bad
usage or an unreadable file.
"""
from __future__ import annotations

import argparse
import json

from ._runargs import graph_errors, load_checked, positive_int, refuse_unfit


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="project file (.revs)")
    parser.add_argument("--batch", type=positive_int, default=2, help="batch size (default 2)")
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                        help="number type of weights and data (default float64, tolerance 1e-10; "
                             "float32 uses 1e-4)")
    parser.add_argument("--mode", choices=("reversible", "checkpoint"), default="reversible",
                        help="the mode compared against standard (default reversible)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the batch and random streams (default 0)")
    parser.add_argument("--tolerance", type=float, default=None,
                        help="override the pass/fail tolerance on the normalised error")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def run(args: argparse.Namespace) -> int:
    graph, report = load_checked(args.file)
    refuse_unfit(args.file, graph, report, args.batch, args.dtype, "cpu")  # before torch is even imported
    from revstudio.diagnostics.gradcheck import compare_modes, summarize

    with graph_errors(args.file):
        result = compare_modes(graph, batch=args.batch, dtype=args.dtype, seed=args.seed, mode=args.mode,
                               tolerance=args.tolerance)
    if args.json:
        data = {"file": args.file, **result.to_json(), "regions": [r.to_json() for r in report.regions]}
        print(json.dumps(data))
    else:
        lines = [f"{args.file}:"] + summarize(result)
        if not report.regions:
            lines.append("  note: the graph has no reversible region, so both modes run plain autograd")
        if result.ok:
            lines.append(f"OK: {args.mode} and standard gradients agree within {result.tolerance:g}")
        else:
            lines.append(f"FAILED: {len(result.failures())} disagreement(s):")
            lines += [f"  {line}" for line in result.failures()[:20]]
        print("\n".join(lines))
    return 0 if result.ok else 1
