"""Shared helpers of the catalog: shape wording, error construction, module recipes.

A spec's ``build`` is derived from a *recipe*: which torch-only class to create
(in ``revstudio.nodes.torch_modules``) with which plain-value arguments and which
group bodies. The compiler instantiates recipes; the code exporter can emit the
same constructor call as source, so both create identical modules.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

from revstudio.core.params import Choice
from revstudio.core.spec import BuildContext, InferContext, ShapeError, ShapeT

TORCH_MODULES = "revstudio.nodes.torch_modules"
INIT_SCHEMES = (
    "default", "zeros", "xavier_uniform", "xavier_normal",
    "kaiming_uniform", "kaiming_normal", "orthogonal",
)
DIMS = {1: "(C)", 2: "(C, L)", 3: "(C, H, W)"}


def init_param() -> Choice:
    return Choice(
        default="default", options=INIT_SCHEMES,
        help="How weights start: PyTorch's default, all zeros, or a named scheme "
             "(non-default schemes start biases at zero).",
    )


def fmt(shape: Sequence[int]) -> str:
    """A shape as the canvas writes it: 8x16x16."""
    return "x".join(str(s) for s in shape) if len(shape) else "a scalar"


def numel(shape: Sequence[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def problem(kind: str, ctx: InferContext | BuildContext, message: str, port: str | None = None) -> ShapeError:
    """A ShapeError whose message names the node: 'Merge m: in1 is ...'."""
    return ShapeError(f"{kind} {ctx.node_id}: {message}", port)


def need_ndim(kind: str, ctx: InferContext, shape: ShapeT, allowed: Sequence[int], hint: str,
              port: str = "in") -> int:
    if len(shape) not in allowed:
        wanted = " or ".join(DIMS.get(n, f"{n}-D") for n in allowed)
        raise problem(kind, ctx, f"needs a {wanted} input but {port} is {fmt(shape)}; {hint}", port)
    return len(shape)


# ---- recipes -----------------------------------------------------------------
GroupArg = Union[str, tuple[str, ...], None]


@dataclass(frozen=True)
class ModuleRecipe:
    """How to create a node's module: ``module.cls(**kwargs, **built group bodies)``.

    ``kwargs`` hold plain values (int, float, str, bool, tuples) that ``repr``
    turns into source. ``bodies`` maps a constructor argument to the name of a
    group whose built body it receives, a tuple of names (a list of bodies, each
    built separately so each has its own weights), or None.
    """

    module: str
    cls: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    bodies: Mapping[str, GroupArg] = field(default_factory=dict)


RecipeFn = Callable[[BuildContext], ModuleRecipe]
RECIPES: dict[str, RecipeFn] = {}


def recipe(file: str, cls: str, /, bodies: Mapping[str, GroupArg] | None = None, **kwargs: Any) -> ModuleRecipe:
    return ModuleRecipe(f"{TORCH_MODULES}.{file}", cls, kwargs, dict(bodies or {}))


def instantiate(rec: ModuleRecipe, build_group: Callable[[str], Any] | None = None) -> Any:
    """Create the module a recipe describes (imports torch through the torch-only file)."""
    cls = getattr(importlib.import_module(rec.module), rec.cls)
    bodies: dict[str, Any] = {}
    for arg, ref in rec.bodies.items():
        if ref is None:
            bodies[arg] = None
            continue
        if build_group is None:
            raise RuntimeError(
                f"{rec.cls} needs group bodies built by the compiler (BuildContext.build_group is not set)"
            )
        bodies[arg] = [build_group(n) for n in ref] if isinstance(ref, tuple) else build_group(ref)
    return cls(**rec.kwargs, **bodies)


def builder(type_id: str, recipe_fn: RecipeFn) -> Callable[[BuildContext], Any]:
    """The ``build`` of a spec whose module is described by ``recipe_fn``."""
    RECIPES[type_id] = recipe_fn

    def build(ctx: BuildContext) -> Any:
        return instantiate(recipe_fn(ctx), ctx.build_group)

    build.__name__ = f"build_{type_id}"
    return build


def module_recipe(type_id: str, ctx: BuildContext) -> ModuleRecipe:
    """The recipe of a node type's module for this node (for code generation)."""
    from revstudio.core.spec import registry

    canonical = registry.canonical(type_id)
    return RECIPES[canonical](ctx)
