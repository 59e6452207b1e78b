"""Sub-graphs: Group and Repeat nodes and the GroupInput/GroupOutput boundary of a body.

A Group node's ports are its body's GroupInput/GroupOutput ``port`` names in node
order. Repeat runs ``times`` copies of the body in sequence, so the body's
outputs must match its inputs in number and shape (output i feeds input i).
"""
from __future__ import annotations

from revstudio.core.params import GroupRef, Int, Str
from revstudio.core.spec import BuildContext, InferContext, NodeSpec, ShapeT

from ._common import ModuleRecipe, builder, fmt, problem, recipe
from ._groups import PORT_PATTERN, check_body, infer_body, ports_rule


def _run_body(kind: str, ctx: InferContext) -> tuple[dict[str, ShapeT], int, list[str], list[str]]:
    ins, outs = check_body(kind, ctx, "group")
    shapes = {port: ctx.input(port) for port in ins}
    result = infer_body(kind, ctx, "group", shapes)
    outputs = {}
    for port in outs:
        if result.outputs.get(port) is None:
            raise problem(kind, ctx, f"group {ctx.params['group']!r} gives no shape for its output {port!r}; "
                                     "fix the errors inside the group", port)
        outputs[port] = tuple(result.outputs[port])
    return outputs, result.parameters, ins, outs


def _group_infer(ctx: InferContext) -> dict[str, ShapeT]:
    return _run_body("Group", ctx)[0]


GROUP = NodeSpec(
    type_id="Group", category="Groups",
    shape_rule="its ports and shapes are its body's: the GroupInput nodes' shapes are what is wired in",
    memory_note="what the body's layers keep; a body of invertible steps joins the reversible region around it, "
                "which keeps nothing for them.",
    examples=(({"group": "block"}, ((16, 32),)),),
    help="A reusable sub-graph from this project's groups; its ports are the group's "
         "GroupInput and GroupOutput nodes. Open it to edit the inside on its own tab.",
    params={"group": GroupRef(default="", help="Which group this node runs.")},
    inputs=ports_rule("GroupInput"), outputs=ports_rule("GroupOutput"),
    infer=_group_infer, count_params=lambda ctx: _run_body("Group", ctx)[1],
    build=builder("Group", lambda ctx: recipe("composite", "GroupCall", bodies={"body": ctx.params["group"]})),
    key_params=("group",),
)


def _repeat_run(ctx: InferContext) -> tuple[dict[str, ShapeT], int]:
    outputs, params, ins, outs = _run_body("Repeat", ctx)
    name = ctx.params["group"]
    if len(ins) != len(outs):
        raise problem("Repeat", ctx, f"group {name!r} has {len(ins)} inputs but {len(outs)} outputs; "
                                     "a repeated body must give back as many values as it takes")
    for port_in, port_out in zip(ins, outs):
        if outputs[port_out] != ctx.input(port_in):
            raise problem("Repeat", ctx, f"group {name!r} turns {port_in} ({fmt(ctx.input(port_in))}) into "
                                         f"{port_out} {fmt(outputs[port_out])}; each output must keep the "
                                         "shape of the input it feeds in the next copy", port_in)
    return outputs, params * ctx.params["times"]


def _repeat_recipe(ctx: BuildContext) -> ModuleRecipe:
    name = ctx.params["group"]
    return recipe("composite", "Repeat", bodies={"blocks": (name,) * ctx.params["times"]})


REPEAT = NodeSpec(
    type_id="Repeat", category="Groups",
    shape_rule="each copy's output must have its input's shape (the copies are chained)",
    memory_note="what the body's layers keep, once per copy; copies of invertible steps join the reversible "
                "region around them, which keeps nothing for them.",
    examples=(({"group": "block", "times": 4}, ((16, 32),)),),
    help="Runs `times` copies of a group one after another, each with its own weights "
         "(e.g. a stack of RevNet blocks). The group's outputs must match its inputs.",
    params={
        "group": GroupRef(default="", help="Which group to repeat."),
        "times": Int(default=2, min=1, max=256, help="Number of copies in sequence."),
    },
    inputs=ports_rule("GroupInput"), outputs=ports_rule("GroupOutput"),
    infer=lambda ctx: _repeat_run(ctx)[0], count_params=lambda ctx: _repeat_run(ctx)[1],
    build=builder("Repeat", _repeat_recipe),
    key_params=("group", "times"),
)


def _check_port(kind: str, ctx: InferContext) -> None:
    port = ctx.params["port"]
    if not PORT_PATTERN.match(port):
        raise problem(kind, ctx, f"port {port!r} is not a usable port name; use letters, digits and _ "
                                 "(e.g. in0)")


def _group_input_infer(ctx: InferContext) -> dict[str, ShapeT]:
    _check_port("GroupInput", ctx)
    # The shape pass of a body feeds the value arriving at the Group node's port here.
    known = [s for s in ctx.inputs.values() if s is not None]
    if len(known) != 1:
        raise problem("GroupInput", ctx, "gets its shape from the node that uses this group; "
                                         "it has none outside a Group, Repeat or coupling")
    return {"out": tuple(known[0])}


def _group_output_infer(ctx: InferContext) -> dict[str, ShapeT]:
    _check_port("GroupOutput", ctx)
    ctx.input("in")
    return {}


def _identity(ctx: BuildContext) -> ModuleRecipe:
    return recipe("structure", "Identity")


GROUP_INPUT = NodeSpec(
    type_id="GroupInput", category="Groups",
    shape_rule="the shape wired into the Group node's port of this name",
    memory_note="nothing.",
    layout_only=True,
    help="Inside a group: a value coming in from outside. Its port name becomes an input port "
         "of the Group node.",
    params={"port": Str(default="in", max_length=32, help="Name of the matching port on the Group node.")},
    inputs=(), outputs=("out",),
    infer=_group_input_infer, count_params=lambda ctx: 0, build=builder("GroupInput", _identity),
    invertible=True, key_params=("port",),
)

GROUP_OUTPUT = NodeSpec(
    type_id="GroupOutput", category="Groups",
    shape_rule="hands its input to the Group node's port of this name",
    memory_note="nothing.",
    layout_only=True,
    help="Inside a group: a result going out. Its port name becomes an output port of the Group node.",
    params={"port": Str(default="out", max_length=32, help="Name of the matching port on the Group node.")},
    inputs=("in",), outputs=(),
    infer=_group_output_infer, count_params=lambda ctx: 0, build=builder("GroupOutput", _identity),
    invertible=True, key_params=("port",),
)

SPECS = (GROUP, REPEAT, GROUP_INPUT, GROUP_OUTPUT)
