"""What an export says it needs when it inlines a plugin's layer (docs/plugins.md section 5).

A module that sets ``__revstudio_inline__`` is copied into the export; where it imports
something beyond torch and the standard library (a sibling module of its plugin that does
not set the flag), the export imports that, so its header must name the plugin as a need
instead of "needs only PyTorch".
"""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

from plugin_site import add_distribution, env_with, revstudio

from revstudio import __version__

NODES = textwrap.dedent('''
    from revstudio.core.spec import NodeSpec


    def build(ctx):
        from .layers import Halve
        return Halve()


    SPECS = [NodeSpec(type_id="Halve", category="Tests", help="x / 2 through a helper", params={},
                      inputs=("in",), outputs=("out",), infer=lambda ctx: {"out": ctx.input("in")},
                      count_params=lambda ctx: 0, build=build)]
''')

LAYERS = textwrap.dedent('''
    from torch import nn

    from .helpers import half

    __revstudio_inline__ = True


    class Halve(nn.Module):
        def forward(self, x):
            return (half(x),)
''')


def test_an_inlined_layer_that_imports_its_plugin_names_the_plugin_as_a_need(tmp_path: Path) -> None:
    site = add_distribution(tmp_path / "site", "revstudio-halve", "0.2", {"halve": "halve.nodes:SPECS"},
                            {"halve/__init__.py": "", "halve/nodes.py": NODES, "halve/layers.py": LAYERS,
                             "halve/helpers.py": "def half(x):\n    return x / 2\n"})
    project = tmp_path / "halve.revs"
    project.write_text(json.dumps({
        "format": "revstudio", "version": 1, "name": "halve",
        "nodes": [{"id": "x", "type": "Input", "params": {"shape": [4]}}, {"id": "h", "type": "Halve"},
                  {"id": "y", "type": "Output"}],
        "edges": [["x.out", "h.in"], ["h.out", "y.in"]]}))
    out = tmp_path / "halve.py"
    result = revstudio(env_with(site), "export", str(project), "-o", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    source = out.read_text()
    assert "class Halve(nn.Module):" in source and "from halve.helpers import half" in source
    first = source.splitlines()[0]
    assert first == (f'"""halve: exported from revstudio {__version__}; needs only PyTorch and the plugin '
                     'revstudio-halve (import halve).'), first


BARE = textwrap.dedent('''
    from torch import nn

    from revstudio.core.spec import NodeSpec


    class Bare(nn.Module):
        def forward(self, x):
            return x * 2    # a tensor where the contract asks for a tuple: (x * 2,)


    class Halves(nn.Module):
        def forward(self, x):
            return (x[..., ::2],)    # half the length infer declares


    def _spec(type_id, module):
        return NodeSpec(type_id=type_id, category="Tests", help="breaks the forward contract", params={},
                        inputs=("in",), outputs=("out",), infer=lambda ctx: {"out": ctx.input("in")},
                        count_params=lambda ctx: 0, build=lambda ctx: module())


    SPECS = [_spec("Bare", Bare), _spec("Halves", Halves)]
''')


def test_a_plugin_layer_that_breaks_its_forward_contract_is_refused_not_exported(tmp_path: Path) -> None:
    """The exported file unpacked a bare tensor along its batch axis (the first sample came out, of
    any batch) and flattened the half-length output into the wrong size, silently; gradcheck, train
    and the ONNX export refuse the layer naming the plugin, and now the Python export does too."""
    site = add_distribution(tmp_path / "site", "revstudio-bare", "0.1", {"bare": "bare:SPECS"},
                            {"bare.py": BARE})
    for type_id, words in (("Bare", "returned a Tensor, but revstudio needs a tuple of 1 tensor(s)"),
                           ("Halves", "returned 4x3 (after the batch axis) for output 'out', but the type's "
                                      "infer says 4x6")):
        project = tmp_path / f"{type_id}.revs"
        project.write_text(json.dumps({
            "format": "revstudio", "version": 1, "name": type_id.lower(),
            "nodes": [{"id": "x", "type": "Input", "params": {"shape": [4, 6]}}, {"id": "b", "type": type_id},
                      {"id": "f", "type": "Flatten"}, {"id": "y", "type": "Output"}],
            "edges": [["x.out", "b.in"], ["b.out", "f.in"], ["f.out", "y.in"]]}))
        out = tmp_path / f"{type_id}.py"
        result = revstudio(env_with(site), "export", str(project), "-o", str(out))
        assert result.returncode == 1, result.stdout + result.stderr
        assert f"node b ({type_id}): the forward of {type_id} {words}" in result.stderr, result.stderr
        assert "a bug in the plugin revstudio-bare (entry point 'bare')" in result.stderr, result.stderr
        assert "Traceback" not in result.stderr and not out.exists()
