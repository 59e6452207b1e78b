"""The prepared check of the CUDA paths: one short run on a machine with a GPU.

What no CPU machine can show, in one go (a few minutes on one GPU):

1. the fused pair update (one Triton kernel) against torch's passes, bit for bit, and
   every example project, compiled on the device: reversible and checkpoint mode
   against standard in float64 (``gradcheck``: must agree to 1e-10) and reversible
   in float32 (1e-4), with the per-region inversion error;
2. measured memory per mode from the CUDA allocator's statistics (``revstudio
   memory``'s numbers) next to the static estimate;
3. the exported file of one example, run on the device, bit for bit against the
   compiled model;
4. the product's own commands on the device: ``revstudio train`` (reversible, under a
   memory budget, standard), its measured peaks against its estimates, and
   ``revstudio memory --budget``; and mixed precision: a reversible step's peak under fp16
   autocast grows with depth no faster than in fp32, and ``memory --precision fp16`` runs;
5. the RevNet benchmark on the device (``bench_revnet.py``: time ratio and recompute
   floor, allocator peaks, gradient error), N in {4, 16, 64}, and N=64 again with
   TF32 off (PyTorch lets cuDNN convolutions round to TF32 by default);
6. whether the recompute overlaps the backward on a second CUDA stream
   (``bench_overlap.py``);
7. the size sweep's cells on the device (``bench_sweep.py``, wall time), as many as fit
   in ``--sweep-seconds``.

    python benchmarks/device_check.py --out $OUT            # on the GPU machine
    python benchmarks/device_check.py --device cpu --quick  # here: the same steps, tiny

It needs torch, not PySide6 (run it with the repository on PYTHONPATH). It
prints one line per check and a table per benchmark, writes ``device_check.json``
under ``--out`` after every step (a run cut short keeps what it measured), and
exits 1 if a check failed. MemCNN and RevLib are pure Python: for
their bench columns carry their wheels (``pip download --no-deps memcnn==1.5.2
revlib==1.7.2 -d .whl``) and install them there first.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
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
        est = report.estimate
        estimate = est.totals() if est is not None else {}
        flat = measured["reversible"]["kept_bytes"] <= measured["standard"]["kept_bytes"]
        row = {"check": "memory", "project": path.stem, "ok": bool(flat),
               "modes": {m: {k: v for k, v in d.items() if k in ("peak_bytes", "kept_bytes", "seconds")}
                         for m, d in measured.items()},
               "estimate": {m: d.get("activation_bytes") for m, d in estimate.items()},
               "estimated_peaks": {m: est.peak_bytes(m) for m in estimate} if est is not None else {}}
        if device.startswith("cuda"):  # what of the peak is cuDNN's own (its workspaces and RNN reserve)
            with torch.backends.cudnn.flags(enabled=False):
                row["peaks_without_cudnn"] = {m: d["peak_bytes"] for m, d in
                                              measure_modes(graph, batch, torch.device(device)).items()}
        rows.append(row)
    return rows


def _export(device: str) -> dict[str, Any]:
    from revstudio.codegen import export
    from revstudio.compiler import compile as rs_compile
    from revstudio.core.project import load

    graph = load(EXAMPLES / "revnet_wired.revs")
    torch.manual_seed(0)
    compiled = rs_compile(graph, device=device)
    import importlib.util

    # imported from a file, as a user runs it (Triton builds a kernel only from a file's source)
    folder = Path(tempfile.mkdtemp())
    (folder / "exported_on_device.py").write_text(export(graph), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("exported_on_device", folder / "exported_on_device.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # generated code; project text only as data
    exported = module.Model().to(device)
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


def _train(device: str, steps: int) -> list[dict[str, Any]]:
    """``revstudio train`` on the device, as a user runs it: reversible, under a budget and
    standard. Its step rows' measured peak (the allocator's on CUDA) against its estimate."""
    rows = []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    for label, extra in (("reversible", []), ("reversible, budget 700KiB", ["--memory-budget", "700KiB"]),
                         ("standard", ["--mode", "standard"])):
        with tempfile.TemporaryDirectory() as out:
            cmd = [sys.executable, "-m", "revstudio", "train", str(EXAMPLES / "digits_revnet.revs"), "--json",
                   "--steps", str(steps), "--memory-every", str(max(1, steps // 4)), "--device", device,
                   "--out", out, *extra]
            start = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
            lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        measured = [r for r in lines if r.get("kind") == "step" and r.get("peak_bytes")]
        finished = [r for r in lines if r.get("event") == "finished"]
        row: dict[str, Any] = {"check": "train", "project": "digits_revnet", "run": label,
                               "ok": proc.returncode == 0 and bool(finished), "seconds": time.perf_counter() - start}
        if measured:
            last = measured[-1]
            row.update(peak_bytes=last["peak_bytes"], estimate_bytes=last.get("estimate_bytes"),
                       samples_per_s=last.get("samples_per_s"))
            if last.get("estimate_bytes"):
                row["estimate_over_peak"] = round(last["estimate_bytes"] / last["peak_bytes"], 3)
        if finished:
            row["metrics"] = finished[-1].get("metrics")
        if not row["ok"]:
            row["error"] = (proc.stderr or proc.stdout)[-1500:]
        rows.append(row)
    proc = subprocess.run([sys.executable, "-m", "revstudio", "memory", str(EXAMPLES / "revnet_wired.revs"),
                           "--device", device, "--batch", "16", "--budget", "300KiB", "--json"],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    row = {"check": "memory-cli", "project": "revnet_wired", "ok": proc.returncode == 0}
    try:
        data = json.loads(proc.stdout)
        row["modes"] = {m: {k: v for k, v in d.items() if k in ("peak_bytes", "kept_bytes", "seconds")}
                        for m, d in data.get("modes", {}).items() if isinstance(d, dict)}
        row["budget"] = data.get("budget")
    except ValueError:
        row["ok"], row["error"] = False, (proc.stderr or proc.stdout)[-1500:]
    rows.append(row)
    return rows


def _fused(device: str) -> list[dict[str, Any]]:
    """The fused pair update (``compiler.runtime_fused``, one Triton kernel) against the torch
    passes it replaces, bit for bit, on the device; and each one's time per update."""
    from revstudio.compiler import runtime_fused as fused
    from revstudio.compiler.runtime_streams import _two_sum_, _two_sum_exact

    if not device.startswith("cuda"):
        return [{"check": "fused", "ok": True, "status": "the CPU takes the torch passes"}]
    g = torch.Generator(device=device).manual_seed(0)
    same, checked = True, 0
    for n in (1, 1025, 1 << 20, (1 << 24) + 3):
        for scale in (1.0, 1e-30, 1e30):
            hi = torch.randn(n, generator=g, device=device) * scale
            lo = torch.randn(n, generator=g, device=device) * scale * 1e-8
            f = torch.randn(n, generator=g, device=device) * torch.logspace(-8, 8, n, device=device)
            f[::5] = 0.0
            f[1::7] = -hi[1::7]
            for sign in (1, -1):
                a_hi, a_lo = hi.clone(), lo.clone()
                _two_sum_(a_hi, a_lo, f, sign)
                b_hi, b_lo = hi.clone(), lo.clone()
                ran = fused.fused_usable(b_hi, b_lo, f) and fused.fused_two_sum_(b_hi, b_lo, f, sign)
                e_hi, e_lo = _two_sum_exact(hi, f, sign)
                c_hi, c_lo = hi.clone(), torch.empty_like(hi)
                ran = ran and fused.fused_two_sum_(c_hi, c_lo, f, sign, exact=True)
                same = same and bool(ran) and all(torch.equal(u.view(torch.int32), v.view(torch.int32)) for u, v in
                                                  ((a_hi, b_hi), (a_lo, b_lo), (e_hi, c_hi), (e_lo, c_lo)))
                checked += 1
    times = {}
    for n in (1 << 12, 1 << 16, 1 << 20, 1 << 24):
        hi, lo, f = (torch.randn(n, device=device) for _ in range(3))
        for name, update in (("torch passes", _two_sum_), ("fused", fused.fused_two_sum_)):
            for _ in range(3):
                update(hi, lo, f, 1)
            torch.cuda.synchronize(device)
            start = time.perf_counter()
            for _ in range(50):
                update(hi, lo, f, 1)
            torch.cuda.synchronize(device)
            times[f"{name} n={n}"] = round((time.perf_counter() - start) / 50 * 1e6, 1)
    return [{"check": "fused", "ok": same, "status": fused.fused_status(), "cases": checked, "microseconds": times}]


