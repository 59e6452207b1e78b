"""A data file of 1-2 GiB trained mapped (read as used) and read whole: the data's memory and the
time to the first step.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_data_mmap.py [--gib 1.2] [--keep] [--before COMMIT]

Writes an uncompressed ``.npz`` (``x``: N x 3 x 32 x 32 float32, ``y``: N int64 labels) into
``/tmp/revstudio-bench-mmap/`` a chunk at a time, then, for each way in a fresh process, reads it with
``load_data`` and runs 3 steps of a linear classifier through ``training.loop.train``. Per way:
seconds to the first step (from before ``load_data``), the bytes taken from the file's maps until then (every
``numpy.memmap`` index's result: a chunk a check or the digest walks, a batch), the bytes the run's splits
hold (exact: the tensors' bytes, a mapped array's kept positions), numpy's peak allocation (tracemalloc: numpy reports
its buffers to it, torch does not), and the process's anonymous and file-backed resident memory at the
first step (``/proc/self/status`` RssAnon / RssFile: the map's pages read so far are file-backed,
the page cache's to drop) and its peak (VmHWM). ``--before COMMIT`` adds a mapped run of that commit's
``revstudio`` (``git archive`` into a temporary folder), so a change is measured against it on the same file.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
FOLDER = "/tmp/revstudio-bench-mmap"
SHAPE = (3, 32, 32)


def _write(path: str, n: int) -> None:
    """``numpy.savez(path, x=..., y=...)``'s file, written 4,096 samples at a time (never whole in memory)."""
    import numpy as np

    rng = np.random.default_rng(0)
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        with zf.open("x.npy", "w", force_zip64=True) as fh:
            np.lib.format.write_array_header_1_0(fh, {"descr": "<f4", "fortran_order": False, "shape": (n, *SHAPE)})
            for start in range(0, n, 4096):
                fh.write(rng.standard_normal((min(4096, n - start), *SHAPE), dtype=np.float32).tobytes())
        with zf.open("y.npy", "w", force_zip64=True) as fh:
            np.lib.format.write_array_header_1_0(fh, {"descr": "<i8", "fortran_order": False, "shape": (n,)})
            fh.write((np.arange(n) % 10).astype(np.int64).tobytes())
    os.replace(tmp, path)


def _status() -> dict[str, int]:
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("RssAnon", "RssFile", "VmHWM"):
                out[key] = int(value.split()[0]) * 1024
    return out


def _held(data) -> int:
    """The bytes a bundle's splits hold in memory: tensors whole, a mapped array's positions only."""
    from revstudio.training.mapped import Mapped

    total = 0
    for split in (data.train, data.val):
        if split is None:
            continue
        for t in [*split.inputs.values(), split.targets]:
            if isinstance(t, Mapped):
                total += 0 if t.rows is None else t.rows.nbytes
            elif t is not None:
                total += t.numel() * t.element_size()
    return total


def _count_map_reads(found: dict) -> None:
    """Add to ``found["map_bytes"]`` the bytes of every array indexed out of a ``numpy.memmap``."""
    import numpy as np

    found["map_bytes"] = 0
    index = np.memmap.__getitem__

    def counted(self, key):
        out = index(self, key)
        found["map_bytes"] += getattr(out, "nbytes", 0)
        return out

    np.memmap.__getitem__ = counted


def _time_scans(found: dict) -> None:
    """Add to ``found["scan_s"]`` the seconds spent in the start's walks over every sample: the NaN/Inf check
    (``data_checks._nonfinite``), the pixel-like note (``looks_like_pixels``) and the data digest (whose walk
    makes the other two for mapped arrays since the one pass)."""
    from revstudio.training import data_checks, sources

    found["scan_s"] = 0.0

    def timed(fn):
        def run(*args, **kwargs):
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                found["scan_s"] += time.perf_counter() - t
        return run

    for module, name in ((data_checks, "_nonfinite"), (sources, "looks_like_pixels"), (data_checks, "data_digest"),
                         (sources, "data_digest")):
        setattr(module, name, timed(getattr(module, name)))


