"""Runtime objects from a plan's plain data: reversible regions, coupling bodies, checkpoint segments.

A region arrives as plain data (value names, module names, ints and strings in
lists and dicts; ``region_data`` writes it) and :func:`build_region` turns it
into a ``runtime.Region`` over the layers of an owner module. ``revstudio.compile``
calls it; the code exporter writes the same data as a literal and inlines this
file verbatim (like ``runtime``), so the exported model assembles its regions
with the very same code. Imports only torch, the standard library and ``runtime``.
"""
import contextlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from .runtime import (
    FLOAT32X2,
    Affine,
    Cat,
    Coupling,
    Invertible,
    Region,
    Slice,
    Step,
    checkpoint_refusal,
    recompute_contexts,
)
from .runtime_eager import eager

# ---- regions ------------------------------------------------------------------


# Region data: {"id": str, "steps": [step, ...], "inputs"/"outputs"/"side"/"free"/"given": [value, ...],
#   "cuts": [[step, copy], ...] (where checkpoint mode's segments 2..k start: a plan step, and
#   for a Repeat the copy; backward recomputes one segment at a time)}.
# A step is one of
#   {"kind": "coupling", "a": value, "b": [value, ...], "output": value, "sign": 1 | -1, "f": value,
#    "body": [{"module": name, "inputs": [value, ...], "outputs": [value, ...]}, ...]}
#   {"kind": "node", "type": type id, "module": name, "inputs": [...], "outputs": [...]}, plus
#     "layout_only": true (a type that only moves values around: ``NodeSpec.layout_only``),
#     "channels" (AdditiveCoupling, AffineCoupling: its input's channels) or
#     "body": {"inputs": {value: index}, "outputs": {value: index}, "steps": [...]} (Group, Repeat:
#     the body's own region, spliced into this one).
def build_region(owner: nn.Module, data: Mapping[str, Any]) -> Region:
    """The ``runtime.Region`` that ``data`` describes, over the layers (attributes) of ``owner``.

    Values become slots numbered in the order they are first met: the steps
    first, then the region's inputs, outputs, side, free and given values.
    """
    slots: dict[str, int] = {}

    def slot(v: str) -> int:
        return slots.setdefault(v, len(slots))

    steps: list[Step] = []
    # checkpoint mode's segments start at these runtime steps (data["cuts"]: plan step, copy)
    wanted = {(int(i), int(c)) for i, c in data.get("cuts", ())}
    cuts: list[int] = []
    for i, step in enumerate(data["steps"]):
        marks: list[int] = []  # the runtime step each copy (a Repeat's) or the step starts at
        _add_steps(owner, step, slot, steps, marks)
        cuts += [m for c, m in enumerate(marks) if (i, c) in wanted and m > 0]
    return Region(data["id"], steps, [slot(v) for v in data["inputs"]], [slot(v) for v in data["outputs"]],
                  [slot(v) for v in data["side"]], [slot(v) for v in data["free"]],
                  [slot(v) for v in data.get("given", ())], cuts)