def _autocast(device: str, batch: int) -> list[dict[str, Any]]:
    """Mixed precision on the device: a reversible step's peak must grow with depth no faster
    under autocast (fp16 on CUDA, bf16 on the CPU) than in fp32 (the weights' gradients), and
    ``revstudio memory --precision`` measures every mode there."""
    from revstudio.compiler import compile as compile_graph
    from revstudio.core.generate import revnet_chain
    from revstudio.diagnostics.memory import Autocast, measure_step

    precision = "fp16" if device.startswith("cuda") else "bf16"
    peaks: dict[str, dict[int, int]] = {"fp32": {}, precision: {}}
    for blocks in (2, 8):
        torch.manual_seed(0)
        model = compile_graph(revnet_chain(blocks, channels=16, size=16), device=device)
        x = torch.randn(batch, 16, 16, 16, device=device)
        for name in peaks:
            stepped: Any = model if name == "fp32" else Autocast(model, torch.device(device).type, name)
            peaks[name][blocks] = measure_step(stepped, [x])["peak_bytes"]
    growth = {name: p[8] - p[2] for name, p in peaks.items()}
    rows = [{"check": "autocast-flat", "precision": precision, "peaks": peaks, "growth": growth,
             "ok": 0 < growth[precision] <= growth["fp32"] + 64 * 1024}]  # (allocator rounding)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "revstudio", "memory", str(EXAMPLES / "revnet_wired.revs"),
                           "--device", device, "--batch", str(batch), "--precision", precision, "--json"],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    row: dict[str, Any] = {"check": "memory-cli-precision", "precision": precision, "ok": proc.returncode == 0}
    try:
        data = json.loads(proc.stdout)
        row["modes"] = {m: {k: v for k, v in d.items() if k in ("peak_bytes", "kept_bytes", "seconds")}
                        for m, d in data.get("modes", {}).items() if isinstance(d, dict)}
    except ValueError:
        row["ok"], row["error"] = False, (proc.stderr or proc.stdout)[-1500:]
    rows.append(row)
    return rows


