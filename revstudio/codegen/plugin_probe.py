"""An export runs the graph's plugin layers once before it writes them (docs/plugins.md section 5).

The exported file calls each layer as revstudio does, without revstudio's checks of a plugin's
layer. One that breaks the contract made a file that computed the wrong thing silently: a bare
tensor where a tuple is due was unpacked along the batch axis (the first sample came out), an
output of another shape than ``infer`` declared fed layers built for that shape. ``gradcheck``,
``train`` and the ONNX export run the model and refuse such a layer, naming the plugin and the
node; the Python export built the model without running it. Graphs of built-in types alone,
which revstudio's own tests hold to the contract, are not run.
"""
from __future__ import annotations

from typing import Any

from . import CodegenError


def plugin_types(graph: Any) -> set[str]:
    """The node types of ``graph`` (its group bodies too) that an installed plugin declares."""
    from revstudio.core.spec import registry

    used: set[str] = set()
    for part in (graph, *graph.groups.values()):
        used.update(node.type for node in part.nodes.values() if isinstance(node.type, str))
    out = set()
    for type_id in used:
        spec = registry.find(type_id)
        provider = registry.provider(spec.type_id) if spec is not None else None
        if provider is not None and not provider.builtin:
            out.add(type_id)
    return out


def check_plugin_layers(graph: Any) -> None:
    """One forward of a batch of 2 random samples, in standard mode on the CPU, where ``graph``
    uses a plugin's types; raises :class:`CodegenError` naming the node and the plugin when one
    of its layers breaks the contract (or raises in the plugin's own code). The user's random
    stream does not move."""
    if not plugin_types(graph):
        return
    import torch

    from revstudio.compiler import CompileError
    from revstudio.compiler.module import compile as compile_graph
    from revstudio.core.plugins import PluginError, blame_plugin
    from revstudio.core.spec import registry
    from revstudio.diagnostics.gradcheck import random_inputs

    with torch.random.fork_rng(devices=[]):
        try:
            model = compile_graph(graph, mode="standard", device="cpu")
            with torch.no_grad():
                model(*random_inputs(graph, 2, model.dtype, requires_grad=False))
        except PluginError as exc:
            raise CodegenError(str(exc)) from None
        except CompileError:  # (the export's own build says it, in its words)
            return
        except Exception as exc:  # noqa: BLE001 - only the plugin's own failures are this check's to say
            blamed = blame_plugin(registry, exc)
            if blamed is not None:
                raise CodegenError(blamed) from None
