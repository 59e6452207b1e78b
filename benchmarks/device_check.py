"""The prepared check of the CUDA paths: one short run on a machine with a GPU.

What no CPU machine can show, in one go (a few minutes on one GPU):

1. every example project, compiled on the device: reversible and checkpoint mode
   against standard in float64 (``gradcheck``: must agree to 1e-10) and reversible
   in float32 (1e-4), with the per-region inversion error;
2. measured memory per mode from the CUDA allocator's statistics (``revstudio
   memory``'s numbers) next to the static estimate;
3. the exported file of one example, run on the device, bit for bit against the
   compiled model;
4. the RevNet benchmark on the device (``bench_revnet.py``: time ratio and recompute
   floor, allocator peaks, gradient error), N in {4, 16, 64}.

    python benchmarks/device_check.py --out $OUT            # on the GPU machine
    python benchmarks/device_check.py --device cpu --quick  # here: the same steps, tiny

It needs torch, not PySide6 (run it with the repository on PYTHONPATH). It
prints one line per check and a summary, writes ``device_check.json`` under
``--out``, and exits 1 if a check failed. MemCNN and RevLib are pure Python: for
their bench columns carry their wheels (``pip download --no-deps memcnn==1.5.2
revlib==1.7.2 -d .whl``) and install them there first.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import torch  # noqa: E402

EXAMPLES = ROOT / "resources" / "examples"


def _gradchecks(device: str, batch: int) -> list[dict[str, Any]]:
    from revstudio.core.project import load
    from revstudio.diagnostics.gradcheck import compare_modes

    rows = []
    for path in sorted(EXAMPLES.glob("*.revs")):
        graph = load(path)
        for dtype, mode in (("float64", "reversible"), ("float64", "checkpoint"), ("float32", "reversible")):
            start = time.perf_counter()
            report = compare_modes(graph, batch=batch, dtype=dtype, mode=mode, device=device)
            rows.append({"check": "gradcheck", "project": path.stem, "dtype": dtype, "mode": mode,
                         "ok": bool(report.ok), "max_error": report.max_error, "tolerance": report.tolerance,
                         "inversion": report.max_inversion_error, "seconds": time.perf_counter() - start})
    return rows


def _memory(device: str, batch: int) -> list[dict[str, Any]]:
    from revstudio.clicmd.memory import measure_modes
    from revstudio.core.project import load
    from revstudio.diagnostics.check import full_check

    rows = []
    for path in sorted(EXAMPLES.glob("*.revs")):
        graph = load(path)
        measured = measure_modes(graph, batch, torch.device(device))
        report = full_check(graph, batch=batch)
        estimate = report.estimate.totals() if report.estimate is not None else {}
        flat = measured["reversible"]["kept_bytes"] <= measured["standard"]["kept_bytes"]
        rows.append({"check": "memory", "project": path.stem, "ok": bool(flat),
                     "modes": {m: {k: v for k, v in d.items() if k in ("peak_bytes", "kept_bytes", "seconds")}
                               for m, d in measured.items()},
                     "estimate": {m: d.get("activation_bytes") for m, d in estimate.items()}})
    return rows


def _export(device: str) -> dict[str, Any]:
    from revstudio.codegen import export
    from revstudio.compiler import compile as rs_compile
    from revstudio.core.project import load

    graph = load(EXAMPLES / "revnet_wired.revs")
    torch.manual_seed(0)
    compiled = rs_compile(graph, device=device)
    namespace: dict[str, Any] = {"__name__": "exported_on_device"}
    exec(compile(export(graph), "exported.py", "exec"), namespace)  # generated code; project text only as data
    exported = namespace["Model"]().to(device)
    exported.load_state_dict(compiled.state_dict())
    x = torch.randn(4, *compiled.plan.inputs[0].shape, device=device)
    results = []
    for model in (compiled, exported):
        model.train()
        torch.manual_seed(1)
        xi = x.clone().requires_grad_(True)
        out = model(xi)
        out.square().sum().backward()
        results.append((out.detach(), xi.grad, [p.grad for p in model.parameters()]))
    (a, ga, pa), (b, gb, pb) = results
    same = (torch.equal(a, b) and ga is not None and gb is not None and torch.equal(ga, gb)
            and all(u is not None and v is not None and torch.equal(u, v) for u, v in zip(pa, pb)))
    return {"check": "export", "project": "revnet_wired", "ok": bool(same)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "out"))
    parser.add_argument("--quick", action="store_true", help="tiny bench, batch 2: a smoke run")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("device_check: CUDA is not available here; use --device cpu for a smoke run", file=sys.stderr)
        return 2
    name = torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else "cpu"
    print(f"device {args.device} ({name}), torch {torch.__version__}", flush=True)
    results: dict[str, Any] = {"device": args.device, "name": name, "torch": torch.__version__, "checks": []}
    steps = [("gradcheck", lambda: _gradchecks(args.device, 2 if args.quick else 4)),
             ("memory", lambda: _memory(args.device, 2 if args.quick else 16)),
             ("export", lambda: [_export(args.device)])]
    for title, step in steps:
        try:
            rows = step()
        except Exception as exc:  # a broken check is reported, the others still run
            rows = [{"check": title, "ok": False, "error": f"{type(exc).__name__}: {exc}",
                     "trace": traceback.format_exc()[-2000:]}]
        for row in rows:
            fields = {k: v for k, v in row.items() if k not in ("check", "ok", "trace", "modes", "estimate")}
            print(f"{'ok  ' if row['ok'] else 'FAIL'} {title}: {fields}", flush=True)
        results["checks"] += rows
    import bench_revnet

    blocks = [2, 4] if args.quick else [4, 16, 64]
    size, channels, batch = (8, 8, 2) if args.quick else (16, 64, 16)
    columns = ["plain", "plain-cl", "checkpoint", "revstudio", "revstudio-f32streams", "revstudio-f64streams",
               "memcnn", "revlib"]
    bench = bench_revnet.run(blocks, batch, channels, size, 1 if args.quick else args.runs,
                             torch.device(args.device), columns)
    print(bench_revnet.table(bench))
    for line in bench_revnet.targets(bench):
        print(line)
    results["bench"] = bench
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "device_check.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    failed = [c for c in results["checks"] if not c["ok"]]
    print(f"{len(results['checks']) - len(failed)} of {len(results['checks'])} checks passed; "
          f"results in {out / 'device_check.json'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
