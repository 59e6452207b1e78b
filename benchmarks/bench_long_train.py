"""A long ``revstudio train`` watched from inside: does anything grow per step?

Trains a tiny project (the revnet_coupling example at a small batch, a row every step,
validation, gradient checks and checkpoints on their usual cadence) for ``--steps`` steps
through the CLI's own session (``session.run_session``, what ``revstudio train`` runs), with a
callback that samples, every ``--every`` steps: Python's heap (its allocated blocks; with
``--tracemalloc`` also tracemalloc's bytes, one frame, at about 3x the step time), the
live torch tensors (their count and bytes, the CPU's live tensor accounting: every tensor the
garbage collector can see) and the process's resident set. A leak is a column that keeps
rising after the first samples. Then prints what the run folder grew to (rows, checkpoints).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_long_train.py [--steps 20000] [--every 2000]
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _rss() -> int:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def _tensors() -> tuple[int, int]:
    import warnings

    import torch

    warnings.filterwarnings("ignore", category=FutureWarning)  # (isinstance on torch's deprecated aliases)

    count = size = 0
    seen: set[int] = set()
    for obj in gc.get_objects():
        try:
            if isinstance(obj, torch.Tensor):
                storage = obj.untyped_storage()
                count += 1
                if storage.data_ptr() not in seen:
                    seen.add(storage.data_ptr())
                    size += storage.nbytes()
        except Exception:  # (a tensor subclass without storage)
            continue
    return count, size


def _folder_sizes(run_dir: str) -> list[tuple[str, int]]:
    found = []
    for here, _dirs, files in os.walk(run_dir):
        for name in files:
            path = os.path.join(here, name)
            found.append((os.path.relpath(path, run_dir), os.path.getsize(path)))
    return sorted(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--every", type=int, default=2_000)
    parser.add_argument("--tracemalloc", action="store_true",
                        help="trace Python's heap with tracemalloc too (about 3x slower steps)")
    parser.add_argument("--out", help="run folder (default: a temporary one, removed)")
    args = parser.parse_args()

    from revstudio.training.loop import Callback
    from revstudio.training.session import Request, run_session

    samples: list[tuple[int, float, int, int, int, int, int]] = []
    t0 = time.perf_counter()

    class Watch(Callback):
        def on_step_end(self, row: dict[str, Any]) -> None:
            step = row.get("step")
            if isinstance(step, int) and (step == 100 or step % args.every == 0):
                gc.collect()
                count, size = _tensors()
                heap = tracemalloc.get_traced_memory()[0] if args.tracemalloc else 0
                samples.append((step, time.perf_counter() - t0, sys.getallocatedblocks(), heap, count, size,
                                _rss()))

    project = str(ROOT / "resources" / "examples" / "revnet_coupling.revs")
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or os.path.join(tmp, "long")
        if args.tracemalloc:
            tracemalloc.start(1)
        req = Request(file=project, out=out, show=False, callbacks=[Watch()],
                      overrides={"steps": args.steps, "batch_size": 4, "log_every": 1, "val_every": 1000,
                                 "gradcheck_every": 2000, "memory_every": 1000, "checkpoint_every": 1000,
                                 "threads": 1})
        code = run_session(req)
        if args.tracemalloc:
            tracemalloc.stop()
        print(f"train exit {code}, {args.steps} steps in {time.perf_counter() - t0:.0f} s\n")
        print("| step | s | Python blocks | Python heap (tracemalloc) | live tensors | tensor bytes | RSS |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        for step, secs, blocks, heap, count, size, rss in samples:
            traced = f"{heap / 1e6:.2f} MB" if args.tracemalloc else "-"
            print(f"| {step} | {secs:.0f} | {blocks:,} | {traced} | {count} | {size / 1e3:.1f} kB | "
                  f"{rss / 1e6:.0f} MB |")
        print("\n| run folder file | bytes |")
        print("|---|---:|")
        total = 0
        for name, size in _folder_sizes(out):
            total += size
            print(f"| {name} | {size:,} |")
        print(f"| **total** | {total:,} |")


if __name__ == "__main__":
    main()
