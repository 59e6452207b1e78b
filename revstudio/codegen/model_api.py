"""What an exported class offers beside ``forward``, as ``revstudio.compile``'s module offers it.

``logdet`` (the flow layers' log-determinant; None on a model without them), ``inverse``
(a model that is not invertible end to end raises the compiled module's reason), the checks
of what ``forward`` and ``inverse`` are handed (``runtime_boundary``, inlined, so a bad batch
gets the compiled module's words rather than an error from deep inside a layer) and the
weights' number type (float64 where an Input node declares it, as compiled).
"""
from __future__ import annotations

import re
import textwrap
from typing import Any

from . import CodegenError

ASSEMBLY = "revstudio.compiler.assembly"
BOUNDARY = "revstudio.compiler.runtime_boundary"
EXPORT = "revstudio.compiler.runtime_export"


def logdet_property(writer: Any, plan: Any, instance: Any, is_model: bool) -> list[str]:
    """``logdet``: the compiled executor's flow parts (layers and regions), by attribute;
    on a model without flow layers None, as the compiled module's."""
    flows = {id(part) for part in getattr(instance, "_flow_parts", ())}
    if not flows:
        if not is_model:
            return []
        return ["", "    @property",
                "    def logdet(self) -> None:",
                '        """None: the network has no flow layers (AffineCoupling, ActNorm, InvConv1x1)."""',
                "        return None"]
    regions = iter(getattr(instance, "_regions", ()))
    attrs = []
    for op in plan.ops:
        if op.kind == "node":
            part, attr = getattr(instance, op.module), op.module
        elif op.kind == "region":
            part, attr = next(regions), writer.regions.extras_for(plan).regions[op.id]
        else:
            continue
        if id(part) in flows:
            attrs.append(f"self.{attr}")
    total = writer.inliner.require_name(ASSEMBLY, "total_logdet")
    summed = f"{total}([{', '.join(attrs)}])"
    if not is_model:  # (a body a caller's region runs layer by layer: its layers' sum, assembly.body_logdet)
        from revstudio.compiler.assembly import is_flow  # (torch: only where a model is exported)

        layers = [f"self.{op.module}" for op in plan.node_ops() if is_flow(getattr(instance, op.module))]
        body = writer.inliner.require_name(ASSEMBLY, "body_logdet")
        summed = f"{body}([{', '.join(attrs)}], [{', '.join(layers)}])"
    said = ("of the last forward per sample (flow layers), differentiable in every mode" if is_model else
            "per sample of this group's flow layers in the last forward that ran them (train with the model's)")
    lines = ["", "    @property",
             "    def logdet(self) -> torch.Tensor | None:",
             f'        """log|det J| {said}."""',
             f"        return {summed}"]
    if is_model:  # (a group body's logdet is read by its model's, while torch.export traces that too)
        refuse = writer.inliner.require_name(EXPORT, "refuse_untraced_logdet")
        lines.insert(-1, f"        {refuse}(self)")
        wrapper = writer.inliner.require_name(EXPORT, "WithLogdet")
        lines += ["", "    def with_logdet(self) -> nn.Module:",
                  '        """This model (the same layers) as a module whose forward returns ``(outputs, logdet)``:',
                  "        what torch.export records of the log-determinant, which ``model.logdet`` keeps as an",
                  "        attribute: ``z, logdet = torch.export.export(model.with_logdet(), (x,)).module()(x)``.\"\"\"",
                  f"        return {wrapper}(self)"]
    return lines


def weights_dtype(dtype: Any) -> list[str]:
    """The end of the model's ``__init__`` where an Input node declares float64: revstudio.compile
    builds each layer in float32 (the same random draws) and then moves it to the model's type."""
    name = str(dtype).rpartition(".")[2]
    if name == "float32":
        return []
    if name not in ("float64", "float16", "bfloat16"):
        raise CodegenError(f"the compiled model's number type {dtype} has no exported form")
    return [f"        self.to(torch.{name})  # an Input node declares {name}: the weights are {name}, as revstudio.compile's"]


def not_invertible(plan: Any) -> list[str]:
    """The model's ``inverse`` where the graph is not one region from its Inputs to its
    Outputs: it raises the compiled module's reason (project text only through ``ascii``)."""
    regions = ", ".join(r.id for r in plan.regions.regions) or "none"
    reason = (f"{plan.name}: the model is not invertible end to end (regions: {regions}); every "
              "node between the Inputs and the Outputs must be in one reversible region, see "
              "'revstudio check' for the regions and why the other nodes are not in one")
    pieces = textwrap.wrap(reason, 90, expand_tabs=False, replace_whitespace=False, drop_whitespace=False,
                           break_long_words=False, break_on_hyphens=False)
    return ["", "    def inverse(self, *outputs: torch.Tensor) -> torch.Tensor:",
            '        """Not available: the model is not invertible end to end (the reason says why)."""',
            "        raise NotImplementedError(",
            *[f"            {ascii(piece)}" for piece in pieces[:-1]],
            f"            {ascii(pieces[-1])})"]


