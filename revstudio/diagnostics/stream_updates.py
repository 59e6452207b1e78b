"""The temporaries of the reversible runtime's in-place stream updates, torch-free.

Backward rebuilds a coupling's input in place (``runtime_streams._update``): along
the batch, in pieces, each with temporaries of its size. The estimate counts them
with the rule the runtime uses (``runtime_streams._pieces``: small pieces on the CPU,
one piece up to 64 MiB of temporaries on a GPU, where every piece costs a launch);
tests/diagnostics/test_update_temporaries.py holds the two equal. Where F's output
is memory nothing else holds (``fresh_output``, the catalog's rule; the runtime
asks ``runtime_streams.sole``), a pair's update uses it as a temporary and needs
two more, in fewer pieces (``runtime_streams.update_over``).
"""
from __future__ import annotations

from math import prod
from typing import Any

from revstudio.core.graph import PortRef
from revstudio.core.spec import UnknownNodeType, registry

from .save_rules import coupling_split

# How the runtime updates a stream in place on the CPU (runtime_streams._pieces): along the batch,
# in pieces whose temporaries take at most CHUNK_BYTES, and at least MIN_PIECES pieces once
# they would take CHUNK_BYTES // 4.
CHUNK_BYTES = 1 << 18
MIN_PIECES = 8
# On an accelerator (``device`` other than "cpu"): pieces of at most this many bytes of
# temporaries, and no least number (runtime_streams._DEVICE_CHUNK_BYTES). Measured on an H200
# (benchmarks/README.md, "The GPU check"): the update's temporaries are whole stream values there.
DEVICE_CHUNK_BYTES = 1 << 26