def _add_steps(owner: nn.Module, step: Mapping[str, Any], slot: Callable[[str], int], out: list[Step],
               marks: list[int] | None = None) -> None:
    repeat = step["kind"] == "node" and step["type"] == "Repeat"
    if marks is not None and not repeat:
        marks.append(len(out))
    if step["kind"] == "coupling":
        out.append(Coupling(slot(step["a"]), [slot(b) for b in step["b"]], slot(step["output"]), step["sign"],
                            LayerChain(owner, step), [getattr(owner, layer["module"]) for layer in step["body"]]))
        return
    module = getattr(owner, step["module"])
    ins, outs = [slot(v) for v in step["inputs"]], [slot(v) for v in step["outputs"]]
    if step["type"] == "AdditiveCoupling" and hasattr(module, "f"):
        _additive(module, step, ins, outs, slot, out)
    elif step["type"] == "AffineCoupling" and hasattr(module, "net") and "channels" in step:
        # its parts, so backward evaluates the net once (an Invertible step would run it twice)
        channels, split = int(step["channels"]), int(module.split)
        x1, x2, y2 = (slot(f"{step['module']}#{k}") for k in ("x1", "x2", "y2"))
        out.append(Slice(ins[0], [x1, x2], [split, channels - split]))
        out.append(Affine(x2, x1, y2, module))
        out.append(Cat([x1, y2], outs[0], [split, channels - split]))
    elif step["type"] in ("Group", "Repeat"):
        blocks = list(module.blocks) if step["type"] == "Repeat" else [module.body]
        # "blocks": [lo, hi] runs only those copies of a Repeat (a memory budget cuts it there)
        lo, hi = step.get("blocks", (0, len(blocks)))
        values = ins
        for i, block in enumerate(blocks[:hi]):
            if i < lo:
                continue
            if marks is not None:
                marks.append(len(out))
            last = i == hi - 1
            nxt = outs if last else [slot(f"{step['module']}#{i}:{k}") for k in range(len(outs))]
            _splice(block, step["body"], values, nxt, slot, out, f"{step['module']}#{i}")
            values = nxt
    elif step["type"] == "Split" and hasattr(module, "sizes"):
        # plain slicing steps: cheap backward, and Cat/Slice pairs between blocks fuse away
        out.append(Slice(ins[0], outs, list(module.sizes), int(module.dim) + 1))
    elif step["type"] == "Concat" and hasattr(module, "sizes"):
        out.append(Cat(ins, outs[0], list(module.sizes), int(module.dim) + 1))
    else:
        # a layer that only moves values around (a Squeeze, Permute, Reshape) rearranges a
        # stream as it is; any other computes in the model's dtype, not the (wider) stream's, a
        # weightless one too (a plugin's invertible leaky ReLU: run on a compensated pair's hi and
        # lo apart, it would compute another function; ``NodeSpec.layout_only`` says which)
        out.append(Invertible(module, ins, outs, cast=not step.get("layout_only", False)))


def _splice(block: nn.Module, body: Mapping[str, Any], ins: Sequence[int], outs: Sequence[int],
            slot: Callable[[str], int], out: list[Step], prefix: str) -> None:
    """An invertible group body's steps, inside the enclosing region (so memory stays flat)."""
    mapping = {v: ins[i] for v, i in body["inputs"].items()}
    mapping.update({v: outs[i] for v, i in body["outputs"].items()})

    def inner(v: str) -> int:
        if v in mapping:
            return mapping[v]
        return slot(f"{prefix}/{v}")

    for step in body["steps"]:
        _add_steps(block, step, inner, out)


def _additive(module: Any, step: Mapping[str, Any], ins: list[int], outs: list[int],
              slot: Callable[[str], int], out: list[Step]) -> None:
    """An AdditiveCoupling node as its halves: slice, y1 = x1 + F(x2), y2 = x2 + G(y1), concatenate."""
    channels, split = int(step["channels"]), int(module.split)
    x1, x2, y1, y2 = (slot(f"{step['module']}#{k}") for k in ("x1", "x2", "y1", "y2"))
    out.append(Slice(ins[0], [x1, x2], [split, channels - split]))
    out.append(Coupling(x1, [x2], y1, 1, FirstOutput(module.f), [module.f]))
    if module.g is not None:
        out.append(Coupling(x2, [y1], y2, 1, FirstOutput(module.g), [module.g]))
    else:
        y2 = x2
    out.append(Cat([y1, y2], outs[0], [split, channels - split]))


def is_flow(part: Any) -> bool:
    """Whether ``part`` (a layer, a region, a group body) reports a log-determinant as ``logdet``."""
    flow = getattr(part, "flow", None)
    return flow if isinstance(flow, bool) else hasattr(part, "logdet")


def total_logdet(parts: Iterable[Any]) -> torch.Tensor | None:
    """The per-sample sum of the parts' ``logdet`` from the last forward (None: no part has one)."""
    total = None
    for part in parts:
        logdet = part.logdet
        if isinstance(logdet, torch.Tensor):
            total = logdet if total is None else total + logdet
    return total


def body_logdet(parts: Sequence[Any], layers: Sequence[Any]) -> torch.Tensor | None:
    """A group body's log|det J| per sample: its own program's ``parts`` (layers and regions, as
    ``total_logdet``) where its forward ran them; where a caller's reversible region ran its ``layers``
    instead (a Repeat's copies, a Group node inside a region: the body's own regions never ran, and
    their logdet stayed None), the sum of those flow layers' own ``logdet``."""
    if all(isinstance(part.logdet, torch.Tensor) for part in parts):
        return total_logdet(parts)
    return total_logdet(layers)


