"""Peak estimate vs measured peak of a plugin's invertible layer in every mode.

A plugin (written here into a temporary folder and installed the way pip would, a dist-info
folder on ``PYTHONPATH``) declares a Householder 1x1 (an orthogonal channel mix by an einsum,
with a weight and its own inverse) and a squeeze-excite layer, each as the catalog test
(tests/nodes/test_saved_for_backward.py) measures it. Three projects, conv -> [an additive coupling
whose F and G are squeeze-excites] -> Householder -> [another] -> global pool -> linear, run through a child
``revstudio memory --json`` (live-tensor accounting on the CPU). ``--old-declaration`` declares
the Householder without ``rerun_values`` and ``inverse_dense`` (all a plugin could say before),
for the before column.

    python benchmarks/bench_estimate_plugin_invertible.py
    python benchmarks/bench_estimate_plugin_invertible.py --old-declaration --batches 32
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from plugin_dist import add_distribution

ROOT = Path(__file__).resolve().parent.parent

NODES = textwrap.dedent('''
    from math import prod

    from revstudio.core.spec import NodeSpec, SavedTensors

    OLD = False  # the declaration without rerun_values and inverse_dense


    def _same(ctx):
        return {"out": ctx.input("in")}


    def _householder(ctx):
        from .layers import Householder
        return Householder(ctx.in_shapes[0][0])


    def _se(ctx):
        from .layers import SqueezeExcite
        return SqueezeExcite(ctx.in_shapes[0][0])


    def _householder_saved(params, ins, outs):
        if OLD:
            return SavedTensors(values=prod(ins[0]))
        return SavedTensors(values=prod(ins[0]), rerun_values=0, inverse_dense=False)


    def _se_saved(params, ins, outs):
        c = ins[0][0]
        return SavedTensors(ports=("in",), values=2 * c + 4, backward_values=prod(ins[0]) - 2 * c + 4)


    SPECS = [
        NodeSpec(type_id="Householder1x1", category="Invertible", help="orthogonal 1x1", params={},
                 inputs=("in",), outputs=("out",), infer=_same, count_params=lambda ctx: ctx.input("in")[0],
                 build=_householder, invertible=True, fresh_output=True, saved_for_backward=_householder_saved),
        NodeSpec(type_id="SqueezeExcite", category="Layers", help="squeeze-excite", params={},
                 inputs=("in",), outputs=("out",), infer=_same, count_params=lambda ctx: 9 * ctx.input("in")[0] + 4,
                 build=_se, fresh_output=True, saved_for_backward=_se_saved),
    ]
''')

LAYERS = textwrap.dedent('''
    import torch
    from torch import nn


    class Householder(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.v = nn.Parameter(torch.randn(channels))

        def weight(self):
            v = self.v
            return torch.eye(v.numel(), dtype=v.dtype, device=v.device) - 2 * torch.outer(v, v) / (v @ v)

        def forward(self, x):
            return (torch.einsum("oc,bchw->bohw", self.weight(), x),)

        def inverse(self, y):
            return (torch.einsum("oc,bohw->bchw", self.weight(), y),)


    class SqueezeExcite(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(channels, 4), nn.Linear(4, channels)

        def forward(self, x):
            return (x * torch.sigmoid(self.fc2(torch.relu(self.fc1(x.mean((2, 3))))))[:, :, None, None],)
''')

# run before revstudio loads its plugins: the Householder declared as before
OLD = """
import runpy, sys
import probe_plugin.nodes as nodes
nodes.OLD = True
sys.argv = ["revstudio", *sys.argv[1:]]
runpy.run_module("revstudio", run_name="__main__")
"""



def _project(path: Path, couplings: int) -> Path:
    """conv -> [coupling of squeeze-excites] -> Householder -> [another] -> pool -> linear, saved as a .revs."""
    nodes = [
        {"id": "x", "type": "Input", "params": {"shape": [3, 16, 16]}},
        {"id": "conv", "type": "Conv", "params": {"out_channels": 16, "kernel_size": 3, "padding": "same"}},
        {"id": "hh", "type": "Householder1x1", "params": {}},
        {"id": "pool", "type": "Pool", "params": {"kind": "global_avg"}},
        {"id": "fc", "type": "Linear", "params": {"out_features": 10}},
        {"id": "y", "type": "Output", "params": {"name": "y"}},
    ]
    chain = ["x", "conv", *["block"][:couplings], "hh", *["block2"][:couplings - 1], "pool", "fc", "y"]
    for name in ("block", "block2")[:couplings]:
        nodes.append({"id": name, "type": "AdditiveCoupling", "params": {"f": "se", "g": "se"}})
    se = {"nodes": [{"id": "in", "type": "GroupInput", "params": {"port": "in"}},
                    {"id": "se", "type": "SqueezeExcite", "params": {}},
                    {"id": "out", "type": "GroupOutput", "params": {"port": "out"}}],
          "edges": [["in.out", "se.in"], ["se.out", "out.in"]]}
    plugin = {"distribution": "probe-plugin", "version": "0.1.0"}
    data = {"format": "revstudio", "version": 1, "name": path.stem,
            "nodes": [dict(n, pos=[240 * i, 0]) for i, n in enumerate(nodes)],
            "edges": [[f"{a}.out", f"{b}.in"] for a, b in zip(chain, chain[1:])],
            "groups": {"se": se} if couplings else {},
            "plugins": {"Householder1x1": plugin, **({"SqueezeExcite": plugin} if couplings else {})}}
    path.write_text(json.dumps(data, indent=1))
    return path


def measure(project: Path, batch: int, old: bool, site: Path) -> dict[str, tuple[int, int]]:
    """mode -> (measured peak, estimated peak) of one training step at ``batch``."""
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT)])
    args = ["memory", str(project), "--json", "--batch", str(batch), "--repeat", "1", "--threads", "1"]
    command = [sys.executable, "-c", OLD, *args] if old else [sys.executable, "-m", "revstudio", *args]
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        raise SystemExit(f"revstudio memory failed on {project.name} at batch {batch}: {run.stderr.strip()[-2000:]}")
    report = json.loads(run.stdout)
    return {mode: (m["peak_bytes"], report["estimate"]["modes"][mode]["peak_bytes"])
            for mode, m in report["modes"].items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[2, 8, 32])
    parser.add_argument("--old-declaration", action="store_true",
                        help="declare the Householder without rerun_values and inverse_dense (the before column)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        site = add_distribution(Path(tmp) / "site", "probe-plugin", "probe", "probe_plugin.nodes:SPECS",
                                {"probe_plugin/__init__.py": "", "probe_plugin/nodes.py": NODES,
                                 "probe_plugin/layers.py": LAYERS})
        projects = {"householder": _project(Path(tmp) / "householder.revs", 0),
                    "coupling+householder": _project(Path(tmp) / "coupling_householder.revs", 1),
                    "between couplings": _project(Path(tmp) / "between_couplings.revs", 2)}
        print(f"declaration: {'old (values only)' if args.old_declaration else 'with rerun_values, inverse_dense'}")
        print(f"{'project':<21} {'batch':>5}  {'mode':<10} {'measured':>10} {'estimate':>10} {'error':>8}")
        worst = 0.0
        for name, project in projects.items():
            for batch in args.batches:
                for mode, (real, est) in measure(project, batch, args.old_declaration, site).items():
                    error = est / real - 1
                    worst = max(worst, abs(error))
                    print(f"{name:<21} {batch:>5}  {mode:<10} {real:>10,} {est:>10,} {error:>+7.2%}")
        print(f"worst |error|: {worst:.2%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
