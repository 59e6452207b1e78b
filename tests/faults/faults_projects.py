"""Project documents built to break things: colliding names, absurd sizes (plain JSON, torch-free)."""
from __future__ import annotations

import json
from typing import Any


def body(conv_id: str, channels: int) -> dict[str, Any]:
    """A group body: one same-padded 3x3 Conv with ``channels`` outputs."""
    return {
        "nodes": [
            {"id": "in", "type": "GroupInput", "params": {"port": "in"}, "pos": [0, 0]},
            {"id": conv_id, "type": "Conv", "params": {"kernel_size": 3, "out_channels": channels,
                                                       "padding": "same"}, "pos": [200, 0]},
            {"id": "out", "type": "GroupOutput", "params": {"port": "out"}, "pos": [400, 0]},
        ],
        "edges": [["in.out", f"{conv_id}.in"], [f"{conv_id}.out", "out.in"]],
    }


def chain(name: str, nodes: list[tuple[str, str, dict[str, Any]]], groups: dict[str, Any],
          shape: list[int]) -> str:
    """Input -> ``nodes`` in a line -> global pool -> Linear(3) -> Output, as project text."""
    items = [("image", "Input", {"shape": shape}), *nodes, ("pool", "Pool", {"kind": "global_avg"}),
             ("head", "Linear", {"out_features": 3}), ("logits", "Output", {"name": "logits"})]
    ids = [i for i, _t, _p in items]
    doc = {
        "format": "revstudio", "version": 1, "name": name,
        "nodes": [{"id": i, "type": t, "params": p, "pos": [200 * k, 0]} for k, (i, t, p) in enumerate(items)],
        "edges": [[f"{a}.out", f"{b}.in"] for a, b in zip(ids, ids[1:])],
        "groups": groups,
    }
    return json.dumps(doc)


def colliding_projects() -> dict[str, str]:
    """Each one collided in some generated identifier before the export had one namespace."""
    g = "Group"
    return {
        # x1 and x_1 both camel-cased to GroupX1: the second class replaced the first
        "x1_x_1": chain("x1/x_1", [("a", g, {"group": "x1"}), ("b", g, {"group": "x_1"})],
                        {"x1": body("c1", 8), "x_1": body("c2", 8)}, [8, 4, 4]),
        # a group named like an inlined runtime class (GroupCall)
        "runtime_class": chain("call", [("a", g, {"group": "call"}), ("b", g, {"group": "region"}),
                                        ("c", g, {"group": "coupling"})],
                               {"call": body("c1", 8), "region": body("c2", 8), "coupling": body("c3", 8)},
                               [8, 4, 4]),
        # blk lowered twice (two shapes: a coupling half and a Group) became GroupBlk and GroupBlk1,
        # the very name group blk1 got
        "blk_blk1": chain("blk", [("cpl", "AdditiveCoupling", {"f": "blk", "g": "blk"}),
                                  ("whole", g, {"group": "blk"}), ("after", g, {"group": "blk1"})],
                          {"blk": body("conv", 4), "blk1": body("conv", 8)}, [8, 4, 4]),
        # node ids that are names of the file itself, keywords and builtins
        "file_names": chain("ids", [("Model", "Conv", {"kernel_size": 1, "out_channels": 8}),
                                    ("F", "Activation", {"fn": "relu"}),
                                    ("REVSTUDIO_PROJECT", "Conv", {"kernel_size": 1, "out_channels": 8}),
                                    ("torch", g, {"group": "Model"}), ("print", g, {"group": "F"}),
                                    ("lambda", g, {"group": "REVSTUDIO_PROJECT"})],
                            {"Model": body("nn", 8), "F": body("self", 8), "REVSTUDIO_PROJECT": body("x", 8)},
                            [8, 4, 4]),
        # value names: ids whose ports sanitise alike (x.out, x_out) and runtime function names
        "values": chain("values", [("x", "Conv", {"kernel_size": 1, "out_channels": 8}),
                                   ("x_out", "Conv", {"kernel_size": 1, "out_channels": 8}),
                                   ("build_region", "AdditiveCoupling", {"f": "total_logdet", "g": "region_dtypes"}),
                                   ("checkpoint", "AdditiveCoupling", {"f": "stream_dtype", "g": "recompute_in_backward"})],
                      {n: body(n + "_c", 4) for n in ("total_logdet", "region_dtypes", "stream_dtype",
                                                      "recompute_in_backward")},
                      [8, 4, 4]),
    }
