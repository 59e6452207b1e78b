"""Reversible regions in exported code: the plan's region data, assembled by the inlined ``assembly``.

The compiler turns each ``RegionOp`` into plain data (``assembly.region_data``)
and hands it to ``assembly.build_region``. The export writes the same data as a
literal and calls the same function, inlined verbatim next to the runtime, so
the exported model assembles the very same ``runtime.Region`` objects; there is
no second copy of the region-building logic to drift.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from revstudio.compiler import assembly

from . import model_api
from .namespace import Namespace

ASSEMBLY = "revstudio.compiler.assembly"
_WIDTH = 110  # the project's line length: longer literals are written one item per line


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
    """Writes region construction (``__init__``), region calls (``forward``) and group inverses."""

    def __init__(self, writer: Any) -> None:
        self.w = writer
        self.extras: dict[int, ClassExtras] = {}  # id(plan) -> extras
        self.stream: str | None = None  # the inlined ``assembly.stream_dtype``, once a region needs it

    # ---- per class --------------------------------------------------
    def extras_for(self, plan: Any) -> ClassExtras:
        if id(plan) not in self.extras:
            taken = {op.module for op in plan.node_ops()}
            self.extras[id(plan)] = ClassExtras(Namespace(taken=taken))
        return self.extras[id(plan)]

    def method(self, plan: Any, kind: str, node: str) -> str:
        """The name of a helper method (a checkpoint ``part``) of ``plan``'s class."""
        ex = self.extras_for(plan)
        key = (kind, node)
        if key not in ex.methods:
            ex.methods[key] = "_" + ex.names.name(f"{kind}_{node}", key=key, fallback=kind)
        return ex.methods[key]

    def prepare(self, plan: Any) -> None:
        """The ``__init__`` lines that build the class's regions."""
        ex = self.extras_for(plan)
        for op in plan.ops:
            if op.kind == "region":
                ex.init_lines += self._region_lines(plan, op)

    def init_lines(self, plan: Any) -> list[str]:
        return self.extras_for(plan).init_lines

    def helper_methods(self, plan: Any) -> list[str]:
        return self.extras_for(plan).method_lines

    # ---- region construction --------------------------------------------
    def _region_lines(self, plan: Any, op: Any) -> list[str]:
        ex = self.extras_for(plan)
        attr = "_" + ex.names.name(str(op.id), key=("region", op.id), fallback="region")
        ex.regions[op.id] = attr
        try:
            given = assembly.caller_values(plan) if plan is self.w.plan else ()
            data = assembly.region_data(op, plan.groups, given)
        except ValueError as exc:
            from . import CodegenError

            raise CodegenError(f"region {op.id}: {exc}") from None
        build = self.w.inliner.require_name(ASSEMBLY, "build_region")
        self.stream = self.w.inliner.require_name(ASSEMBLY, "stream_dtype")
        head = f"        self.{attr} = {build}(self, "
        return [f"        # reversible region {comment(op.id)}: nodes {comment(', '.join(op.nodes))}",
                head + literal(data, 8) + ")"]

    # ---- forward and inverse -------------------------------------------
    def emit(self, plan: Any, op: Any, value: Callable[[str], str]) -> list[str]:
        """``(a, b) = self._region_x([in0, in1], self._mode, dtype, stream)`` for a region op."""
        attr = self.extras_for(plan).regions[op.id]
        ins = [value(v) for v in op.inputs]
        outs = [value(v) for v in op.outputs]
        target = f"({outs[0]},)" if len(outs) == 1 else ", ".join(outs)
        mode = "self._mode"
        if plan is not self.w.plan and self._rearranges(plan, op):  # as the compiled module decides it
            mode = f"{self.w.inliner.require_name(ASSEMBLY, 'nested_mode')}(self.{attr}, self._mode)"
        return [f"        {target} = self.{attr}([{', '.join(ins)}], {mode}, *region_dtypes(self, {ins[0]}))"]

    def _rearranges(self, plan: Any, op: Any) -> bool:
        """Whether the compiled region of ``op`` only rearranges values (unknown: assume it may)."""
        instance = self.w._instance_of(plan)
        found = [r for r in getattr(instance, "_regions", ()) if r.id == op.id]
        return bool(found[0].rearranges) if found else True

    def inverse_method(self, plan: Any, single: bool = False) -> list[str]:
        """``inverse(*outputs)`` of an invertible group body or model: the inlined
        ``assembly.invert_region``. ``single``: like the model's forward, one input comes back
        as a tensor rather than a 1-tuple."""
        region_op = next(op for op in plan.ops if op.kind == "region")
        attr = self.extras_for(plan).regions[region_op.id]
        invert = self.w.inliner.require_name(ASSEMBLY, "invert_region")
        output_at, input_at = assembly.inverse_positions(plan)
        if single:  # the model's: named after its Output nodes, checked as the compiled module checks
            local = self.w.names.child()
            outs = sorted(plan.outputs, key=lambda o: o.index)
            args = [local.name(op.name, key=("output", op.index), fallback="y") for op in outs]
            check = model_api.output_check(self.w, plan, args)
        else:
            args, check = [f"y{i}" for i in range(len(output_at))], []
        ys = f"({', '.join(args)}{',' if len(args) == 1 else ''})"
        call = f"{invert}(self.{attr}, {ys}, {output_at!r}, {input_at!r}, region_dtypes(self, {args[0]})[0])"
        params = ", ".join(a + ": torch.Tensor" for a in args)
        if single and len(input_at) == 1:
            return ["", f"    def inverse(self, {params}) -> torch.Tensor:",
                    '        """The input rebuilt from the outputs (the model is invertible end to end)."""',
                    *check, f"        return {call}[0]"]
        what = "the model is invertible end to end" if single else "this group is invertible"
        return ["", f"    def inverse(self, {params}) -> tuple[torch.Tensor, ...]:",
                f'        """The inputs rebuilt from the outputs ({what})."""',
                *check, f"        return {call}"]


def literal(value: Any, indent: int) -> str:
    """Plain data (str, int, bool, lists, dicts) as a Python literal; strings go through
    ``ascii`` so no project text becomes code. A container of containers that does not
    fit on its line gets one item per line, so each step reads as one line."""
    flat = _flat(value)
    if indent + len(flat) <= _WIDTH or not _holds_containers(value):
        return flat
    pad = " " * (indent + 4)
    if isinstance(value, dict):
        items = [f"{pad}{_flat(k)}: {literal(v, indent + 4)}," for k, v in value.items()]
        return "{\n" + "\n".join(items) + "\n" + " " * indent + "}"
    items = [f"{pad}{literal(v, indent + 4)}," for v in value]
    return "[\n" + "\n".join(items) + "\n" + " " * indent + "]"


def _holds_containers(value: Any) -> bool:
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
    return any(isinstance(v, dict) or (isinstance(v, (list, tuple)) and _holds_containers(v)) for v in items)


def _flat(value: Any) -> str:
    if isinstance(value, str):
        return ascii(value)
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_flat(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_flat(k)}: {_flat(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"region data holds a {type(value).__name__}, which is not plain data")


STREAM_HELPER = '''def region_dtypes(module: nn.Module, x: torch.Tensor) -> tuple[torch.dtype, torch.dtype | str | None]:
    """(compute dtype, streams) of a reversible region, picked as revstudio.compile does:
    layers compute in the dtype of the weights, the streams are kept as ``{stream}`` chooses."""
    dtype = next((p.dtype for p in module.parameters() if p.is_floating_point()), x.dtype)
    return dtype, {stream}(dtype, x.device)
'''
