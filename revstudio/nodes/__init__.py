"""The built-in node catalog (DESIGN section 4): one NodeSpec per type.

``CATALOG`` is what the entry point ``builtin`` of the group ``revstudio.nodes``
(pyproject.toml) hands the registry on first use, exactly as a plugin's list is
(docs/plugins.md); importing this package registers nothing by itself. Torch is only imported when a
node's module is built. ``module_recipe`` tells the code exporter which
torch-only class (in ``torch_modules``) and arguments a node's module uses.
"""
from __future__ import annotations

from revstudio.core.spec import NodeSpec

from . import couplings, flows, groups, io, layers, recurrent, structure
from ._common import RECIPES, ModuleRecipe, instantiate, module_recipe

CATALOG: tuple[NodeSpec, ...] = (
    *io.SPECS, *layers.SPECS, *recurrent.SPECS, *structure.SPECS,
    *flows.SPECS, *couplings.SPECS, *groups.SPECS,
)

__all__ = ["CATALOG", "RECIPES", "ModuleRecipe", "instantiate", "module_recipe"]
