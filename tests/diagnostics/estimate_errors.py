"""The estimate's error against the measured peak of one training step, per mode (a helper of
the layer-by-layer estimate tests)."""
from __future__ import annotations

from collections.abc import Sequence

from revstudio.core.graph import Graph


def estimate_errors(graph: Graph, batch: int, modes: Sequence[str], dtype: str = "float32") -> dict[str, float]:
    """estimate / measured - 1 of ``graph``'s peak per mode (live-tensor accounting, CPU), the
    model compiled in ``dtype``."""
    import torch

    from revstudio.compiler import compile as compile_graph
    from revstudio.diagnostics.check import full_check
    from revstudio.diagnostics.estimate import estimate_peak
    from revstudio.diagnostics.gradcheck import random_inputs
    from revstudio.diagnostics.memory import compare_modes

    report = full_check(graph, batch=batch)
    torch.manual_seed(0)
    model = compile_graph(graph, mode="standard", dtype=getattr(torch, dtype))
    model.train()
    inputs = random_inputs(graph, batch, getattr(torch, dtype), requires_grad=False)
    measured = compare_modes(model, inputs, modes)
    return {mode: estimate_peak(graph, report, batch=batch, mode=mode, dtype=dtype) / measured[mode]["peak_bytes"] - 1
            for mode in modes}
