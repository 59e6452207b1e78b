"""The inputs an AffineCoupling sees inside a reversible region, for gradcheck's per-node blame.

A region runs a coupling as its parts (slice, ``x2 * exp(s(x1)) + t(x1)``, concatenation) so that
backward evaluates its net once; the coupling's own ``forward`` never runs there, and a forward
hook on it never fires. :func:`watch_couplings` listens at the region's affine step instead and
keeps the coupling's input ``cat(x1, x2)`` of one forward pass, so that
:func:`~revstudio.diagnostics.gradcheck.node_inversion_errors` can run the layer's own forward and
inverse on it as it does for every other invertible node.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch


@contextlib.contextmanager
def watch_couplings(model: Any, seen: dict[str, tuple[Any, tuple[Any, ...], tuple[Any, ...]]],
                    types: dict[str, str]) -> Iterator[None]:
    """While open, each AffineCoupling run by a region's step records ``name -> (layer, (x,), ())``
    in ``seen`` (first pass only; the output is left for the caller to compute with the layer's
    own forward) and its type in ``types``. Names are :func:`node_layers`' names."""
    from revstudio.compiler.runtime_affine import Affine
    from revstudio.compiler.runtime_streams import value

    from .node_layers import node_layers

    names = {id(layer): name for name, kind, layer, _ in node_layers(model)
             if kind == "AffineCoupling" and callable(getattr(layer, "inverse", None))}
    patched: list[Any] = []
    for module in model.modules():
        for region in getattr(module, "_regions", ()):
            for step in region.steps:
                name = names.get(id(getattr(step, "module", None)))
                if not isinstance(step, Affine) or name is None or "run" in vars(step):
                    continue
                types[name] = "AffineCoupling"

                def run(env: dict[int, Any], *args: Any, step: Any = step, name: str = name,
                        original: Any = step.run, **kwargs: Any) -> None:
                    if name not in seen:  # (cloned: the step may update x2 in place)
                        x1, x2 = value(env[step.b]), value(env[step.a])
                        dtype = next((p.dtype for p in step.module.parameters()), x1.dtype)
                        x = torch.cat((x1.detach().to(dtype), x2.detach().to(dtype)), dim=1)
                        seen[name] = (step.module, (x,), ())
                    original(env, *args, **kwargs)

                step.run = run  # type: ignore[method-assign]  # (an instance attribute, removed below)
                patched.append(step)
    try:
        yield
    finally:
        for step in patched:
            del step.run
