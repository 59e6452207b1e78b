"""Building one node, or a group body, without the compiler (for the catalog tests).

``NodeKit`` infers a node from its spec with a tiny shape pass for group bodies
(topological order, GroupInput fed from the caller) and builds modules, using a
``build_group`` made here: the compiler's own one is tested with the compiler.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from revstudio.core.graph import Graph
from revstudio.core.params import validate_all
from revstudio.core.spec import BuildContext, GroupShapes, InferContext, ShapeT, registry

BOUNDARY = ("Input", "Output", "GroupInput", "GroupOutput")


def order_of(body: Graph) -> list[str]:
    g = nx.DiGraph()
    g.add_nodes_from(body.nodes)
    g.add_edges_from((e.src.node, e.dst.node) for e in body.edges)
    return list(nx.topological_sort(g))


def resolved(type_id: str, raw: dict[str, Any]) -> dict[str, Any]:
    params, errors = validate_all(dict(registry.get(type_id).params), dict(raw))
    assert not errors, errors
    return params


def chain(*nodes: tuple[str, dict[str, Any]], in_port: str = "in", out_port: str = "out") -> Graph:
    """A body GroupInput -> nodes... -> GroupOutput."""
    body = Graph("body")
    body.add_node("GroupInput", "gin", {"port": in_port})
    prev = "gin.out"
    for i, (type_id, params) in enumerate(nodes):
        body.add_node(type_id, f"n{i}", params)
        body.connect(prev, f"n{i}.in")
        prev = f"n{i}.out"
    body.add_node("GroupOutput", "gout", {"port": out_port})
    body.connect(prev, "gout.in")
    return body


@dataclass
class Built:
    module: Any
    params: dict[str, Any]
    in_ports: tuple[str, ...]
    out_ports: tuple[str, ...]
    in_shapes: list[ShapeT]
    outputs: dict[str, ShapeT]
    count: int


@dataclass
class NodeKit:
    groups: dict[str, Graph] = field(default_factory=dict)
    # input shapes each group was last inferred with: build_group needs them
    feeds: dict[str, dict[str, ShapeT]] = field(default_factory=dict)

    # ---- inference ---------------------------------------------------------
    def infer_group(self, name: str, feed: dict[str, ShapeT]) -> GroupShapes:
        self.feeds[name] = dict(feed)
        body = self.groups[name]
        shapes: dict[tuple[str, str], ShapeT] = {}
        outputs: dict[str, ShapeT] = {}
        total = 0
        for node_id in order_of(body):
            node = body.nodes[node_id]
            spec = registry.get(node.type)
            params = resolved(node.type, node.params)
            if node.type == "GroupInput":
                inputs = {"in": feed[params["port"]]}
            else:
                inputs = {e.dst.port: shapes[(e.src.node, e.src.port)] for e in body.edges_into(node_id)}
            ctx = self.context(node_id, params, inputs)
            for port, shape in spec.infer(ctx).items():
                shapes[(node_id, port)] = shape
            total += spec.count_params(ctx)
            if node.type == "GroupOutput":
                outputs[params["port"]] = inputs["in"]
        return GroupShapes(outputs, total)

    def context(self, node_id: str, params: dict[str, Any], inputs: dict[str, ShapeT | None]) -> InferContext:
        return InferContext(node_id, params, inputs, self.groups, infer_group=self.infer_group)

    def infer(self, type_id: str, raw: dict[str, Any], in_shapes: list[ShapeT],
              node_id: str = "n") -> tuple[InferContext, dict[str, ShapeT]]:
        spec = registry.get(type_id)
        params = resolved(type_id, raw)
        if type_id == "GroupInput":
            inputs: dict[str, ShapeT | None] = {"in": in_shapes[0]}
        else:
            inputs = dict(zip(spec.input_ports(params, self.groups), in_shapes))
        ctx = self.context(node_id, params, inputs)
        return ctx, spec.infer(ctx)

    # ---- building ----------------------------------------------------------
    def build_group(self, name: str) -> Any:
        return BodyModule.create(self, name)

    def build(self, type_id: str, raw: dict[str, Any], in_shapes: list[ShapeT]) -> Built:
        spec = registry.get(type_id)
        ctx, outputs = self.infer(type_id, raw, in_shapes)
        count = spec.count_params(ctx)
        out_ports = spec.output_ports(ctx.params, self.groups)
        out_shapes = [outputs[p] for p in out_ports]
        if type_id in BOUNDARY:
            out_shapes = list(in_shapes) if type_id != "Input" else [outputs["out"]]
        bctx = BuildContext("n", ctx.params, list(in_shapes), out_shapes, self.groups,
                            build_group=self.build_group)
        module = spec.build(bctx)
        return Built(module, dict(ctx.params), spec.input_ports(ctx.params, self.groups), out_ports,
                     list(in_shapes), outputs, count)


def _body_module_class():  # type: ignore[no-untyped-def]
    from torch import nn

    class _Body(nn.Module):
        """Runs a body's nodes in topological order; inverts single-path chains."""

        def __init__(self, kit: NodeKit, name: str) -> None:
            super().__init__()
            body = kit.groups[name]
            feed = kit.feeds[name]
            self.body = body
            self.order = order_of(body)
            self.layers = nn.ModuleDict()
            self.ports: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
            shapes: dict[tuple[str, str], ShapeT] = {}
            for node_id in self.order:
                node = body.nodes[node_id]
                spec = registry.get(node.type)
                params = resolved(node.type, node.params)
                if node.type == "GroupInput":
                    inputs = {"in": feed[params["port"]]}
                else:
                    inputs = {e.dst.port: shapes[(e.src.node, e.src.port)] for e in body.edges_into(node_id)}
                ctx = kit.context(node_id, params, inputs)
                outs = spec.infer(ctx)
                for port, shape in outs.items():
                    shapes[(node_id, port)] = shape
                in_ports = spec.input_ports(params, kit.groups)
                out_ports = spec.output_ports(params, kit.groups)
                self.ports[node_id] = (in_ports, out_ports)
                if node.type in ("GroupInput", "GroupOutput"):
                    continue
                bctx = BuildContext(node_id, params, [inputs[p] for p in in_ports], [outs[p] for p in out_ports],
                                    kit.groups, build_group=kit.build_group)
                self.layers[node_id] = spec.build(bctx)

        def _typed(self, type_id: str) -> list[str]:
            return [n for n in self.body.nodes if self.body.nodes[n].type == type_id]

        def forward(self, *xs):  # type: ignore[no-untyped-def]
            values: dict[tuple[str, str], Any] = {}
            for node_id, x in zip(self._typed("GroupInput"), xs):
                values[(node_id, "out")] = x
            results = {}
            for node_id in self.order:
                in_ports, out_ports = self.ports[node_id]
                args = [values[(e.src.node, e.src.port)]
                        for p in in_ports for e in self.body.edges_into(node_id, p)]
                if self.body.nodes[node_id].type == "GroupOutput":
                    results[node_id] = args[0]
                elif node_id in self.layers:
                    for port, value in zip(out_ports, self.layers[node_id](*args)):
                        values[(node_id, port)] = value
            return tuple(results[n] for n in self._typed("GroupOutput"))

        def inverse(self, *ys):  # type: ignore[no-untyped-def]
            (y,) = ys
            for node_id in reversed(self.order):
                if node_id in self.layers:
                    (y,) = self.layers[node_id].inverse(y)
            return (y,)

    return _Body


class BodyModule:
    _cls: Any = None

    @classmethod
    def create(cls, kit: NodeKit, name: str) -> Any:
        if cls._cls is None:
            cls._cls = _body_module_class()
        return cls._cls(kit, name)