def input_check(writer: Any, plan: Any, args: list[str], body: list[str]) -> list[str]:
    """The first line of the model's ``forward``: each argument checked against its Input node
    (``INPUTS``) and the weights' number type and device; the sizes kept for :func:`guarded`."""
    ops = sorted(plan.inputs, key=lambda o: o.index)
    if not ops:
        return []
    check = writer.inliner.require_name(BOUNDARY, "check_batch")
    weights = writer.inliner.require_name(BOUNDARY, "weights_of")
    batch = ", ".join(f"{ascii(op.name)}: {arg}" for op, arg in zip(ops, args))
    sizes, _ = _guard_names(args, body)
    return [f"        {sizes} = {check}(INPUTS, {{{batch}}}, *{weights}(self))"]


def guarded(writer: Any, plan: Any, body: list[str], args: list[str], flow: bool = False) -> list[str]:
    """The model's ``forward`` body in a ``try``: where the layers fail (torch's words, "mat1 and
    mat2 shapes cannot be multiplied", name no node) on an input of other sizes than its Input
    node declares, the error names that input, as the compiled module's does. A ``flow`` model's
    body runs in ``logdet_put_back`` (``runtime_export``), so torch.export records no attribute."""
    if not plan.inputs:
        return body
    refused = writer.inliner.require_name(BOUNDARY, "sizes_refused")
    sizes, exc = _guard_names(args, body)
    if flow:  # (torch.export: the flow layers' logdet put back after its trace, see with_logdet)
        put_back = writer.inliner.require_name(EXPORT, "logdet_put_back")
        body = [f"        with {put_back}(self):", *[f"    {line}" if line else line for line in body]]
    return ["        try:", *[f"    {line}" if line else line for line in body],
            f"        except (RuntimeError, ValueError) as {exc}:  # (an RNN refuses another dtype with a ValueError)",
            f"            {refused}(INPUTS, {sizes}, {exc})",
            "            raise"]


def _guard_names(args: list[str], body: list[str]) -> tuple[str, str]:
    """``sizes``, ``exc``: names no parameter or line of the forward body uses."""
    taken = set(args) | set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", "\n".join(body)))

    def free(name: str) -> str:
        while name in taken:
            name += "_"
        return name

    return free("sizes"), free("exc")


def forward_head(writer: Any, plan: Any, signature: str, returns: str, args: list[str]) -> list[str]:
    """The model's ``def forward`` and its count check: each Input node's parameter defaults to
    None and extra tensors or names are taken (``*more``, ``**unknown``), so a call with
    another number of tensors (or a name forward does not take) is refused naming the Input
    nodes in order and their shapes, through ``model(...)`` and ``model.forward(...)`` alike
    (Python's own words name forward's parameters, not the Input nodes)."""
    if not plan.inputs:
        return [f"    def forward(self, {signature}) -> {returns}:"]
    params = ", ".join(f"{part} | None = None" for part in signature.split(", "))
    more, unknown = _rest_names(args)
    return [f"    def forward(self, {params}, *{more}: torch.Tensor,",
            f"                **{unknown}: torch.Tensor) -> {returns}:"]


def _rest_names(args: list[str]) -> tuple[str, str]:
    """``more``, ``unknown``: forward's catch-alls, named apart from the Input nodes' parameters."""
    def free(name: str) -> str:
        while name in args:
            name += "_"
        return name

    return free("more"), free("unknown")


def count_check(writer: Any, plan: Any, args: list[str]) -> list[str]:
    """The first lines of the model's ``forward`` (after its docstring): :func:`forward_head`'s
    count check, a few identity tests that torch.compile turns into guards."""
    if not plan.inputs:
        return []
    given = writer.inliner.require_name(BOUNDARY, "check_given")
    missing = " or ".join(f"{arg} is None" for arg in args)
    more, unknown = _rest_names(args)
    return [f"        if {more} or {unknown} or {missing}:",
            f"            {given}({ascii(plan.name)}, INPUTS, ({', '.join(args)},), {more}, {unknown}, {tuple(args)!r})"]


def output_check(writer: Any, plan: Any, args: list[str]) -> list[str]:
    """The first line of the model's ``inverse``: each argument checked against its Output node
    (its shape where known) and the weights' number type and device."""
    from revstudio.compiler.boundary import output_shapes

    shapes = output_shapes(plan)
    check = writer.inliner.require_name(BOUNDARY, "check_returned")
    weights = writer.inliner.require_name(BOUNDARY, "weights_of")
    ops = sorted(plan.outputs, key=lambda o: o.index)
    spec = ", ".join(f"{ascii(op.node)}: {_shape(shapes[op.node])}" for op in ops)
    given = ", ".join(f"{ascii(op.node)}: {arg}" for op, arg in zip(ops, args))
    return [f"        {check}({{{spec}}}, {{{given}}}, *{weights}(self)[::-1])"]


def _shape(shape: Any) -> str:
    return "None" if shape is None else repr(tuple(int(d) for d in shape))


def refuse_replicas(writer: Any) -> list[str]:
    """``_replicate_for_data_parallel`` of the model, and of a group class with regions of its own
    (used alone, a group body's regions hold its layers as well): nn.DataParallel is refused."""
    refuse = writer.inliner.require_name("revstudio.compiler.runtime", "refuse_replicas")
    return ["", "    def _replicate_for_data_parallel(self) -> nn.Module:",
            "        # nn.DataParallel's copy would run this one's layers in its regions",
            f"        return {refuse}(self)"]
