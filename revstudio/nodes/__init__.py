"""The built-in node catalog (DESIGN section 4): one NodeSpec per type.

Importing this package registers every type in ``revstudio.core.spec.registry``
(the registry does so lazily on first use). Torch is only imported when a
node's module is built. ``module_recipe`` tells the code exporter which
torch-only class (in ``torch_modules``) and arguments a node's module uses.
"""
from __future__ import annotations

from revstudio.core.spec import NodeSpec, registry

from . import couplings, flows, groups, io, layers, recurrent, structure
from ._common import RECIPES, ModuleRecipe, instantiate, module_recipe

CATALOG: tuple[NodeSpec, ...] = (
    *io.SPECS, *layers.SPECS, *recurrent.SPECS, *structure.SPECS,
    *flows.SPECS, *couplings.SPECS, *groups.SPECS,
)

for _spec in CATALOG:
    registry.register(_spec)

__all__ = ["CATALOG", "RECIPES", "ModuleRecipe", "instantiate", "module_recipe"]