def invert_region(region: Region, ys: Sequence[torch.Tensor], output_at: Sequence[int],
                  input_at: Sequence[int], dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """A group body's inputs rebuilt from its outputs: ``ys[i]`` is ``region.outputs[output_at[i]]``,
    result ``j`` is ``region.inputs[input_at[j]]``."""
    env: dict[int, Any] = {region.outputs[p]: y for p, y in zip(output_at, ys)}
    for step in reversed(region.steps):
        step.inverse(env, dtype)
    return tuple(env[region.inputs[p]] for p in input_at)


def nested_mode(region: Region, mode: str) -> str:
    """The mode a region nested in a group body runs in. One that only rearranges values (a
    Reshape ending a coupling's F) runs as standard mode in a reversible model: reversibly it
    kept its streams' pairs and inversion-error samples through its caller's rebuild for
    nothing to rebuild (random sequence model 99 at batch 32: 10 KiB, 7.9 % of the step's peak).
    The compiled module and the exported file both decide it here."""
    return "standard" if mode == "reversible" and region.rearranges else mode


def stream_dtype(dtype: torch.dtype, device: torch.device) -> torch.dtype | str | None:
    """How a region keeps its residual streams for layers computing in ``dtype`` (None: in
    the dtype of its inputs).

    float32 models keep each stream as a compensated pair of float32 tensors
    (``FLOAT32X2``: a value and its rounding error), float16/bfloat16 models in
    float64: the couplings still run in the model's dtype, but rebuilding
    activations in backward does not drift with depth. A pair is as accurate as a
    float64 stream and takes as many bytes, but layers read its float32 value
    without a converted copy. MPS has no float64 (and pairs are untested there).
    """
    if device.type == "mps" or dtype not in (torch.float32, torch.float16, torch.bfloat16):
        return None
    return FLOAT32X2 if dtype == torch.float32 else torch.float64


# Coupling functions are small objects rather than closures or bound methods: copy.deepcopy
# of a model (EMA, SWA) then copies the layers they call along with the model.
class LayerChain:
    """F of a wired coupling: its body layers, run in order on the coupling's b values, each
    value let go after the last layer that reads it (held to the end, every layer's output
    sat beside F's own at the end of each run, forward and backward's recompute alike)."""

    def __init__(self, owner: nn.Module, coupling: Mapping[str, Any]) -> None:
        self.calls = [(getattr(owner, layer["module"]), list(layer["inputs"]), list(layer["outputs"]))
                      for layer in coupling["body"]]
        self.b, self.f = list(coupling["b"]), coupling["f"]
        self.released = released_after([(ins, outs) for _, ins, outs in self.calls], [self.f])

    def __call__(self, *bs: torch.Tensor) -> torch.Tensor:
        env = dict(zip(self.b, bs))
        for (module, ins, outs), gone in zip(self.calls, self.released):
            for name, y in zip(outs, module(*[env[v] for v in ins])):
                env[name] = y
            for v in gone:
                env.pop(v, None)
        return env[self.f]


class FirstOutput:
    """The first output of a tuple-returning module (F or G of an AdditiveCoupling node)."""

    def __init__(self, module: nn.Module) -> None:
        self.module = module

    def __call__(self, *xs: torch.Tensor) -> torch.Tensor:
        return self.module(*xs)[0]


# ---- ordinary layers ----------------------------------------------------------


def checkpoint_segments(ops: Sequence[tuple[Sequence[str], Sequence[str], bool]], results: Iterable[str]
                        ) -> list[tuple[int, int, list[str], list[str]]]:
    """Runs of two or more consecutive ordinary ops, which "checkpoint" mode recomputes in
    backward instead of storing what happens inside them.

    ``ops``: (input values, output values, ordinary?) of each executed op in order
    (ordinary: a layer outside any region); ``results``: the values returned at
    the end. Each segment is (start, end, values it reads from before it, values
    it makes that something after it reads).
    """
    later: list[set[str]] = [set() for _ in ops]
    after: set[str] = set(results)
    for i in range(len(ops) - 1, -1, -1):
        later[i] = set(after)
        after |= set(ops[i][0])
    segments = []
    i = 0
    while i < len(ops):
        j = i
        while j < len(ops) and ops[j][2]:
            j += 1
        if j - i >= 2:
            made: set[str] = set()
            seg_in: list[str] = []
            for ins, outs, _ordinary in ops[i:j]:
                seg_in += [v for v in ins if v not in made and v not in seg_in]
                made |= set(outs)
            seg_out = [v for _ins, outs, _ordinary in ops[i:j] for v in outs if v in later[j - 1]]
            segments.append((i, j, seg_in, seg_out))
        i = max(j, i + 1)
    return segments


@eager  # dynamo cannot trace a checkpoint's context_fn: run eagerly, a graph break
def recompute_in_backward(part: Callable[..., tuple[torch.Tensor, ...]], inputs: Sequence[torch.Tensor],
                          modules: Sequence[nn.Module]) -> tuple[torch.Tensor, ...]:
    """``part(*inputs)`` through torch.utils.checkpoint: kept are its inputs, not what happens inside."""

    def context() -> tuple[contextlib.AbstractContextManager[None], contextlib.AbstractContextManager[None]]:
        # the recomputation must see the forward's weights and leave BatchNorm statistics as it found them
        return recompute_contexts(modules)

    if torch.jit.is_tracing():  # a trace records the forward's ops, which replay without checkpointing
        return part(*inputs)  # (through checkpoint, its sanity check failed: "Graphs differed across invocations")
    try:
        return checkpoint(part, *inputs, use_reentrant=False, context_fn=context)
    except RuntimeError as exc:
        refusal = checkpoint_refusal(exc, "the layers recomputed in backward")
        if refusal is None:
            raise
        raise refusal from None


def copies_inputs(module: nn.Module, inputs: Iterable[str], shared: Iterable[str]) -> bool:
    """Whether a layer must get copies of its inputs: an in-place layer must not overwrite a
    value that someone else still reads (``shared``, see ``shared_values``)."""
    keep = set(shared)
    return bool(getattr(module, "inplace", False)) and any(v in keep for v in inputs)


# ---- from the plan (read at build and export time; torch-free, never inlined) -----


def region_data(op: Any, groups: Mapping[str, Any], given: Iterable[str] = ()) -> dict[str, Any]:
    """The plain data of a plan's ``RegionOp`` (``groups``: the plan's body plans by key;
    ``given``: values the caller passes in, see :func:`caller_values`)."""
    from .checkpointing import region_cuts

    caller = set(given)
    pieces = [_pieces(s, groups) for s in op.steps]
    return {"id": op.id, "steps": [_step_data(s, groups) for s in op.steps], "inputs": list(op.inputs),
            "outputs": list(op.outputs), "side": list(op.side), "free": list(op.free),
            "given": [v for v in op.inputs if v in caller],
            "cuts": [list(c) for c in region_cuts(pieces)]}


def _pieces(step: Any, groups: Mapping[str, Any]) -> list[int]:
    """``checkpointing.piece_weights`` of a plan step (a Repeat's copies weigh its body's steps)."""
    from .checkpointing import body_weight, piece_weights

    if step.kind == "coupling":
        return [1]
    body = None
    if step.type in ("Group", "Repeat"):
        keys = sorted(set(step.bodies.values()))
        plan = groups.get(keys[0]) if len(keys) == 1 else None
        region = next((op for op in plan.ops if op.kind == "region"), None) if plan is not None else None
        if plan is not None and region is not None:
            body = body_weight(_pieces(s, plan.groups) for s in region.steps)
    return piece_weights(step.type, int(step.params.get("times", 1) or 1), body)


def caller_values(plan: Any) -> set[str]:
    """The values of a top-level plan that are the model's forward arguments (the caller's)."""
    return {op.output for op in plan.inputs}


def _step_data(step: Any, groups: Mapping[str, Any]) -> dict[str, Any]:
    if step.kind == "coupling":
        return {"kind": "coupling", "a": step.a, "b": list(step.b), "output": step.output, "sign": int(step.sign),
                "f": step.f, "body": [{"module": n.module, "inputs": list(n.inputs), "outputs": list(n.outputs)}
                                      for n in step.body]}
    from .regions import layout_only

    data: dict[str, Any] = {"kind": "node", "type": step.type, "module": step.module,
                            "inputs": list(step.inputs), "outputs": list(step.outputs)}
    if layout_only(step.type):
        data["layout_only"] = True
    if step.type in ("AdditiveCoupling", "AffineCoupling"):
        data["channels"] = int(step.in_shapes[0][0])
    elif step.type in ("Group", "Repeat"):
        if step.type == "Repeat":
            data["times"] = int(step.params.get("times", 1))
        keys = sorted(set(step.bodies.values()))
        if len(keys) != 1:
            raise ValueError(f"{step.node} ({step.type}): expected one group body, found {len(keys)}; "
                             "check the node's group parameter")
        data["body"] = body_data(groups[keys[0]])
    return data


def body_data(plan: Any) -> dict[str, Any]:
    """An invertible group body's region with its inputs and outputs by index (to splice it)."""
    region = next(op for op in plan.ops if op.kind == "region")
    return {"inputs": {op.output: op.index for op in plan.inputs},
            "outputs": {op.input: op.index for op in plan.outputs},
            "steps": [_step_data(s, plan.groups) for s in region.steps]}


def inverse_positions(plan: Any) -> tuple[list[int], list[int]]:
    """(output_at, input_at) of :func:`invert_region` for an invertible body plan."""
    region = next(op for op in plan.ops if op.kind == "region")
    outs = sorted(plan.outputs, key=lambda o: o.index)
    ins = sorted(plan.inputs, key=lambda o: o.index)
    return [list(region.outputs).index(o.input) for o in outs], [list(region.inputs).index(o.output) for o in ins]


def executed_ops(plan: Any) -> list[Any]:
    """The ops that run, in order: layers and regions."""
    return [op for op in plan.ops if op.kind in ("node", "region")]


def plan_segments(plan: Any) -> list[tuple[int, int, list[str], list[str]]]:
    """:func:`checkpoint_segments` of a plan (indices into :func:`executed_ops`)."""
    ops = [(list(op.inputs), list(op.outputs), op.kind == "node") for op in executed_ops(plan)]
    return checkpoint_segments(ops, [op.input for op in plan.outputs])


def released_after(ops: Sequence[tuple[Sequence[str], Sequence[str]]], keep: Iterable[str]) -> list[tuple[str, ...]]:
    """Per op (its inputs, its outputs): the values nothing after it reads, its inputs read for
    the last time and its outputs read by none, except ``keep`` (the results). A run drops
    them then, so forward holds what autograd saved and what is still to be read, as a
    forward written by hand does, not every value until it returns."""
    last: dict[str, int] = {}
    for i, (ins, outs) in enumerate(ops):
        for v in outs:
            last.setdefault(v, i)
        for v in ins:
            last[v] = i
    held = set(keep)
    drops: list[list[str]] = [[] for _ in ops]
    for v, i in last.items():
        if v not in held:
            drops[i].append(v)
    return [tuple(d) for d in drops]


def _is_view(op: Any) -> bool:
    """Whether a node op's outputs may be views of its input (a Reshape, Flatten or Split, a
    Permute of kind axes): writing into one writes into its input."""
    return op.kind == "node" and (op.type in ("Flatten", "Reshape", "Split") or (
        op.type == "Permute" and op.params.get("kind") == "axes"))


def shared_values(plan: Any) -> set[str]:
    """Values an in-place layer must not overwrite: forward arguments, what a region keeps
    (outputs, side inputs) and anything read more than once, and every view of such a value, or
    of a value whose other views are read (writing into a view writes into what it views)."""
    readers: dict[str, int] = {}
    viewed: dict[str, str] = {}  # a view's output -> the value it views
    for op in plan.ops:
        if _is_view(op) and op.inputs:
            viewed.update((v, op.inputs[0]) for v in op.outputs)
            continue  # (a view reading its input is no reader of the memory)
        reads = op.inputs if op.kind in ("node", "region") else (op.input,) if op.kind == "output" else ()
        for v in reads:
            readers[v] = readers.get(v, 0) + 1
    kept = {v for op in plan.ops if op.kind == "region" for v in op.outputs + op.side}
    shared = kept | {op.output for op in plan.inputs} | {v for v, n in readers.items() if n > 1}
    if not viewed:
        return shared

    def root(v: str) -> str:
        while v in viewed:
            v = viewed[v]
        return v

    family_reads: dict[str, int] = {}
    for v, n in readers.items():
        family_reads[root(v)] = family_reads.get(root(v), 0) + n
    roots = {root(v) for v in shared} | {r for r, n in family_reads.items() if n > 1}
    return shared | {v for v in viewed if root(v) in roots} | roots
