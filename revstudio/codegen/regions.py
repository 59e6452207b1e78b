"""Reversible regions in exported code: the same ``runtime.Region`` objects the compiler builds.

For each ``RegionOp`` the compiler turns the plan's steps into runtime steps over
numbered slots (``compiler.module._Executor._region``); this writer walks the
same steps in the same order, numbering slots the same way, and writes the
constructor calls instead of making the objects. Coupling functions become
methods of the class that owns their layers, so ``copy.deepcopy`` stays correct.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .namespace import Namespace

if TYPE_CHECKING:  # pragma: no cover
    from .emit import _Writer


def comment(text: str) -> str:
    return ascii(str(text))[1:-1]


@dataclass
class ClassExtras:
    """Per generated class: region attributes, helper methods and their names."""

    names: Namespace
    regions: dict[str, str] = field(default_factory=dict)        # region id -> attribute
    methods: dict[tuple[str, str], str] = field(default_factory=dict)  # (kind, node) -> method name
    method_lines: list[str] = field(default_factory=list)
    init_lines: list[str] = field(default_factory=list)
    runs_parts: bool = False  # the class has ``_run_part`` (checkpoint segments)


class RegionWriter:
    """Writes region construction (``__init__``), region calls (``forward``) and F methods."""

    def __init__(self, writer: _Writer) -> None:
        self.w = writer
        self.extras: dict[int, ClassExtras] = {}  # id(plan) -> extras
        self.used_runtime = False

    # ---- per class --------------------------------------------------
    def extras_for(self, plan: Any) -> ClassExtras:
        if id(plan) not in self.extras:
            taken = {op.module for op in plan.node_ops()}
            self.extras[id(plan)] = ClassExtras(Namespace(taken=taken))
        return self.extras[id(plan)]

    def method(self, plan: Any, kind: str, node: str) -> str:
        """The name of a helper method (``f``/``g`` of a coupling) of ``plan``'s class."""
        ex = self.extras_for(plan)
        key = (kind, node)
        if key not in ex.methods:
            ex.methods[key] = "_" + ex.names.name(f"{kind}_{node}", key=key, fallback=kind)
        return ex.methods[key]

    def prepare(self, plan: Any, instance: Any) -> None:
        """Everything a class needs for its regions: helper methods first, then the regions."""
        ex = self.extras_for(plan)
        for op in plan.ops:
            if op.kind == "region":
                for step in op.steps:
                    self._methods_for_step(plan, step)
        for op in plan.ops:
            if op.kind == "region":
                ex.init_lines += self._region_lines(plan, instance, op)

    def init_lines(self, plan: Any) -> list[str]:
        return self.extras_for(plan).init_lines

    def helper_methods(self, plan: Any) -> list[str]:
        return self.extras_for(plan).method_lines

    # ---- F methods -----------------------------------------------------
    def _methods_for_step(self, plan: Any, step: Any) -> None:
        ex = self.extras_for(plan)
        if step.kind == "coupling":
            name = self.method(plan, "f", step.node)
            local = Namespace(taken={"self"})
            values: dict[str, str] = {}

            def value(v: str) -> str:
                if v not in values:
                    values[v] = local.name(v, key=v)
                return values[v]

            args = ", ".join(f"{value(b)}: torch.Tensor" for b in step.b)
            lines = ["", f"    def {name}(self, {args}) -> torch.Tensor:",
                     f'        """F of the coupling at merge {_doc(step.node)}: its result is added to the stream."""']
            for inner in step.body:
                lines += self.w.emit_node(inner, value)
            lines.append(f"        return {value(step.f)}")
            ex.method_lines += lines
        elif step.kind == "node" and step.type == "AdditiveCoupling":
            for part in ("f", "g"):
                name = self.method(plan, part, step.node)
                ex.method_lines += [
                    "",
                    f"    def {name}(self, *xs: torch.Tensor) -> torch.Tensor:",
                    f"        return self.{step.module}.{part}(*xs)[0]",
                ]

    # ---- region construction --------------------------------------------
    def _region_lines(self, plan: Any, instance: Any, op: Any) -> list[str]:
        ex = self.extras_for(plan)
        attr = "_" + ex.names.name(str(op.id), key=("region", op.id), fallback="region")
        ex.regions[op.id] = attr
        slots: dict[str, int] = {}

        def slot(v: str) -> int:
            return slots.setdefault(v, len(slots))

        steps: list[str] = []
        for step in op.steps:
            self._steps(step, slot, steps, plan, instance, "self")
        region = self.w.inliner.require_name("revstudio.compiler.runtime", "Region")
        self.used_runtime = True
        names = ", ".join(f"{n} {comment(v)}" for v, n in sorted(slots.items(), key=lambda kv: kv[1])
                          if "#" not in v and "/" not in v)
        lines = [f"        # reversible region {comment(op.id)}: nodes {comment(', '.join(op.nodes))}",
                 f"        # slots: {names}"]
        lines.append(f"        self.{attr} = {region}(")
        lines.append(f"            {op.id!r},")
        lines.append("            [")
        lines += [f"                {s}" for s in steps]
        lines.append("            ],")
        lines.append(f"            inputs={[slot(v) for v in op.inputs]!r},")
        lines.append(f"            outputs={[slot(v) for v in op.outputs]!r},")
        lines.append(f"            side={[slot(v) for v in op.side]!r},")
        lines.append(f"            free={[slot(v) for v in op.free]!r},")
        lines.append("        )")
        return lines

    def _steps(self, step: Any, slot: Callable[[str], int], out: list[str], plan: Any, owner: Any,
               owner_ref: str) -> None:
        """Mirror of the compiler's ``_Executor._steps`` writing source instead of objects."""
        rt = "revstudio.compiler.runtime"
        if step.kind == "coupling":
            coupling = self.w.inliner.require_name(rt, "Coupling")
            fn = f"{owner_ref}.{self.method(plan, 'f', step.node)}"
            mods = ", ".join(f"{owner_ref}.{n.module}" for n in step.body)
            sign = step.sign
            out.append(f"{coupling}({slot(step.a)}, {[slot(b) for b in step.b]!r}, {slot(step.output)}, {sign}, "
                       f"{fn}, [{mods}]),  # merge {comment(step.node)}")
            return
        module = getattr(owner, step.module)
        ref = f"{owner_ref}.{step.module}"
        ins, outs = [slot(v) for v in step.inputs], [slot(v) for v in step.outputs]
        if step.type == "AdditiveCoupling" and hasattr(module, "f"):
            self._additive(step, module, ins, outs, slot, out, plan, owner_ref)
        elif step.type in ("Group", "Repeat"):
            blocks = list(module.blocks) if step.type == "Repeat" else [module.body]
            refs = ([f"{ref}.blocks[{i}]" for i in range(len(blocks))] if step.type == "Repeat"
                    else [f"{ref}.body"])
            values = ins
            for i, (block, block_ref) in enumerate(zip(blocks, refs)):
                last = i == len(blocks) - 1
                nxt = outs if last else [slot(f"{step.module}#{i}:{k}") for k in range(len(outs))]
                self._inline(block, block_ref, values, nxt, slot, out, f"{step.module}#{i}")
                values = nxt
        elif step.type == "Split" and hasattr(module, "sizes"):
            # plain slicing steps, as the compiler makes them (cheap backward)
            slice_ = self.w.inliner.require_name(rt, "Slice")
            out.append(f"{slice_}({ins[0]}, {outs!r}, {list(module.sizes)!r}, {int(module.dim) + 1}),"
                       f"  # Split {comment(step.node)}")
        elif step.type == "Concat" and hasattr(module, "sizes"):
            cat = self.w.inliner.require_name(rt, "Cat")
            out.append(f"{cat}({ins!r}, {outs[0]}, {list(module.sizes)!r}, {int(module.dim) + 1}),"
                       f"  # Concat {comment(step.node)}")
        else:
            invertible = self.w.inliner.require_name(rt, "Invertible")
            cast = any(p.is_floating_point() for p in list(module.parameters()) + list(module.buffers()))
            out.append(f"{invertible}({ref}, {ins!r}, {outs!r}, {cast}),  # {step.type} {comment(step.node)}")

    def _inline(self, block: Any, block_ref: str, ins: list[int], outs: list[int], slot: Callable[[str], int],
                out: list[str], prefix: str) -> None:
        """A group body's steps spliced into the enclosing region (as the compiler does)."""
        key = self.w.body_key(block)
        if key is None:
            from . import CodegenError

            raise CodegenError(f"{prefix}: a group body inside a region was not built from a plan")
        plan = self.w.plan.groups[key]
        self.w.body_class(key, block)  # its methods must exist
        mapping = {op.output: ins[op.index] for op in plan.inputs}
        mapping.update({op.input: outs[op.index] for op in plan.outputs})

        def inner(v: str) -> int:
            if v in mapping:
                return mapping[v]
            return slot(f"{prefix}/{v}")

        region = next(op for op in plan.ops if op.kind == "region")
        for step in region.steps:
            self._steps(step, inner, out, plan, block, block_ref)

    def _additive(self, op: Any, module: Any, ins: list[int], outs: list[int], slot: Callable[[str], int],
                  out: list[str], plan: Any, owner_ref: str) -> None:
        rt = "revstudio.compiler.runtime"
        channels = op.in_shapes[0][0]
        split = int(module.split)
        x1, x2, y1, y2 = (slot(f"{op.module}#{k}") for k in ("x1", "x2", "y1", "y2"))
        sizes = [split, channels - split]
        ref = f"{owner_ref}.{op.module}"
        slice_, coupling, cat = (self.w.inliner.require_name(rt, n) for n in ("Slice", "Coupling", "Cat"))
        out.append(f"{slice_}({ins[0]}, [{x1}, {x2}], {sizes!r}),  # AdditiveCoupling {comment(op.node)}: x1, x2")
        out.append(f"{coupling}({x1}, [{x2}], {y1}, 1, {owner_ref}.{self.method(plan, 'f', op.node)}, [{ref}.f]),"
                   "  # y1 = x1 + F(x2)")
        if module.g is not None:
            out.append(f"{coupling}({x2}, [{y1}], {y2}, 1, {owner_ref}.{self.method(plan, 'g', op.node)}, "
                       f"[{ref}.g]),  # y2 = x2 + G(y1)")
        else:
            y2 = x2
        out.append(f"{cat}([{y1}, {y2}], {outs[0]}, {sizes!r}),  # output of {comment(op.node)}")

    # ---- forward ---------------------------------------------------------
    def emit(self, plan: Any, op: Any, value: Callable[[str], str]) -> list[str]:
        """``(a, b) = self._region_x([in0, in1], self._mode, dtype, stream)`` for a region op."""
        attr = self.extras_for(plan).regions[op.id]
        ins = [value(v) for v in op.inputs]
        outs = [value(v) for v in op.outputs]
        target = f"({outs[0]},)" if len(outs) == 1 else ", ".join(outs)
        return [f"        {target} = self.{attr}([{', '.join(ins)}], self._mode, *region_dtypes(self, {ins[0]}))"]


def _doc(text: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.,:;()+=/-]+", "_", str(text))[:60]


STREAM_HELPER = '''def region_dtypes(module: nn.Module, x: torch.Tensor) -> tuple[torch.dtype, torch.dtype | None]:
    """(compute dtype, stream dtype) of a reversible region, picked as revstudio.compile does.

    Layers compute in the dtype of the weights; the residual streams of float32 (and
    narrower) models are kept in float64, so rebuilding activations in backward does
    not drift with depth. MPS has no float64.
    """
    dtype = next((p.dtype for p in module.parameters() if p.is_floating_point()), x.dtype)
    if x.device.type == "mps" or dtype not in (torch.float32, torch.float16, torch.bfloat16):
        return dtype, None
    return dtype, torch.float64
'''
