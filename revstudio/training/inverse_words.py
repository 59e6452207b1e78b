"""What a gradient check's ``inverse_off`` entry means, in words (no torch: the editor's plots say it too).

A run's gradient check names, for a region whose inversion error is over the warning level, the
layers whose own inverse misses their input (``training.inrun.region_gradcheck``). A plugin's layer
whose inverse does not undo its forward is the plugin's bug, which no learning rate or precision
fixes; a built-in layer's inverse loses precision at the run's weights.
"""
from __future__ import annotations

from typing import Any


def inverse_words(layer: dict[str, Any]) -> str:
    """The sentence for one ``{"node", "type", "error"}`` entry (an error of None: NaN or Inf)."""
    from revstudio.core.spec import registry

    node, type_id, error = layer.get("node", "?"), str(layer.get("type") or ""), layer.get("error")
    off = f"{error:.3g}" if isinstance(error, (int, float)) else "a non-finite amount"
    provider = registry.provider(type_id) if type_id else None
    if provider is not None and not provider.builtin:
        return (f"the inverse of node {node} ({type_id}) does not undo its forward (it misses the input by {off}), "
                f"and reversible mode rebuilds the input with it in backward: a bug in the plugin {provider.label}; "
                "update the plugin or tell its authors, and train with --mode checkpoint or standard, which do not "
                "invert it")
    return (f"the inverse of node {node} ({type_id}) misses its input by {off} at these weights; try --mode "
            "checkpoint, a lower --lr, or float64")
