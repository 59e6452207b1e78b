"""Train the digits example (UCI handwritten digits, 8x8) in reversible and in standard mode.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_train.py [--threads 2] [--steps N] [--quick]

One process, both modes, the project's own training section (400 steps of
batch 64, one-cycle schedule, Adam) through :func:`revstudio.training.loop.train`
with the default in-run intervals (gradient check every 100 steps, memory
every 100). Prints, per mode: validation accuracy, wall time, CPU time,
samples/s, and the measured peak of one step (live-tensor accounting on the
CPU). Then, measured interleaved on one batch so that drifting machine load
hits both alike: the reversible/standard step-time ratio (reversible steps as a
run takes them, measuring no inversion error, and as a model's every step does by
default: ``track_inversion``), and the cost of one
in-run gradient check and one memory measurement in plain steps, which gives
their overhead at the default intervals. Target (issue 9): reversible
validation accuracy >= 0.97 in under 60 s on 2 cores.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

PROJECT = os.path.join(ROOT, "resources", "examples", "digits_revnet.revs")


def _prepare(overrides: dict) -> tuple:
    from revstudio.core.project import load
    from revstudio.diagnostics.check import full_check
    from revstudio.training.config import TrainConfig
    from revstudio.training.data import load_data
    from revstudio.training.task import infer_task

    graph = load(PROJECT)
    cfg = TrainConfig.from_section(graph.training).replace(**overrides)
    report = full_check(graph, batch=cfg.batch_size)
    task = infer_task(graph, report, cfg.task)
    data = load_data(cfg.data, graph, report, task=task, val_spec=cfg.val_data, val_fraction=cfg.val_fraction,
                     seed=cfg.seed, base_dir=os.path.dirname(PROJECT))
    return graph, report, cfg, data


class _Keep:
    def __init__(self) -> None:
        self.rows: list[dict] = []

    def on_row(self, row: dict) -> None:
        self.rows.append(row)

    def __getattr__(self, name: str):  # the specific hooks: nothing to do
        if name.startswith("on_"):
            return lambda row: None
        raise AttributeError(name)


def run_mode(mode: str, overrides: dict) -> dict:
    from revstudio.training.loop import train

    graph, report, cfg, data = _prepare({**overrides, "mode": mode})
    keep = _Keep()
    wall, cpu = time.perf_counter(), time.process_time()
    result = train(graph, report, cfg, data, callbacks=[keep])
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peaks = [r["peak_bytes"] for r in keep.rows if "peak_bytes" in r]
    steps = [r for r in keep.rows if r["kind"] == "step"]
    samples = result.step * cfg.batch_size
    return {"mode": mode, "status": result.status, "val_accuracy": result.metrics.get("val_accuracy"),
            "wall_s": wall, "cpu_s": cpu, "samples_per_s": samples / wall, "peak_bytes": max(peaks, default=None),
            "estimate_bytes": next((r["estimate_bytes"] for r in steps if "estimate_bytes" in r), None),
            "model": result.model, "graph": graph, "report": report, "cfg": cfg, "data": data}


def interleaved(base: dict, repeat: int) -> dict:
    """Step times of both modes and the in-run checks' costs, measured round-robin on one batch."""
    import torch

    from revstudio.diagnostics.gradcheck import input_nodes
    from revstudio.training.inrun import PeakMeter, region_gradcheck
    from revstudio.training.parts import Loss

    model, cfg, data, report = base["model"], base["cfg"], base["data"], base["report"]
    order = [nid for nid, _ in input_nodes(base["graph"])]
    inputs, targets = data.train.batch(torch.arange(cfg.batch_size))
    xs = [inputs[nid] for nid in order]
    loss_fn = Loss(data.task.kind)
    model.train()

    def step(mode: str, track: bool = False) -> None:
        model.mode = mode
        model.track_inversion = track  # a run's steps measure no inversion error (its checks do)
        model.zero_grad(set_to_none=True)
        loss_fn(model(*xs), targets, None)[0].backward()

    def measured() -> None:
        with PeakMeter(torch.device("cpu")).measure():
            step("reversible", track=True)

    def check() -> None:
        region_gradcheck(model, report.regions, lambda: loss_fn(model(*xs), targets, None)[0],
                         torch.device("cpu"), 0)

    jobs = {"reversible": lambda: step("reversible"), "standard": lambda: step("standard"),
            "reversible tracked": lambda: step("reversible", track=True),
            "memory step": measured, "gradcheck": check}
    times: dict[str, list[float]] = {k: [] for k in jobs}
    cpu: dict[str, list[float]] = {k: [] for k in jobs}
    for job in jobs.values():
        job()  # warm-up
    names = list(jobs)
    for r in range(repeat):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            t, c = time.perf_counter(), time.process_time()
            jobs[name]()
            times[name].append(time.perf_counter() - t)
            cpu[name].append(time.process_time() - c)
    out = {k: statistics.median(v) for k, v in times.items()}
    # CPU seconds of this process: what a quiet machine's wall time would be with 1 thread,
    # much less sensitive to other jobs on the cores than wall time
    out.update({f"{k} cpu": statistics.median(v) for k, v in cpu.items()})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=None, help="override the project's 400 steps")
    parser.add_argument("--repeat", type=int, default=30, help="interleaved timing rounds")
    parser.add_argument("--quick", action="store_true", help="a few steps (smoke test)")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    overrides: dict = {"device": "cpu"}
    if args.quick:
        overrides.update(steps=6, val_every=0, gradcheck_every=3, memory_every=3)
        args.repeat = 2
    elif args.steps:
        overrides["steps"] = args.steps
    results = [run_mode(mode, overrides) for mode in ("reversible", "standard")]
    print(f"digits_revnet, {results[0]['cfg'].steps} steps of batch {results[0]['cfg'].batch_size}, "
          f"{args.threads} threads, load average {os.getloadavg()[0]:.1f}")
    print(f"{'mode':<11}{'val acc':>8}{'wall s':>9}{'cpu s':>9}{'samples/s':>11}{'peak/step':>12}{'estimate':>12}")
    for r in results:
        peak = f"{r['peak_bytes'] / 1024:.0f} KiB" if r["peak_bytes"] else "-"
        est = f"{r['estimate_bytes'] / 1024:.0f} KiB" if r["estimate_bytes"] else "-"
        acc = f"{r['val_accuracy']:.4f}" if r["val_accuracy"] is not None else "-"
        print(f"{r['mode']:<11}{acc:>8}{r['wall_s']:>9.1f}{r['cpu_s']:>9.1f}{r['samples_per_s']:>11.0f}"
              f"{peak:>12}{est:>12}")
    t = interleaved(results[0], args.repeat)
    ratio = t["reversible"] / t["standard"]
    memory_cost = t["memory step"] - t["reversible"]
    cfg = results[0]["cfg"]
    overhead = (t["gradcheck"] / cfg.gradcheck_every if cfg.gradcheck_every else 0.0) + \
        (memory_cost / cfg.memory_every if cfg.memory_every else 0.0)
    print(f"step time (median of {args.repeat}, interleaved): reversible {t['reversible'] * 1e3:.2f} ms, "
          f"standard {t['standard'] * 1e3:.2f} ms, ratio {ratio:.2f}x; measuring the inversion error "
          f"every step (a model's default) {t['reversible tracked'] * 1e3:.2f} ms, "
          f"{t['reversible tracked'] / t['standard']:.2f}x")
    print(f"in-run gradient check {t['gradcheck'] * 1e3:.2f} ms ({t['gradcheck'] / t['reversible']:.1f} steps), "
          f"memory-measured step +{memory_cost * 1e3:.2f} ms ({memory_cost / t['reversible']:.1f} steps); "
          f"overhead at every {cfg.gradcheck_every} / {cfg.memory_every} steps: "
          f"{100 * overhead / t['reversible']:.1f} % of training time")
    cpu_ratio = t["reversible cpu"] / t["standard cpu"]
    cpu_over = (t["gradcheck cpu"] / cfg.gradcheck_every if cfg.gradcheck_every else 0.0) + \
        ((t["memory step cpu"] - t["reversible cpu"]) / cfg.memory_every if cfg.memory_every else 0.0)
    print(f"in CPU time: reversible {t['reversible cpu'] * 1e3:.2f} ms, standard {t['standard cpu'] * 1e3:.2f} ms, "
          f"ratio {cpu_ratio:.2f}x (tracked {t['reversible tracked cpu'] / t['standard cpu']:.2f}x); gradient check {t['gradcheck cpu'] * 1e3:.2f} ms, memory step "
          f"+{(t['memory step cpu'] - t['reversible cpu']) * 1e3:.2f} ms; overhead "
          f"{100 * cpu_over / t['reversible cpu']:.1f} %")
    ok = all(r["status"] == "finished" for r in results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
