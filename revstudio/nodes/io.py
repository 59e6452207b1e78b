"""Where data enters and leaves a graph: Input and Output nodes.

Only Input carries a shape (without the batch dimension); every other shape in
the graph is inferred from it.
"""
from __future__ import annotations

from revstudio.core.params import Choice, Shape, Str
from revstudio.core.spec import BuildContext, InferContext, NodeSpec, ShapeT

from ._common import ModuleRecipe, builder, recipe


def _infer_input(ctx: InferContext) -> dict[str, ShapeT]:
    return {"out": tuple(ctx.params["shape"])}


def _infer_output(ctx: InferContext) -> dict[str, ShapeT]:
    ctx.input("in")  # an Output must be fed
    return {}


def _identity(ctx: BuildContext) -> ModuleRecipe:
    return recipe("structure", "Identity")


INPUT = NodeSpec(
    type_id="Input",
    shape_rule="the shape you give, without the batch axis; a sequence is (features, time): time is "
               "the last axis",
    memory_note="nothing: it is the data itself.",
    examples=(({"shape": [40, 100]}, ()),),
    layout_only=True,
    category="I/O",
    help="A model input: one tensor per sample with the given shape (no batch dimension), "
         "e.g. [3, 32, 32] for colour images or [40, 100] for 40 features over 100 steps.",
    params={
        "shape": Shape(default=(3, 32, 32), help="Shape of one sample, without the batch dimension."),
        "dtype": Choice(default="float32", options=("float32", "float64"),
                        help="Number type of the data fed here."),
    },
    inputs=(),
    outputs=("out",),
    infer=_infer_input,
    count_params=lambda ctx: 0,
    build=builder("Input", _identity),
    key_params=("shape",),
)

OUTPUT = NodeSpec(
    type_id="Output",
    shape_rule="returns its input unchanged",
    memory_note="nothing.",
    examples=(({}, ((10,),)),),
    layout_only=True,
    category="I/O",
    help="A model output: the compiled model returns one tensor per Output node, "
         "in node order. A graph may have several.",
    params={
        "name": Str(default="", max_length=64, help="A name for this output (empty: the node id)."),
    },
    inputs=("in",),
    outputs=(),
    infer=_infer_output,
    count_params=lambda ctx: 0,
    build=builder("Output", _identity),
    key_params=("name",),
)

SPECS = (INPUT, OUTPUT)