def _isolated(script: str, args: list[str], timeout: float) -> dict[str, Any]:
    """A benchmark in its own process, so that a device-side assert (which poisons the CUDA
    context for good) costs that benchmark only. Its tables go to our output, its JSON back."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "out.json"
        proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *args, "--json", str(path)],
                              capture_output=True, text=True, cwd=ROOT, timeout=timeout)
        print(proc.stdout, end="", flush=True)
        if proc.returncode != 0 or not path.exists():
            raise RuntimeError(f"{script} exited {proc.returncode}: {proc.stderr[-3000:]}")
        return json.loads(path.read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "out"))
    parser.add_argument("--quick", action="store_true", help="tiny bench, batch 2: a smoke run")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--sweep-seconds", type=float, default=150.0,
                        help="start no new sweep cell after this many seconds (default 150)")
    args = parser.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("device_check: CUDA is not available here; use --device cpu for a smoke run", file=sys.stderr)
        return 2
    name = torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else "cpu"
    print(f"device {args.device} ({name}), torch {torch.__version__}", flush=True)
    results: dict[str, Any] = {"device": args.device, "name": name, "torch": torch.__version__, "checks": []}
    if args.device.startswith("cuda"):
        results["tf32"] = {"cudnn": torch.backends.cudnn.allow_tf32, "matmul": torch.backends.cuda.matmul.allow_tf32}
        print(f"TF32: cuDNN convolutions {torch.backends.cudnn.allow_tf32}, "
              f"matmul {torch.backends.cuda.matmul.allow_tf32} (PyTorch's defaults)", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        (out / "device_check.json").write_text(json.dumps(results, indent=1, default=str), encoding="utf-8")

    steps = [("gradcheck", lambda: _gradchecks(args.device, 2 if args.quick else 4)),
             ("memory", lambda: _memory(args.device, 2 if args.quick else 16)),
             ("export", lambda: [_export(args.device)]),
             ("fused", lambda: _fused(args.device)),
             ("train", lambda: _train(args.device, 8 if args.quick else 40)),
             ("autocast", lambda: _autocast(args.device, 2 if args.quick else 8))]
    for title, step in steps:
        try:
            rows = step()
        except Exception as exc:  # a broken check is reported, the others still run
            rows = [{"check": title, "ok": False, "error": f"{type(exc).__name__}: {exc}",
                     "trace": traceback.format_exc()[-2000:]}]
        for row in rows:
            fields = {k: v for k, v in row.items() if k not in ("check", "ok", "trace", "modes", "estimate", "budget")}
            if isinstance(row.get("budget"), dict):
                fields["budget"] = {k: row["budget"].get(k) for k in ("budget_bytes", "kept_bytes", "estimate_peak_bytes")}
            if row.get("modes"):
                fields["peaks"] = {m: d.get("peak_bytes") for m, d in row["modes"].items()}
            fields.pop("estimate", None)
            print(f"{'ok  ' if row['ok'] else 'FAIL'} {row.get('check', title)}: {fields}", flush=True)
        results["checks"] += rows
        save()
    import bench_revnet

    blocks = [2, 4] if args.quick else [4, 16, 64]
    size, channels, batch = (8, 8, 2) if args.quick else (16, 64, 16)
    columns = ["plain", "plain-cl", "checkpoint", "revstudio", "revstudio-f32streams", "revstudio-f64streams",
               "memcnn", "revlib"]
    benches: list[tuple[str, Any]] = [
        ("bench", lambda: bench_revnet.run(blocks, batch, channels, size, 1 if args.quick else args.runs,
                                           torch.device(args.device), columns))]
    if args.device.startswith("cuda"):
        benches.append(("bench_no_tf32", lambda: _without_tf32(lambda: bench_revnet.run(
            blocks[-1:], batch, channels, size, args.runs, torch.device(args.device), columns))))
    benches += [
        ("overlap", lambda: _isolated("bench_overlap.py", ["--device", args.device, *(["--quick"] if args.quick else [])],
                                      timeout=600)),
        ("sweep", lambda: _isolated("bench_sweep.py", [
            "--device", args.device, "--streams", "--draws", "1", "--seconds", str(args.sweep_seconds),
            *(["--quick", "--runs", "1"] if args.quick else [])], timeout=args.sweep_seconds + 600))]
    for title, bench in benches:
        print(f"--- {title}", flush=True)
        try:
            results[title] = found = bench()
        except Exception as exc:
            results[title] = {"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-2000:]}
            print(f"FAIL {title}: {results[title]['trace']}", flush=True)
            save()
            continue
        if title.startswith("bench"):
            print(bench_revnet.table(found))
            for line in bench_revnet.targets(found):
                print(line)
        save()
    failed = [c for c in results["checks"] if not c["ok"]]
    print(f"{len(results['checks']) - len(failed)} of {len(results['checks'])} checks passed; "
          f"results in {out / 'device_check.json'}")
    return 1 if failed else 0


def _without_tf32(run: Any) -> Any:
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        found = run()
        found["config"]["tf32"] = False
        return found
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


if __name__ == "__main__":
    sys.exit(main())
