"""Start-up of the frozen app (packaging/revstudio.spec) against ``python -m revstudio``.

Every child process the editor starts (Train, Memory, the gradient check, the export server, each
``--nproc`` worker) is the app started again, so its start-up is paid per child. Each command runs
``--repeat`` times, alternating the two, from a scratch folder; the table gives the median wall time.
Needs a build (``make freeze``); not in ``run_all.py`` for that reason. Numbers: packaging/README.md.

    python benchmarks/bench_frozen_startup.py --app dist/revstudio [--repeat 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "resources" / "examples" / "revnet_coupling.revs"
COMMANDS = {
    "--version": ["--version"],
    "check (imports torch)": ["check", str(EXAMPLE)],
    "train --steps 1 (a Train child)": ["train", str(EXAMPLE), "--steps", "1", "--val-every", "0",
                                        "--batch-size", "8", "--json", "--out", "{tmp}/run{i}"],
}


def _time(argv: list[str], cwd: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return took


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--app", default=str(ROOT / "dist" / "revstudio"), help="the one-folder app")
    parser.add_argument("--python", default=sys.executable, help="a Python with revstudio installed")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    program = Path(args.app).resolve() / "revstudio"
    if not program.is_file():
        raise SystemExit(f"no frozen app at {program}: build it with 'make freeze' or give --app")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["OMP_NUM_THREADS"] = "1"
    print(f"load average {os.getloadavg()[0]:.1f}; {args.repeat} runs each, median wall seconds")
    print(f"{'command':34} {'python -m revstudio':>20} {'frozen app':>11} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, words in COMMANDS.items():
            times: dict[str, list[float]] = {"python": [], "frozen": []}
            for i in range(args.repeat):
                for kind, head in (("python", [args.python, "-P", "-m", "revstudio"]), ("frozen", [str(program)])):
                    tail = [w.format(tmp=tmp, i=f"{kind}{i}") for w in words]
                    times[kind].append(_time(head + tail, tmp, env))
            py, fr = statistics.median(times["python"]), statistics.median(times["frozen"])
            print(f"{name:34} {py:20.2f} {fr:11.2f} {fr / py:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
