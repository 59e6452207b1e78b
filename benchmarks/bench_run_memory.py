"""What one long saved run costs the app in memory, counted exactly: the bytes of the arrays that hold it.

A run of 200,000 step rows (val every 1,000, gradient checks every 2,000: ``long_runs.long_run``, as the
worker writes them) is read as the Runs tab reads it once selected (``plots.rows.SavedRows`` to its end),
and each curve's arrays are summed by their ``nbytes`` (the points kept, the room grown for more, the
min/max blocks of the drawn overview); the run's loss rows kept for the several-run comparison
(``training.loss_rows``) are counted the same way. Not RSS: exact, and the same on any machine.

It also answers whether the curves could be kept as float32 (half the bytes) with the app's output
unchanged: it counts the kept values whose float32 rounding changes their text as the app writes it
(File > Export CSV of the plots writes ``repr`` of each value; the comparison prints and compares the
losses as written, bit for bit).

    .venv/bin/python benchmarks/bench_run_memory.py [--steps 200000] [--folder DIR]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from long_runs import long_run  # noqa: E402


def _series_bytes(series: object) -> tuple[int, int, int]:
    """(points kept, room, bytes of every array the curve holds)."""
    arrays = [v for v in vars(series).values() if isinstance(v, np.ndarray)]
    return len(series), series._data.shape[1], sum(a.nbytes for a in arrays)  # type: ignore[arg-type, attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--folder", help="make the run here (or use the one made there before)")
    args = parser.parse_args()
    from revstudio.qt.plots.rows import RunData, SavedRows
    from revstudio.training import loss_rows

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(args.folder or tmp)
        path = base / f"run-{args.steps}"
        if not (path / "status.json").exists():
            long_run(str(path), args.steps, str(base), seed=7)
        run = RunData(path.name)
        load = SavedRows(path / "metrics.jsonl", run)
        while not load.pump(1000):
            pass
        print(f"one saved run of {args.steps:,} step rows, read as the Runs tab reads it\n")
        print("| curve | points | room | bytes |")
        print("|---|---:|---:|---:|")
        total = 0
        changed = values = 0
        for name, series in sorted(run.series.items(), key=lambda kv: -len(kv[1])):
            points, room, nbytes = _series_bytes(series)
            total += nbytes
            if points >= 10_000:
                print(f"| {name} | {points:,} | {room:,} | {nbytes:,} |")
            for column in ("step", "epoch", "time", "value", "smooth"):
                kept = series.column(column)
                finite = kept[np.isfinite(kept)]
                values += finite.size
                changed += int(sum(repr(float(v)) != repr(float(np.float32(v))) for v in finite))
        small = [s for s in run.series.values() if len(s) < 10_000]
        print(f"| {len(small)} other curves | {sum(len(s) for s in small):,} | | "
              f"{sum(_series_bytes(s)[2] for s in small):,} |")
        print(f"| **all curves** | | | **{total:,}** ({total / 2**20:.1f} MiB) |")
        loss_rows.forget()
        loss_rows.read_rows(str(path / "metrics.jsonl"), 2**40)
        kept = sum(r.nbytes() for r in loss_rows._kept.values())
        print(f"| loss rows kept for the comparison (`loss_rows`) | | | {kept:,} ({kept / 2**20:.1f} MiB) |\n")
        rows = loss_rows.read_rows(str(path / "metrics.jsonl"), 2**40) or []
        losses = [v for _s, v in rows if isinstance(v, float)]
        moved = sum(float(np.float32(v)) != v for v in losses)
        print(f"float32 instead: {changed:,} of {values:,} curve values ({changed / max(values, 1):.0%}) would "
              "export other text (File > Export CSV writes each value's repr), and "
              f"{moved:,} of {len(losses):,} losses would compare and print otherwise (loss_rows).")


if __name__ == "__main__":
    main()
