"""The revstudio document: graph facts, events, node specs, params, commands.

Imports neither Qt nor torch, so headless tools and the editor share it.
"""
from .diagnostics import Diagnostic
from .events import Event
from .graph import Edge, Graph, GraphError, Node, PortRef
from .spec import BuildContext, InferContext, NodeSpec, ShapeError, get_spec, register, registry

__all__ = [
    "BuildContext", "Diagnostic", "Edge", "Event", "Graph", "GraphError", "InferContext",
    "Node", "NodeSpec", "PortRef", "ShapeError", "get_spec", "register", "registry",
]
