"""The number types a model computes in and how byte figures are written.

What each Input node declares (``input_dtypes``) and the one type the model computes in
(``input_dtype``: ``compile``, ``train``, ``memory`` and exported code all take it from here),
the bytes of an element of each type and of one input batch (``input_bytes``), the run
precisions the estimate does not model (``precision_note``) and ``fmt_bytes``, the short binary
units of the CLI's and the editor's figures. ``revstudio.diagnostics.estimate`` re-exports them.
"""
from __future__ import annotations

from typing import Any

from revstudio.core.graph import Graph

from .estimate_walk import _prod

DTYPE_BYTES = {
    "float16": 2, "half": 2, "bfloat16": 2, "float32": 4, "float": 4, "float64": 8, "double": 8,
}


def fmt_bytes(n: float, thousands: bool = False) -> str:
    """1.5 MiB: short binary units for labels and tables (the CLI's and the editor's); a value
    that would print as 1024.0 of a unit is the next unit's 1.0. ``thousands``: digits grouped
    (for sizes past any device, in EiB)."""
    value = float(n)
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
    sep = "," if thousands else ""
    for i, unit in enumerate(units):
        last = i == len(units) - 1
        if unit == "B" and (round(abs(value)) < 1024 or last):
            return f"{value:{sep}.0f} B"
        if unit != "B" and (round(abs(value), 1) < 1024 or last):
            return f"{value:{sep}.1f} {unit}"
        value /= 1024
    return f"{value:{sep}.1f} EiB"  # pragma: no cover


# Run precisions that train under autocast (``training.precision``): the estimate does not model them
LOW_PRECISIONS = ("bf16", "fp16")


def precision_note(precision: object) -> str | None:
    """Why the estimate is not a step's at a run ``precision`` ("bf16", "fp16": autocast), or None
    (fp32, unset, or a value the run settings refuse). It counts every value in the model's dtype;
    autocast keeps low-precision copies for backward, and the reversible runtime float32 streams
    beside bf16 activations: on the examples the fp32 figures were 1.3-3.6x a bf16 step's peak in
    standard and checkpoint mode (benchmarks/README.md, "Mixed precision and the estimate")."""
    if precision not in LOW_PRECISIONS:
        return None
    return f"the estimate models fp32 steps only; {precision} autocast is not modelled"


def input_dtypes(graph: Graph) -> dict[str, str]:
    """``{Input node id: the number type it declares}`` (float32 where it declares none)."""
    out: dict[str, str] = {}
    for node in graph:
        if node.type == "Input":
            name = str(graph.resolved_params(node.id).get("dtype", "float32") or "float32")
            out[node.id] = name if name in DTYPE_BYTES else "float32"
    return out


def input_dtype(graph: Graph) -> str:
    """The number type the model computes in: float64 when any Input node declares it, else
    float32. A model has one; ``revstudio.compile``, ``train``, ``memory`` and exported code
    all take it from here, and every input's samples are fed in it."""
    return "float64" if "float64" in input_dtypes(graph).values() else "float32"


def input_bytes(graph: Graph, report: Any, batch: int, dtype: str | None = None) -> int:
    """Bytes of one input batch (every Input node's shape times ``batch``)."""
    elem = DTYPE_BYTES[dtype if dtype in DTYPE_BYTES else input_dtype(graph)]
    total = 0
    for info in report.nodes.values():
        if info.type == "Input":
            for shape in info.outputs.values():
                total += batch * _prod(shape) * elem
    return total
