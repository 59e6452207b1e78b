"""Peak estimate vs measured peak where a skip connection reads a reversible region's values.

A residual skip around a reversible block (a Merge of a value before it and the block's
output), or one that reads a value inside a Glow flow, makes a region with more than one
output, or splits one region in two. The example projects have neither; this draws them from
the examples: each variant adds a Merge of value ``a`` and value ``b`` that takes ``b``'s place.
Per variant, batch and mode: the measured peak of one training step (live-tensor accounting on
the CPU) and the estimate's error.

    python benchmarks/bench_estimate_skips.py
    python benchmarks/bench_estimate_skips.py --batches 2 8
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

EXAMPLES = ROOT / "resources" / "examples"
# (example, the value the skip reads before, the value it joins, Merge mode)
VARIANTS = [
    ("revnet_wired", "stem.out", "block1_cat.out", "add"),   # around the whole region
    ("revnet_wired", "stem.out", "block0_cat.out", "add"),   # around the first block
    ("revnet_wired", "stem.out", "block1_cat.out", "mul"),
    ("glow_flow", "squeeze.out", "coupling1.out", "add"),    # around the flow: two region outputs
    ("glow_flow", "actnorm0.out", "coupling0.out", "add"),   # inside the flow: two regions
]


def variant(folder: Path, example: str, before: str, joined: str, mode: str) -> Path:
    data = json.loads((EXAMPLES / f"{example}.revs").read_text())
    for edge in data["edges"]:
        if edge[0] == joined:
            edge[0] = "skip.out"
    data["nodes"].append({"id": "skip", "type": "Merge", "params": {"mode": mode}, "pos": [0, 0]})
    data["edges"] += [[joined, "skip.in0"], [before, "skip.in1"]]
    path = folder / f"{example}+skip({before},{joined},{mode}).revs"
    path.write_text(json.dumps(data))
    return path


def seeded_model(graph: Any, batch: int) -> tuple[Any, Any]:
    """The model and inputs a measured peak of the estimate's corpus is taken on: one set of weights
    per graph (seed 0), built in standard mode, initialised on the inputs as the skip tests do."""
    import torch

    from revstudio.compiler import compile as compile_graph
    from revstudio.diagnostics.gradcheck import random_inputs

    torch.manual_seed(0)
    model = compile_graph(graph, mode="standard")
    model.train()
    inputs = random_inputs(graph, batch, torch.float32, requires_grad=False)
    if hasattr(model, "initialize"):
        model.initialize(*inputs)
    return model, inputs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 2, 8, 32])
    args = parser.parse_args(argv)

    import torch

    from revstudio.core.project import load
    from revstudio.diagnostics.check import full_check
    from revstudio.diagnostics.estimate import MODES, estimate_peak
    from revstudio.diagnostics.memory import measure_step

    torch.set_num_threads(1)
    worst = 0.0
    print(f"{'variant':<58} {'batch':>5}  " + "  ".join(f"{m:>10}" for m in MODES))
    with tempfile.TemporaryDirectory() as tmp:
        for example, before, joined, mode in VARIANTS:
            path = variant(Path(tmp), example, before, joined, mode)
            graph = load(path)
            for batch in args.batches:
                report = full_check(graph, batch=batch)
                model, inputs = seeded_model(graph, batch)
                errors = []
                for m in MODES:
                    model.mode = m
                    measured = measure_step(model, inputs, timing_runs=0)["peak_bytes"]
                    errors.append(estimate_peak(graph, report, batch=batch, mode=m) / measured - 1)
                worst = max([worst, *map(abs, errors)])
                print(f"{path.stem:<58} {batch:>5}  " + "  ".join(f"{e:>+9.2%} " for e in errors), flush=True)
    print(f"worst |error|: {worst:.2%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
