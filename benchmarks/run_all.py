"""Run the benchmarks one after another, each in its own process, and say which finished.

``make bench`` runs this. By default each benchmark runs in its quick form (a smoke run with
small sizes: minutes in all on 2 cores), printing its table; ``--full`` runs each as its README
section was measured (an hour or more), ``--only NAME ...`` picks some. The numbers that count
are recorded in benchmarks/README.md, with the command that measured them; compare ratios
measured in one run, never absolute times across machines.

    python benchmarks/run_all.py                    # quick forms of all
    python benchmarks/run_all.py --only estimate_skips estimate_plugins
    python benchmarks/run_all.py --full             # as recorded in the README
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# name -> (quick arguments, full arguments); every benchmark that prints a table
BENCHMARKS: dict[str, tuple[list[str], list[str]]] = {
    "check": (["--quick"], []),
    "check_scaling": (["--quick"], []),
    "startup": (["--quick"], []),
    "canvas": (["--quick"], []),
    "code_view": (["--repeat", "1"], []),
    "plots": (["--quick"], []),
    "estimate": (["--batches", "8"], []),
    "estimate_random": (["--seeds", "5", "--batch", "8"], []),
    "estimate_plugins": (["--batches", "1", "8"], []),
    "estimate_skips": (["--batches", "8"], []),
    "budget": (["--quick"], []),
    "revnet": (["--quick"], []),
    "train": (["--quick"], []),
    "sweep": (["--quick"], []),
    "export_sweep": (["--quick"], ["--family", "image", "--seeds", "200", "--memory"]),
    "data_mmap": (["--gib", "0.3"], []),  # (over mapped.MAP_ABOVE: the mapped way is taken)
    "saved_runs": (["--quick"], []),
    "long_train": (["--steps", "300", "--every", "100"], []),
    "install_venv": ([], ["--old"]),  # the install test's venv; --old also copies torch the old way
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="run each as recorded in the README (long)")
    parser.add_argument("--only", nargs="+", choices=sorted(BENCHMARKS), metavar="NAME",
                        help=f"run only these ({', '.join(BENCHMARKS)})")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per benchmark (default 1800)")
    args = parser.parse_args(argv)
    env = dict(os.environ, QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"))
    results: list[tuple[str, str, float]] = []
    for name in args.only or list(BENCHMARKS):
        quick, full = BENCHMARKS[name]
        command = [sys.executable, str(HERE / f"bench_{name}.py"), *(full if args.full else quick)]
        print(f"\n=== {name}: {' '.join(command[1:])}", flush=True)
        start = time.perf_counter()
        try:
            code = subprocess.run(command, env=env, timeout=args.timeout).returncode
            verdict = "ok" if code == 0 else f"exit {code}"
        except subprocess.TimeoutExpired:
            verdict = f"stopped after {args.timeout:g} s"
        results.append((name, verdict, time.perf_counter() - start))
    print("\n| benchmark | result | seconds |\n|---|---|---|")
    for name, verdict, seconds in results:
        print(f"| {name} | {verdict} | {seconds:.0f} |")
    return 0 if all(verdict == "ok" for _, verdict, _ in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
