"""Sizes beyond reason: what ``check`` warns about and what ``memory``/``gradcheck`` refuse.

From the check report alone (torch-free, no allocation): the largest tensor one
sample makes (any node, group bodies included), the parameters, and how many
layers the groups expand into (a ``Repeat`` of a ``Repeat`` multiplies). Sizes
are Python integers, so a shape whose element count overflows 64 bits is just
a big number here, never a wrapped one.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from revstudio.core.diagnostics import Diagnostic, warning
from revstudio.core.graph import Graph
from revstudio.core.shapes import MAX_GROUP_DEPTH
from revstudio.core.spec import registry
from revstudio.core.validate import group_refs

# More memory than any single accelerator (or most machines) has: sizes beyond it are
# mistakes (a typed extra digit), warned about by check.
DEVICE_LIMIT_BYTES = 1 << 40
# Layers a run builds one Python module each for: beyond this, building alone takes minutes.
LAYER_LIMIT = 50_000
DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}


def fmt_bytes(n: int) -> str:
    """Bytes in binary units with grouped digits (sizes past any device read as EiB)."""
    from .estimate import fmt_bytes as short  # (estimate imports nothing of this module)

    return short(n, thousands=True)


@dataclass
class Sizes:
    tensor_elements: int = 0        # the largest tensor of one sample
    tensor_node: str | None = None  # the node making it ("group g / node n" inside a body)
    parameters: int = 0
    parameter_node: str | None = None
    layers: int = 0
    layer_node: str | None = None   # the top-level node that expands into the most layers


def _elements(shape: Any) -> int:
    n = 1
    for d in shape or ():
        n *= int(d)
    return n


def measure(graph: Graph, report: Any) -> Sizes:
    out = Sizes(parameters=int(getattr(report, "parameters", 0) or 0))

    def largest(nodes: Mapping[str, Any], where: str) -> None:
        for nid, info in nodes.items():
            for shape in (getattr(info, "outputs", None) or {}).values():
                n = _elements(shape)
                if n > out.tensor_elements:
                    out.tensor_elements, out.tensor_node = n, f"{where}{nid}"

    largest(report.nodes, "")
    for name, body in (getattr(report, "groups", None) or {}).items():
        largest(body.nodes, f"group {name} / node ")
    best = 0
    for nid, info in report.nodes.items():
        if info.parameters > best:
            best, out.parameter_node = info.parameters, nid
    memo: dict[str, int] = {}
    most = 0
    for node in graph:
        n = _layers(graph, node, memo, set())
        out.layers += n
        if n > most:
            most, out.layer_node = n, node.id
    return out


_NO_LAYER = frozenset({"Input", "Output", "GroupInput", "GroupOutput"})


def _layers(graph: Graph, node: Any, memo: dict[str, int], active: set[str]) -> int:
    """Modules ``node`` builds: 1, or for a node running groups what their bodies build."""
    if node.type in _NO_LAYER:
        return 0
    spec = registry.find(node.type) if isinstance(node.type, str) else None
    if spec is None:
        return 1
    params = graph.resolved_params(node.id) if node.id in graph.nodes else dict(node.params)
    refs = group_refs(spec, params)
    if not refs:
        return 1
    times = params.get("times", 1) if node.type == "Repeat" else 1
    total = 0
    for _param, name in refs:
        if name not in memo:
            body = graph.groups.get(name)
            if body is None or name in active or len(active) >= MAX_GROUP_DEPTH:
                return 1  # missing, recursive or nested too deep: reported by check
            active.add(name)
            view = Graph(name)
            view.nodes, view.edges, view.groups = body.nodes, body.edges, graph.groups
            memo[name] = sum(_layers(view, n, memo, active) for n in body)
            active.discard(name)
        total += memo[name]
    return (int(times) if isinstance(times, int) and times > 0 else 1) * total


def size_warnings(graph: Graph, report: Any, dtype: str = "float32", sizes: Sizes | None = None) -> list[Diagnostic]:
    """Warnings for sizes no real device holds, each naming the node and the bytes
    (``sizes``: :func:`measure` of the graph, where the caller has it)."""
    s = sizes if sizes is not None else measure(graph, report)
    elem = DTYPE_BYTES.get(dtype, 4)
    out = []
    if s.tensor_elements * elem > DEVICE_LIMIT_BYTES:
        out.append(warning(s.tensor_node if s.tensor_node in report.nodes else None,
                           f"{s.tensor_node} makes a tensor of {fmt_bytes(s.tensor_elements * elem)} per sample "
                           f"({s.tensor_elements:,} values), more than any device holds ({fmt_bytes(DEVICE_LIMIT_BYTES)}); "
                           "check its shape"))
    if s.parameters * elem > DEVICE_LIMIT_BYTES:
        out.append(warning(s.parameter_node, f"the graph has {s.parameters:,} parameters "
                           f"({fmt_bytes(s.parameters * elem)}), more than any device holds; "
                           f"{s.parameter_node} has the most"))
    if s.layers > LAYER_LIMIT and s.layer_node is not None:
        most = _layers(graph, graph.nodes[s.layer_node], {}, set())
        alone = f" ({s.layer_node} alone into {most:,})" if most > 1 else ""
        out.append(warning(s.layer_node, f"the graph expands into {s.layers:,} layers{alone}; building it takes "
                           f"minutes, 'revstudio memory' and 'gradcheck' refuse more than {LAYER_LIMIT:,}, and "
                           "no memory estimate is made (simulating its step would take minutes too)"))
    return out


def fit_problem(graph: Graph, report: Any, batch: int, dtype: str, available: int | None,
                where: str = "this machine") -> str | None:
    """Why running one training step cannot work here (None: it might), before anything is allocated.

    The floor is what any mode needs at least: weights and their gradients, and the
    largest single tensor of the batch.
    """
    s = measure(graph, report)
    elem = DTYPE_BYTES.get(dtype, 4)
    if s.layers > LAYER_LIMIT:
        return (f"the graph expands into {s.layers:,} layers ({s.layer_node} the most); more than "
                f"{LAYER_LIMIT:,} take minutes to build, so this run is refused")
    params, tensor = 2 * s.parameters * elem, s.tensor_elements * elem * batch
    need = params + tensor
    if available is not None and need > available:
        parts = [f"the weights and their gradients {fmt_bytes(params)}"] if params else []
        if tensor:
            parts.append(f"{s.tensor_node}'s output of {fmt_bytes(tensor)} at batch {batch}")
        return (f"one step needs at least {fmt_bytes(need)} ({', '.join(parts)}) but {where} has "
                f"{fmt_bytes(available)}; reduce the batch or the sizes")
    return None