def update_pieces(batch: int, sample_bytes: int, temporaries: int, device: str = "cpu") -> int:
    """Pieces an in-place stream update of ``batch`` samples of ``sample_bytes`` each works in,
    on ``device`` ("cpu", or the type of an accelerator: "cuda")."""
    size = batch * sample_bytes * temporaries
    if device != "cpu":
        return max(1, min(batch, -(-size // DEVICE_CHUNK_BYTES)))
    least = MIN_PIECES if size >= CHUNK_BYTES // 4 else 1
    return max(1, min(batch, max(-(-size // CHUNK_BYTES), least)))


def _temporaries(elements: int, elem: int, stream_bytes: int) -> tuple[int, int] | None:
    """(bytes of one temporary per sample, temporaries) of an in-place update of a stream value
    of ``elements`` per sample; None where the stream is in the model's dtype (no temporaries).
    A compensated float32 pair's TwoSum takes three float32 temporaries
    (runtime_streams._two_sum_), a float64 stream one widened copy of the narrow update."""
    if stream_bytes <= elem or elements <= 0:
        return None
    if elem == 4 and stream_bytes == 8:  # float32x2 pairs
        return elements * 4, 3
    return elements * stream_bytes, 1


def update_break(elements: int, elem: int, stream_bytes: int, device: str = "cpu") -> int | None:
    """The batch from which an update of ``elements`` per sample works in at least MIN_PIECES
    pieces, so its temporaries shrink: the one place a larger batch can peak lower (None: never,
    or from batch 1; never on an accelerator, whose pieces only bound very large updates)."""
    found = _temporaries(elements, elem, stream_bytes)
    if found is None or device != "cpu":
        return None
    first = -(-(CHUNK_BYTES // 4) // (found[0] * found[1]))
    return first if first > 1 else None


def over_rows(batch: int, sample_bytes: int, device: str = "cpu") -> int:
    """Rows per piece of an update written over F's output (``runtime_streams.over_rows``): on
    the CPU one piece where the usual update takes one, else half the batch, in pieces of at most
    CHUNK_BYTES of its two temporaries; on an accelerator, the batch over its pieces."""
    if device != "cpu":
        return -(-batch // update_pieces(batch, sample_bytes, 2, device))
    if update_pieces(batch, sample_bytes, 3) == 1:
        return batch
    return max(1, min(batch // 2, CHUNK_BYTES // (2 * sample_bytes)))


def update_temporaries(batch: int, elements: int, elem: int, stream_bytes: int, fresh: bool = False,
                       device: str = "cpu") -> int:
    """Bytes of temporaries alive while backward rebuilds a stream value of ``elements`` per
    sample in place (one piece's worth: see :func:`update_pieces`). ``fresh``: F's output is
    its own memory (:func:`fresh_output`), so a pair's update writes over it and takes two
    temporaries of :func:`over_rows` rows. On a GPU a pair's update is one Triton kernel with
    none (``compiler.runtime_fused``; where Triton is missing, the torch passes take whole
    stream values: not modelled)."""
    found = _temporaries(elements, elem, stream_bytes)
    if found is None:
        return 0
    sample_bytes, count = found
    if count == 3 and device != "cpu":
        return 0  # one fused kernel updates the pair in registers (compiler.runtime_fused)
    if fresh and count == 3:
        return 2 * over_rows(batch, sample_bytes, device) * sample_bytes
    return count * -(-batch // update_pieces(batch, sample_bytes, count, device)) * sample_bytes


def fresh_output(graph: Any, groups: Any, reports: Any, ref: str, nodes: Any, depth: int = 0) -> bool:
    """Whether the value at ``ref`` ("node.port") of ``graph`` (the project or a group body) is
    memory of its own that no backward reads, by the catalog's ``NodeSpec.fresh_output``:
    through identities to the node before them, into a Group's or Repeat's body to what its
    output port is fed by. ``groups``: the project's group bodies by name, ``reports`` the
    check's analyses of them; ``nodes``: ``graph``'s node infos (its report's ``nodes``). An
    F input, a group input and an unknown type are not."""
    if depth > 32:
        return False
    try:
        port = PortRef.parse(ref)
    except ValueError:
        return False
    node = graph.nodes.get(port.node)
    info = nodes.get(port.node) if nodes is not None else None
    if node is None or info is None or not info.ok:
        return False
    if node.type in ("Group", "Repeat"):
        return body_output_fresh(groups, reports, node.params.get("group"), port.port, depth + 1)
    try:
        spec = registry.get(node.type)
    except UnknownNodeType:
        return False
    params = {**spec.defaults(), **node.params}
    shapes = [s for s in info.inputs.values() if s is not None]
    fresh = spec.output_is_fresh(params, shapes)
    if fresh is None:  # its input passed through
        edges = graph.edges_into(port.node)
        return bool(edges) and fresh_output(graph, groups, reports, str(edges[0].src), nodes, depth + 1)
    return bool(fresh)


def body_output_fresh(groups: Any, reports: Any, name: Any, port: str | None = None, depth: int = 0) -> bool:
    """:func:`fresh_output` of what feeds group body ``name``'s output ``port`` (None: its first
    output, as for an AdditiveCoupling's F or G)."""
    body = groups.get(name) if isinstance(name, str) else None
    report = reports.get(name) if body is not None else None
    if body is None or report is None:
        return False
    for nid, inner in body.nodes.items():
        if inner.type == "GroupOutput" and (port is None or inner.params.get("port") == port):
            edges = body.edges_into(nid)
            return bool(edges) and fresh_output(body, groups, reports, str(edges[0].src), report.nodes, depth)
    return False


def additive_updates(groups: Any, reports: Any, kind: str, params: Any, shape: Any,
                      active: set[str]) -> list[tuple[int, bool]]:
    """(elements per sample, F's output fresh?) of each half an AdditiveCoupling updates (x1 by
    F, x2 by G where it has one); for a Repeat or Group, those of its body's (recursion-safe).
    ``groups``: the project's group bodies by name, ``reports`` the check's analyses of them."""
    if kind == "AdditiveCoupling":
        if not shape:
            return []
        spatial = prod(shape[1:])
        c1, c2 = coupling_split(params, shape)
        out = [(c1 * spatial, body_output_fresh(groups, reports, params.get("f")))]
        if params.get("g"):
            out.append((c2 * spatial, body_output_fresh(groups, reports, params.get("g"))))
        return out
    name = params.get("group") if kind in ("Repeat", "Group") else None
    if not isinstance(name, str) or name in active:
        return []
    body, report = groups.get(name), reports.get(name)
    if body is None or report is None:
        return []
    active.add(name)
    found: list[tuple[int, bool]] = []
    for nid, info in report.nodes.items():
        node = body.nodes.get(nid)
        if node is None or not info.ok:
            continue
        found += additive_updates(groups, reports, info.type, {**node.params}, info.inputs.get("in"), active)
    active.discard(name)
    return found


def step_updates(w: Any, sid: str, coupling: Any) -> list[tuple[int, bool]]:
    """(elements per sample, F's output fresh?) of each stream value an additive coupling of
    region step ``sid`` updates (``w``: the estimate's walker; ``coupling``: the wired coupling
    whose merge ``sid`` is, or None): a wired coupling's, an AdditiveCoupling's halves, those
    inside a Repeat's or Group's body; none for steps that update no stream by addition."""
    groups = w.bodies.reports  # the check's analyses of the project's group bodies
    if coupling is not None:
        try:
            ref = PortRef.parse(coupling.a)
        except ValueError:
            return []
        info = w.report.nodes.get(ref.node)
        shape = info.outputs.get(ref.port) if info is not None else None
        if shape is None:
            return []
        return [(prod(shape), fresh_output(w.graph, w.bodies.graph.groups, groups, coupling.f, w.report.nodes))]
    view = w.views.get(sid)
    if view is None:
        return []
    return additive_updates(w.bodies.graph.groups, groups, view.type, view.params, view.inputs.get("in"), set())


def flow_rerun_bytes(kind: str, output: int, elem: int, stream_bytes: int) -> int:
    """What a flow layer with weights (ActNorm, InvConv1x1; ``output``: its output's bytes in the
    model's dtype) holds more in its backward where the streams are float64 tensors of a bfloat16
    or float16 model (``runtime_steps.Invertible.backward``): its rerun reads the stream through a
    copy in the model's dtype and hands back a float64 copy of its output, and the vjp through
    that copy makes the input's gradient in float64, beside the layer's own work. Two outputs'
    worth in float64. Alone in a region an ActNorm was 30-42 % under at batches 1-32 (now exact),
    an InvConv1x1 30-47 % (now 3-5 %: its output's gradient cast to the model's dtype is a tensor
    of its own there, which with pairs takes the gradient's place, ``peak_moments.FLOW_WORK``, but
    counted, glow_flow went 2.9 % over); glow_flow 3.2 % at batch 1 (its last step's backward is
    its peak there). None for pairs (a float32 model's) or a model computing in the streams'
    dtype."""
    if kind not in ("ActNorm", "InvConv1x1") or stream_bytes <= 2 * elem:
        return 0
    return 2 * output * stream_bytes // elem
