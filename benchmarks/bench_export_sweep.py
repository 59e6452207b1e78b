"""Exported code vs ``revstudio.compile`` on random reversible networks (``random_revnets.py``).

A differential probe of section 8's contract, not a test (tests/codegen holds a few seeded
cases of each check). Per network: export it, run the file in one ``python -I`` child where
revstudio cannot be imported, load the compiled module's ``state_dict`` and compare outputs,
input and parameter gradients and buffers bit for bit in every mode (train or eval by seed);
the same state_dict keys and runtime regions; the file reopens to the same document and
passes ``ruff check``. ``--memory`` also compares one step's peak and kept bytes per mode
(live-tensor accounting on the CPU, never RSS) between the exported and the compiled model.

    python benchmarks/bench_export_sweep.py --quick                # 10 networks per family
    python benchmarks/bench_export_sweep.py --seeds 200 --family image --memory
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests" / "codegen"))

from random_revnets import FAMILIES  # noqa: E402

MODES = ("reversible", "standard", "checkpoint")


def differential(family: str, seeds: range, folder: Path) -> list[str]:
    """Problems found (empty: every network matched)."""
    import codegen_harness as ch  # type: ignore[import-not-found]  # tests/codegen, on sys.path above

    from revstudio.core.project import dumps, load

    harness, prepared, problems = ch.Harness(folder), {}, []
    for seed in seeds:
        graph = FAMILIES[family](seed)
        try:
            prepared[seed] = (graph, *ch.prepare(graph, seed=seed, train=seed % 2 == 0))
        except ch.CompilerFailure as exc:
            problems.append(f"{family} {seed}: revstudio.compile fails ({exc})")
        except Exception as exc:  # the export itself failed
            problems.append(f"{family} {seed}: export failed ({type(exc).__name__}: {exc})")
    got = harness.standalone_many({str(s): (src, io) for s, (_g, src, io, _m) in prepared.items()})
    paths = []
    for seed, (graph, source, io, model) in prepared.items():
        result = got[str(seed)]
        meta = result.pop("__meta__")
        path = folder / f"{family}_{seed}.py"
        path.write_text(source, encoding="utf-8")
        paths.append(str(path))
        try:
            assert not meta["revstudio_imported"], "the export imported revstudio"
            assert meta["state_keys"] == list(model.state_dict().keys()), "state_dict keys differ"
            assert meta["regions"] == ch.region_structure(model), "runtime regions differ"
            ch.assert_identical(harness.reference(model, io), result)
            assert dumps(load(path)) == dumps(graph), "reopens to another document"
        except AssertionError as exc:
            problems.append(f"{family} {seed}: {exc}")
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated", *paths], capture_output=True,
                          text=True)
    if lint.returncode:
        problems.append(f"{family}: ruff check failed:\n{lint.stdout[-2000:]}")
    return problems


def memory(family: str, seeds: range) -> list[str]:
    """Per network and mode: the exported model's step peak and kept bytes vs the compiled one's."""
    import torch

    from revstudio.codegen import export
    from revstudio.compiler import compile as rs_compile
    from revstudio.diagnostics.memory import measure_step

    problems = []
    for seed in seeds:
        graph = FAMILIES[family](seed)
        torch.manual_seed(seed)
        compiled = rs_compile(graph, device="cpu")
        namespace: dict[str, Any] = {"__name__": f"exported_{family}_{seed}"}
        exec(compile(export(graph), "exported.py", "exec"), namespace)  # generated code; ids only as data
        exported = namespace["Model"]()
        exported.load_state_dict(compiled.state_dict())
        xs = [torch.randn(4, *op.shape) for op in sorted(compiled.plan.inputs, key=lambda o: o.index)]
        for mode in MODES:
            compiled.mode = exported.mode = mode
            torch.manual_seed(0)
            a = measure_step(compiled, xs, timing_runs=0)
            torch.manual_seed(0)
            b = measure_step(exported, xs, timing_runs=0)
            if (a["peak_bytes"], a["kept_bytes"]) != (b["peak_bytes"], b["kept_bytes"]):
                problems.append(f"{family} {seed} {mode}: peak {b['peak_bytes']} B exported vs "
                                f"{a['peak_bytes']} B compiled, kept {b['kept_bytes']} vs {a['kept_bytes']}")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", choices=sorted(FAMILIES), action="append",
                        help="random family (repeatable; default all)")
    parser.add_argument("--seeds", type=int, default=50, help="networks per family (default 50)")
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--memory", action="store_true", help="also compare measured step memory per mode")
    parser.add_argument("--quick", action="store_true", help="10 networks per family, memory included")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)  # the child runs on one thread: reductions must round alike
    seeds = range(args.first, args.first + (10 if args.quick else args.seeds))
    problems: list[str] = []
    for family in args.family or sorted(FAMILIES):
        with tempfile.TemporaryDirectory() as tmp:
            found = differential(family, seeds, Path(tmp))
        if args.memory or args.quick:
            found += memory(family, seeds)
        print(f"{family}: {len(seeds)} networks, {len(found)} problems", flush=True)
        problems += found
    for problem in problems:
        print("  " + problem)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
