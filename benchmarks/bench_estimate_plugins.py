"""Peak estimate vs measured peak on projects whose layers come from a plugin.

A plugin's type tells the estimate what its backward keeps and what its forward and backward
hold for a moment (``NodeSpec.saved_for_backward``); undeclared, the estimate assumes it keeps
every input. This installs the example plugin (``examples/plugin``) the way pip would, as a
dist-info folder on ``PYTHONPATH`` in a temporary folder, and measures ``haar_flow.revs`` in
every mode at several batches, in a child ``revstudio memory --json`` per batch (live-tensor
accounting on the CPU). ``--undeclared`` runs it with the declarations taken out, for the
before column.

    python benchmarks/bench_estimate_plugins.py
    python benchmarks/bench_estimate_plugins.py --batches 1 8 --undeclared
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from plugin_dist import add_distribution

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "examples" / "plugin"
PROJECT = PLUGIN / "haar_flow.revs"

# run before revstudio loads its plugins: the example's types as if they declared nothing
UNDECLARE = """
import dataclasses, runpy, sys
import revstudio_haar.nodes as nodes
nodes.SPECS[:] = [dataclasses.replace(s, saved_for_backward=None) for s in nodes.SPECS]
sys.argv = ["revstudio", *sys.argv[1:]]
runpy.run_module("revstudio", run_name="__main__")
"""



def measure(batch: int, undeclared: bool, site: Path) -> dict[str, tuple[int, int]]:
    """mode -> (measured peak, estimated peak) of one training step at ``batch``."""
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(PLUGIN / "src"), str(ROOT)])
    args = ["memory", str(PROJECT), "--json", "--batch", str(batch), "--repeat", "1"]
    command = [sys.executable, "-c", UNDECLARE, *args] if undeclared else [sys.executable, "-m", "revstudio", *args]
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        raise SystemExit(f"revstudio memory failed at batch {batch}: {run.stderr.strip()[-2000:]}")
    report = json.loads(run.stdout)
    return {mode: (m["peak_bytes"], report["estimate"]["modes"][mode]["peak_bytes"])
            for mode, m in report["modes"].items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 2, 8, 32])
    parser.add_argument("--undeclared", action="store_true",
                        help="take the plugin's saved_for_backward declarations out (the before column)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        site = add_distribution(Path(tmp), "revstudio-haar", "haar", "revstudio_haar.nodes:SPECS")
        print(f"{PROJECT.relative_to(ROOT)}, {'undeclared' if args.undeclared else 'declared'}")
        print(f"{'batch':>5}  {'mode':<10} {'measured':>10} {'estimate':>10} {'error':>8}")
        worst = 0.0
        for batch in args.batches:
            for mode, (real, est) in measure(batch, args.undeclared, site).items():
                error = est / real - 1
                worst = max(worst, abs(error))
                print(f"{batch:>5}  {mode:<10} {real:>10,} {est:>10,} {error:>+7.2%}")
        print(f"worst |error|: {worst:.2%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
