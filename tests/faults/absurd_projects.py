"""Projects whose sizes are absurd (plain JSON): each must be refused or warned about, in seconds."""
from __future__ import annotations

import json
from typing import Any


def _doc(name: str, nodes: list[tuple[str, str, dict[str, Any]]], groups: dict[str, Any] | None = None,
         edges: list[list[str]] | None = None) -> str:
    ids = [i for i, _t, _p in nodes]
    return json.dumps({
        "format": "revstudio", "version": 1, "name": name,
        "nodes": [{"id": i, "type": t, "params": p, "pos": [200 * k, 0]} for k, (i, t, p) in enumerate(nodes)],
        "edges": edges if edges is not None else [[f"{a}.out", f"{b}.in"] for a, b in zip(ids, ids[1:])],
        "groups": groups or {},
    })


def _body(nodes: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
    items = [("in", "GroupInput", {"port": "in"}), *nodes, ("out", "GroupOutput", {"port": "out"})]
    ids = [i for i, _t, _p in items]
    return {"nodes": [{"id": i, "type": t, "params": p, "pos": [0, 0]} for i, t, p in items],
            "edges": [[f"{a}.out", f"{b}.in"] for a, b in zip(ids, ids[1:])]}


def absurd_projects() -> dict[str, str]:
    conv = ("c", "Conv", {"kernel_size": 3, "out_channels": 8, "padding": "same"})
    head = [("pool", "Pool", {"kind": "global_avg"}), ("fc", "Linear", {"out_features": 2}),
            ("y", "Output", {"name": "y"})]
    nested_couplings: dict[str, Any] = {"g0": _body([("c", "Conv", {"kernel_size": 1, "out_channels": 1})])}
    for depth in range(1, 21):  # each level's F and G are the level below: 2^20 leaf layers
        nested_couplings[f"g{depth}"] = _body([("cp", "AdditiveCoupling", {"f": f"g{depth - 1}",
                                                                            "g": f"g{depth - 1}"})])
    return {
        # one sample of 4 x 65536 x 16384 float32 values: 16 GiB
        "input_16gb": _doc("input 16 GB", [("x", "Input", {"shape": [4, 65536, 16384]}), conv,
                                            *head]),
        # a shape whose element count overflows 64 bits
        "overflow": _doc("overflow", [("x", "Input", {"shape": [2 ** 20, 2 ** 20, 2 ** 20]}), *head]),
        # Repeat 256 of a Repeat 256 of a Conv: 65,536 layers
        "repeat_256x256": _doc("repeat", [("x", "Input", {"shape": [8, 4, 4]}),
                                          ("r", "Repeat", {"group": "outer", "times": 256}), *head],
                               {"outer": _body([("r2", "Repeat", {"group": "inner", "times": 256})]),
                                "inner": _body([conv])}),
        # twenty couplings nested in each other's F and G
        "nested_couplings": _doc("nested", [("x", "Input", {"shape": [2 ** 20, 1, 1]}),
                                            ("top", "Group", {"group": "g20"}), *head], nested_couplings),
        # an invertible 1x1 convolution over a million channels: 2^40 weights
        "huge_invconv": _doc("invconv", [("x", "Input", {"shape": [2 ** 20, 1, 1]}),
                                         ("w", "InvConv1x1", {}), *head]),
    }
