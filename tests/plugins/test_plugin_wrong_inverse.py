"""A run whose plugin layer's inverse does not undo its forward says so, naming the node and the plugin.

Its gradient checks measured the region's inversion error (0.2 here) and said "reversible mode
loses precision there; try --mode checkpoint, a lower --lr, or float64": a plugin author lowered
the learning rate for what is a bug in their ``inverse``, which ``revstudio gradcheck`` names.
"""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

from plugin_site import add_distribution, env_with, revstudio

NODES = textwrap.dedent('''
    from revstudio.core.spec import NodeSpec


    def build(ctx):
        from .layers import Twice
        return Twice()


    SPECS = [NodeSpec(type_id="Twice", category="Tests", help="2x, with an inverse that is not 1/2",
                      params={}, inputs=("in",), outputs=("out",), infer=lambda ctx: {"out": ctx.input("in")},
                      count_params=lambda ctx: 0, build=build, invertible=True)]
''')

LAYERS = textwrap.dedent('''
    import math

    import torch
    from torch import nn


    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.logdet = None

        def forward(self, x):
            self.logdet = torch.full((x.shape[0],), math.log(2.0) * x[0].numel(), dtype=x.dtype, device=x.device)
            return (x * 2,)

        def inverse(self, y):
            return (y * 0.4,)
''')


def test_a_run_names_the_plugin_layer_whose_inverse_is_wrong(tmp_path: Path) -> None:
    site = add_distribution(tmp_path / "site", "revstudio-twice", "0.1", {"twice": "twice.nodes:SPECS"},
                            {"twice/__init__.py": "", "twice/nodes.py": NODES, "twice/layers.py": LAYERS})
    project = tmp_path / "twice.revs"
    project.write_text(json.dumps({
        "format": "revstudio", "version": 1, "name": "twice",
        "nodes": [{"id": "x", "type": "Input", "params": {"shape": [4, 3, 3]}}, {"id": "t", "type": "Twice"},
                  {"id": "mix", "type": "InvConv1x1"}, {"id": "y", "type": "Output"}],
        "edges": [["x.out", "t.in"], ["t.out", "mix.in"], ["mix.out", "y.in"]]}))
    flags = ["--steps", "1", "--gradcheck-every", "1", "--memory-every", "0", "--val-every", "0",
             "--batch-size", "4", "--device", "cpu", "--mode", "reversible", "--out", str(tmp_path / "run")]
    result = revstudio(env_with(site), "train", str(project), *flags)
    assert result.returncode == 0, result.stdout + result.stderr
    line = next(s for s in result.stdout.splitlines() if s.startswith("gradient check at step 1"))
    assert "the inverse of node t (Twice) does not undo its forward (it misses the input by 0.2)" in line, line
    assert "a bug in the plugin revstudio-twice (entry point 'twice')" in line, line
    assert "loses precision" not in line and "lower --lr" not in line, line
    rows = [json.loads(s) for s in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    check = next(r for r in rows if r["kind"] == "gradcheck")
    [region] = check["regions"]
    assert [(e["node"], e["type"], round(e["error"], 6)) for e in region["inverse_off"]] == [("t", "Twice", 0.2)]