def child(way: str, path: str, tree: str) -> None:
    sys.path.insert(0, tree)  # (the revstudio measured: this checkout's, or --before's)
    import torch

    torch.set_num_threads(1)
    from revstudio.core.generate import flat_classifier
    from revstudio.diagnostics.check import full_check
    from revstudio.training import mapped
    from revstudio.training.config import TrainConfig
    from revstudio.training.data import load_data
    from revstudio.training.loop import train
    from revstudio.training.task import infer_task

    assert os.path.abspath(mapped.__file__).startswith(os.path.join(os.path.abspath(tree), "revstudio", ""))
    if way == "whole":
        mapped.MAP_ABOVE = 2**62  # (nothing mapped: as before)
    g = flat_classifier(SHAPE, classes=10, name="bench")
    report = full_check(g, batch=64)
    cfg = TrainConfig.from_section({"data": path, "steps": 3, "batch_size": 64, "log_every": 1, "val_every": 0,
                                    "gradcheck_every": 0, "memory_every": 0, "checkpoint_every": 0})
    found: dict = {}
    _count_map_reads(found)
    _time_scans(found)

    class First:
        def on_row(self, row: dict) -> None:
            if row.get("kind") == "step" and "first_step_s" not in found:
                found["first_step_s"] = time.perf_counter() - t0
                found["map_bytes_first"] = found["map_bytes"]
                found["scan_s_first"] = found["scan_s"]
                found.update(_status())
                found["numpy_peak"] = tracemalloc.get_traced_memory()[1]

        def __getattr__(self, name: str):
            if name.startswith("on_"):
                return lambda row: None
            raise AttributeError(name)

    tracemalloc.start()
    t0 = time.perf_counter()
    data = load_data(cfg.data, g, report, task=infer_task(g, report), seed=cfg.seed)
    found["load_s"] = time.perf_counter() - t0
    found["held"] = _held(data)
    found["describe"] = data.describe()
    assert train(g, report, cfg, data, callbacks=[First()]).status == "finished"
    print(json.dumps(found))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=1.2, help="the file's size (default 1.2 GiB)")
    parser.add_argument("--keep", action="store_true", help="keep the file for the next run")
    parser.add_argument("--before", metavar="COMMIT", help="also run that commit's revstudio, mapped")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    per = 4 * 3 * 32 * 32 + 8
    n = int(args.gib * 2**30 / per)
    os.makedirs(FOLDER, exist_ok=True)
    path = os.path.join(FOLDER, f"bench-{n}.npz")
    if not os.path.isfile(path):
        t = time.perf_counter()
        _write(path, n)
        print(f"wrote {path} ({os.path.getsize(path) / 2**30:.2f} GiB, {n} samples) in {time.perf_counter() - t:.1f} s")
    size = os.path.getsize(path)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": ""}
    old = tempfile.TemporaryDirectory(prefix="revstudio-before-") if args.before else None
    ways = [("mapped", "mapped", ROOT), ("whole", "whole", ROOT)]
    if old is not None:
        archive = subprocess.run(["git", "-C", ROOT, "archive", args.before, "revstudio"], capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", old.name], input=archive, check=True)
        ways.insert(0, (f"mapped {args.before[:8]}", "mapped", old.name))
    try:
        print(f"file: {size / 2**30:.2f} GiB; 3 steps of batch 64, 1 thread")
        print(f"{'way':>15} {'1st step s':>10} {'load s':>7} {'scans s':>7} {'map read MiB':>12} {'held MiB':>9} "
              f"{'numpy peak MiB':>14} "
              f"{'RssAnon MiB':>11} {'RssFile MiB':>11} {'VmHWM MiB':>9}")
        for label, way, tree in ways:
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", way, path, tree], env=env,
                                  capture_output=True, text=True, check=False)
            if proc.returncode:
                print(f"{label}: failed\n{proc.stderr[-2000:]}")
                continue
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            mib = 2**20
            print(f"{label:>15} {r['first_step_s']:>10.2f} {r['load_s']:>7.2f} {r['scan_s_first']:>7.2f} "
                  f"{r['map_bytes_first'] / mib:>12.0f} "
                  f"{r['held'] / mib:>9.1f} "
                  f"{r['numpy_peak'] / mib:>14.1f} {r['RssAnon'] / mib:>11.0f} {r['RssFile'] / mib:>11.0f} "
                  f"{r['VmHWM'] / mib:>9.0f}   ({r['describe']})")
    finally:
        if old is not None:
            old.cleanup()
        if not args.keep:
            os.remove(path)


if __name__ == "__main__":
    main()
