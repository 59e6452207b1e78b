"""A plugin that breaks the NodeSpec contract is named, with its node, and never crashes revstudio.

docs/plugins.md promises skipping and reporting for plugins that cannot load; these are
the mistakes a plugin author makes past that point: a declaration revstudio cannot use
(an empty type id, params that are not parameter kinds, a default its own limits reject),
an ``infer`` that returns the wrong ports, a port rule with the wrong signature, a layer
whose ``forward`` returns a bare tensor (silently iterated along the batch), a
``count_params`` that disagrees with the weights, and a ``build`` or ``forward`` that
raises. One child process runs every command (torch is imported once).
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from plugin_site import add_distribution, env_with

LABEL = "revstudio-sloppy (entry point 'sloppy')"

SLOPPY = textwrap.dedent('''
    from revstudio.core.params import Float, Int
    from revstudio.core.spec import NodeSpec, SavedTensors


    def same(ctx):
        return {"out": ctx.input("in")}


    def spec(type_id, **kw):
        args = dict(type_id=type_id, category="Sloppy", help="broken on purpose", params={},
                    inputs=("in",), outputs=("out",), infer=same, count_params=lambda ctx: 0)
        args.update(kw)
        return NodeSpec(**args)


    def _layer(kind):
        def build(ctx):
            from . import layers
            return getattr(layers, kind)(ctx.in_shapes[0][0])
        return build


    def _build_raises(ctx):
        raise RuntimeError("no weights file")


    def _build_asks_for_input(ctx):
        from . import layers
        return layers.Scale(ctx.input("in")[0])   # infer's ctx has input(port); build's does not


    SPECS = [
        spec(""),
        spec("NoParams", params=["k"]),
        spec("PlainInt", params={"k": 3}),
        spec("OneShapeExample", examples=(({}, (3, 4)),)),
        spec("NoCategory", category=None),
        spec("BadDefault", params={"k": Int(default=0, min=1, max=5, help="k")}),
        spec("NoDefault", params={"k": Int(min=2, max=5, help="k"), "s": Float(default=0.5, help="s")}),
        spec("WrongPorts", infer=lambda ctx: {"output": ctx.input("in")}),
        spec("NotADict", infer=lambda ctx: ctx.input("in")),
        spec("OneArgPorts", inputs=lambda params: ("in",)),
        spec("BareTensor", build=_layer("Bare"), count_params=lambda ctx: ctx.input("in")[0]),
        spec("MiscountedScale", build=_layer("Scale"), count_params=lambda ctx: 7),
        spec("UncountedScale", build=_layer("Scale"), count_params=None),
        spec("RaisingForward", build=_layer("Raises")),
        spec("RaisingBuild", build=_build_raises),
        spec("AsksForInput", build=_build_asks_for_input),
        spec("DottedPort", inputs=("in.a",), infer=lambda ctx: {"out": ctx.input("in.a")}),
        spec("TwicePort", inputs=("in", "in")),
        spec("RuleDottedPort", inputs=lambda params, groups: ("in",), outputs=lambda params, groups: ("out.0",),
             infer=lambda ctx: {"out.0": ctx.input("in")}),
        spec("NoneCount", count_params=lambda ctx: None),
        spec("HalfCount", count_params=lambda ctx: 2.5),
        spec("RaisingCount", count_params=lambda ctx: 1 / 0),
        spec("GoodScale", build=_layer("Scale"), count_params=lambda ctx: ctx.input("in")[0]),
        spec("WrongInverse", build=_layer("WrongInverse"), invertible=True),
        spec("WrongShape", build=_layer("Doubler")),
        spec("ToDouble", build=_layer("ToDouble")),
        spec("ToMeta", build=_layer("ToMeta")),
        spec("NoInverse", build=_layer("NoInverse"), invertible=True),
        spec("BareInverse", build=_layer("BareInverse"), invertible=True),
        spec("NanSaved", saved_for_backward=lambda p, i, o: SavedTensors(values=float("nan"))),
        spec("NegativeSaved", saved_for_backward=SavedTensors(forward_values=-48)),
        spec("RaisingSaved", saved_for_backward=lambda p, i, o: 1 / 0),
    ]
''')

LAYERS = textwrap.dedent('''
    import torch
    from torch import nn


    class Scale(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.w = nn.Parameter(torch.ones(c, 1))

        def forward(self, x):
            return (x * self.w,)


    class Bare(Scale):
        def forward(self, x):
            return x * self.w          # not a tuple: iterating it walks the batch


    class Doubler(nn.Module):
        def __init__(self, c):
            super().__init__()

        def forward(self, x):
            return (torch.cat([x, x], dim=1),)   # infer says the shape is kept


    class WrongInverse(nn.Module):
        def __init__(self, c):
            super().__init__()

        def forward(self, x):
            return (x * 2,)

        def inverse(self, y):
            return (y / 3,)            # not what forward undoes


    class ToDouble(nn.Module):
        def __init__(self, c):
            super().__init__()

        def forward(self, x):
            return (x.double(),)       # the next Linear holds float32 weights


    class NoInverse(ToDouble):
        def forward(self, x):
            return (x * 2,)


    class BareInverse(NoInverse):
        def inverse(self, y):
            return y / 2               # not a tuple: iterating it walks the batch


    class ToMeta(ToDouble):
        def forward(self, x):
            return (torch.zeros(x.shape, device="meta"),)


    class Raises(nn.Module):
        def __init__(self, c):
            super().__init__()

        def forward(self, x):
            raise RuntimeError("the kernel is missing")
''')

# Runs revstudio's CLI in-process once per project, capturing what a terminal would show.
DRIVER = textwrap.dedent('''
    import contextlib, io, json, sys
    from revstudio.cli import main
    results = {}
    for name, argv in json.loads(sys.argv[1]).items():
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
        results[name] = {"code": code, "out": out.getvalue(), "err": err.getvalue()}
    print(json.dumps(results))
''')


def _project(folder: Path, type_id: str) -> Path:
    path = folder / f"{type_id.lower()}.revs"
    path.write_text(json.dumps({
        "format": "revstudio", "version": 1, "name": type_id,
        "nodes": [{"id": "x", "type": "Input", "params": {"shape": [4, 6]}},
                  {"id": "s", "type": "GoodScale"}, {"id": "b", "type": type_id},
                  {"id": "y", "type": "Output"}],
        "edges": [["x.out", "s.in"], ["s.out", "b.in"], ["b.out", "y.in"]]}))
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str | int]]:
    site = tmp_path_factory.mktemp("sloppy")
    add_distribution(site, "revstudio-sloppy", "0.1", {"sloppy": "sloppy.nodes:SPECS"},
                     {"sloppy/__init__.py": "", "sloppy/nodes.py": SLOPPY, "sloppy/layers.py": LAYERS})
    folder = tmp_path_factory.mktemp("projects")
    p = {t: str(_project(folder, t)) for t in (
        "WrongPorts", "NotADict", "OneArgPorts", "BareTensor", "MiscountedScale", "UncountedScale", "RaisingForward",
        "RaisingBuild", "AsksForInput", "RuleDottedPort", "NoneCount", "HalfCount", "RaisingCount", "WrongInverse", "WrongShape", "NanSaved", "NegativeSaved", "RaisingSaved",
        "ToDouble", "ToMeta", "NoInverse", "BareInverse")}
    commands = {
        "plugins": ["plugins", "--json"],
        "wrong_ports": ["check", p["WrongPorts"], "--json"],
        "not_a_dict": ["check", p["NotADict"], "--json"],
        "one_arg_ports": ["check", p["OneArgPorts"], "--json"],
        "bare_gradcheck": ["gradcheck", p["BareTensor"]],
        "bare_memory": ["memory", p["BareTensor"], "--json"],
        "miscounted": ["gradcheck", p["MiscountedScale"]],
        "uncounted": ["gradcheck", p["UncountedScale"]],
        "raising_forward": ["memory", p["RaisingForward"], "--json"],
        "raising_build": ["gradcheck", p["RaisingBuild"]],
        "asks_for_input": ["gradcheck", p["AsksForInput"]],
        "wrong_inverse": ["gradcheck", p["WrongInverse"]],
        "wrong_shape_gradcheck": ["gradcheck", p["WrongShape"]],
        "wrong_shape_memory": ["memory", p["WrongShape"], "--json"],
        **{t: ["check", p[t], "--json"] for t in ("NanSaved", "NegativeSaved", "RaisingSaved", "RuleDottedPort",
                                                  "NoneCount", "HalfCount", "RaisingCount")},
        "to_double": ["memory", p["ToDouble"], "--json"],
        "to_meta": ["gradcheck", p["ToMeta"]],
        "no_inverse": ["gradcheck", p["NoInverse"]],
        "bare_inverse": ["memory", p["BareInverse"], "--json"],
    }
    run = subprocess.run([sys.executable, "-P", "-c", DRIVER, json.dumps(commands)], env=env_with(site),
                         cwd=folder, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def _errors(run: dict[str, str | int]) -> dict[str, str]:
    return {d["node"]: d["message"] for d in json.loads(str(run["out"]))["diagnostics"] if d["severity"] == "error"}


def test_declarations_revstudio_cannot_use_are_skipped_and_named(runs: dict) -> None:
    info = json.loads(runs["plugins"]["out"])
    sloppy = [p for p in info["plugins"] if p["distribution"] == "revstudio-sloppy"][0]
    assert "GoodScale" in sloppy["types"]
    assert not {"", "NoParams", "NoCategory", "BadDefault"} & set(sloppy["types"])
    problems = "\n".join(p["message"] for p in info["problems"] if p["plugin"] == LABEL)
    assert "node type '' skipped: its type_id must be a non-empty name" in problems
    assert "node type 'NoParams' skipped: params must map each parameter name" in problems
    # which entry is wrong, and what to write instead (the rule alone left the author to search)
    assert "node type 'PlainInt' skipped: params must map each parameter name to a kind from " in problems
    assert "; 'k' is 3 (int), not a parameter kind: for a default of 3, write 'k': Int(default=3, ...)" in problems
    assert "node type 'NoParams' skipped: params must map each parameter name to a kind from revstudio.core.params " \
           "(Int, Float, Choice, ...), not a list: write params={'k': Int(default=3, ...)}" in problems
    assert "node type 'NoCategory' skipped: its category must be text" in problems
    assert ("node type 'BadDefault' skipped: the default of its parameter 'k', 0, is not allowed "
            "(0 is too small; use an integer >= 1 and <= 5)") in problems
    # an author who gave no default learns where the 0 came from and what to write
    assert ("node type 'NoDefault' skipped: the default of its parameter 'k', 0, is not allowed (0 is too small; "
            "use an integer >= 2 and <= 5); change the default or the limits in the plugin (an Int given no "
            "default has 0: write 'k': Int(default=2, ...))") in problems, problems
    assert runs["plugins"]["code"] == 1 and "Traceback" not in runs["plugins"]["err"]


def test_infer_with_the_wrong_ports_names_the_ports_and_the_plugin(runs: dict) -> None:
    wrong = _errors(runs["wrong_ports"])["b"]
    assert "infer returned shapes for 'output' but no shape for output 'out'" in wrong
    assert f"a bug in the plugin {LABEL}" in wrong
    assert f"a bug in the plugin {LABEL}" in _errors(runs["not_a_dict"])["b"]


def test_a_port_rule_with_the_wrong_signature_names_the_plugin(runs: dict) -> None:
    message = _errors(runs["one_arg_ports"])["b"]
    assert f"the plugin {LABEL} failed to work out this node's ports (TypeError" in message


def test_a_forward_that_returns_a_bare_tensor_is_named_not_iterated(runs: dict) -> None:
    for name in ("bare_gradcheck", "bare_memory"):  # memory used to measure the wrong model silently
        run = runs[name]
        text = str(run["err"]) + str(run["out"])
        assert run["code"] == 1, text
        assert "node b (BareTensor): the forward of Bare returned a Tensor" in text
        assert "a tuple of 1 tensor(s)" in text and LABEL in text and "internal error" not in text


def test_a_miscounting_count_params_is_reported_once(runs: dict) -> None:
    run = runs["miscounted"]
    assert run["code"] == 0, run
    warning = f"plugin {LABEL}: node type 'MiscountedScale': count_params says 7 weights but build made 4 (node b)"
    assert str(run["err"]).count(warning) == 1, run["err"]


def test_a_raising_build_or_forward_blames_the_plugin_not_revstudio(runs: dict) -> None:
    build = str(runs["raising_build"]["err"])
    assert "b (RaisingBuild): could not build the layer: no weights file" in build and LABEL in build
    line = SLOPPY.splitlines().index('    raise RuntimeError("no weights file")') + 1
    assert f"no weights file, in sloppy.nodes, line {line};" in build  # the plugin's line that raised
    forward = json.loads(str(runs["raising_forward"]["out"]))
    assert forward["exit_code"] == 1
    assert forward["error"].startswith(f"the plugin {LABEL} failed in sloppy.layers, line ")
    assert "the kernel is missing" in forward["error"] and "internal error" not in forward["error"]


def test_a_wrong_inverse_is_traced_to_its_node_and_plugin(runs: dict) -> None:
    """gradcheck said only which region did not invert; it now names the node and the plugin."""
    run = runs["wrong_inverse"]
    assert run["code"] == 1, run
    assert ("node b (WrongInverse): inverse(forward(x)) differs from x by 0.333; the layer's inverse "
            f"does not undo its forward: a bug in the plugin {LABEL}") in str(run["out"]), run["out"]


def test_a_forward_whose_shape_is_not_what_infer_says_is_named_at_its_node(runs: dict) -> None:
    """It used to fail in the layer after it, reported as an internal error of revstudio."""
    for name in ("wrong_shape_gradcheck", "wrong_shape_memory"):
        run = runs[name]
        text = str(run["err"]) + str(run["out"])
        assert run["code"] == 1, text
        assert ("node b (WrongShape): the forward of Doubler returned 8x6 (after the batch axis) for output "
                "'out', but the type's infer says 4x6") in text
        assert LABEL in text and "internal error" not in text


@pytest.mark.parametrize(("type_id", "problem"), [
    ("NanSaved", "saved_for_backward gave values=nan: each count must be a whole number of elements per sample"),
    ("NegativeSaved", "saved_for_backward gave forward_values=-48: this count must be 0 or more"),
    ("RaisingSaved", "saved_for_backward raised ZeroDivisionError: division by zero"),
])
def test_a_saved_for_backward_that_cannot_be_counted_names_the_plugin(runs: dict, type_id: str,
                                                                      problem: str) -> None:
    """A NaN count failed the whole estimate ("the memory estimate failed (ValueError: cannot convert
    float NaN to integer); please report this"), a negative one shrank it silently, a raising one was
    silently guessed: each now names the plugin and the type, and the estimate stands."""
    run = runs[type_id]
    report = json.loads(str(run["out"]))
    assert report["estimate"], report
    assert not [d for d in report["diagnostics"] if "please report this" in d["message"]], report["diagnostics"]
    assert f"revstudio: warning: plugin {LABEL}: node type {type_id!r}: {problem}" in str(run["err"]), run["err"]


@pytest.mark.parametrize(("name", "wrong"), [
    ("to_double", "node b (ToDouble): the forward of ToDouble returned output 'out' as float64 from a float32 "
                  "input: the layers after it hold weights of the model's dtype; return the input's dtype"),
    ("to_meta", "node b (ToMeta): the forward of ToMeta returned output 'out' as a tensor on meta from an input "
                "on cpu: revstudio runs the model on one device"),
])
def test_a_forward_that_changes_dtype_or_device_is_named_at_its_node(runs: dict, name: str, wrong: str) -> None:
    """Both failed in the layer after it ('mat1 and mat2 must have the same dtype'), reported as an
    internal error of revstudio."""
    run = runs[name]
    text = str(run["err"]) + str(run["out"])
    assert run["code"] == 1, text
    assert wrong in text and LABEL in text and "internal error" not in text, text


@pytest.mark.parametrize(("name", "wrong"), [
    ("no_inverse", "node b (NoInverse): the type is declared invertible, but NoInverse has no method "
                   "inverse(*outputs) returning the inputs as a tuple; add one or declare invertible=False"),
    ("bare_inverse", "node b (BareInverse): the inverse of BareInverse returned a Tensor, but revstudio needs a "
                     "tuple of 1 tensor(s), one per input port"),
])
def test_an_inverse_that_is_missing_or_not_a_tuple_is_named_at_its_node(runs: dict, name: str, wrong: str) -> None:
    """A missing inverse was 'internal error: AttributeError ... (please report this)'; a bare
    tensor was iterated along the batch and blamed on the forward's shape."""
    run = runs[name]
    text = str(run["err"]) + str(run["out"])
    assert run["code"] == 1, text
    assert wrong in text and LABEL in text and "internal error" not in text, text


def test_a_saved_for_backward_with_ports_as_a_list_is_still_counted() -> None:
    """Port names as a list counted before the checks above came; they must not turn into a warning."""
    from revstudio.core.spec import SavedTensors

    assert SavedTensors(ports=["in"], values=4.0).problem() is None  # type: ignore[arg-type]
    assert SavedTensors(ports="in").problem() == "ports='in': it must be a tuple of port names"  # type: ignore[arg-type]


def test_a_build_that_asks_its_context_for_infers_input_is_told_what_it_has(runs: dict) -> None:
    """``ctx.input("in")`` works in infer; in build it said only "'BuildContext' object has no
    attribute 'input'", with no line of the plugin and no word on what build's ctx holds."""
    err = str(runs["asks_for_input"]["err"])
    line = SLOPPY.splitlines().index('    return layers.Scale(ctx.input("in")[0])   # infer\'s ctx has input(port); '
                                     "build's does not") + 1
    assert (f"b (AsksForInput): could not build the layer: 'BuildContext' object has no attribute 'input', in "
            f"sloppy.nodes, line {line}; build's ctx has params, in_shapes and out_shapes") in err, err
    assert "ctx.in_shapes[0] for the first input" in err and LABEL in err and "internal error" not in err


def test_port_names_a_project_file_cannot_hold_are_refused_with_the_reason(runs: dict) -> None:
    """A port 'in.a' (the file writes 'node.port'), '' or a repeated name was taken: the node could
    not be wired ("there is no node 'b.in'" on load) or took one edge for two inputs, silently."""
    problems = "\n".join(p["message"] for p in json.loads(runs["plugins"]["out"])["problems"] if p["plugin"] == LABEL)
    assert ("node type 'DottedPort' skipped: its inputs include 'in.a', which cannot be a port name: use letters, "
            "digits and underscores (no dot: a project file writes a port as 'node.port')") in problems, problems
    assert "node type 'TwicePort' skipped: its inputs name 'in' twice; give each port its own name" in problems
    message = _errors(runs["RuleDottedPort"])["b"]
    assert message.startswith("RuleDottedPort: its outputs include 'out.0', which cannot be a port name"), message
    assert f"a bug in the plugin {LABEL}" in message


def test_a_count_params_that_is_not_a_count_is_named_not_truncated_or_called_infer(runs: dict) -> None:
    """count_params returning 2.5 was counted as 2 weights; returning None or raising was reported as
    'infer raised TypeError' (the plugin's infer was fine)."""
    for name, got in (("NoneCount", "None"), ("HalfCount", "2.5")):
        run = runs[name]
        message = _errors(run)["b"]
        assert message.startswith(f"count_params returned {got}, not a number of weights (a whole number, "
                                  "0 or more)"), message
        assert LABEL in message and json.loads(str(run["out"]))["parameters"] == 1 * 4  # GoodScale's only
    raising = runs["RaisingCount"]
    message = _errors(raising)["b"]
    assert message.startswith(f"the plugin {LABEL} failed to count this node's weights (ZeroDivisionError"), message
    assert "node type 'RaisingCount': count_params raised ZeroDivisionError" in str(raising["err"])


def test_an_example_with_one_shape_for_the_list_of_input_shapes_is_named_and_the_type_loads(runs: dict) -> None:
    """examples=(({}, (3, 4)),) loaded silently and stopped the catalog tests' collection ("'int' object
    is not iterable"); it is now a plugin problem saying what to write, and the type still works."""
    info = json.loads(runs["plugins"]["out"])
    assert "OneShapeExample" in [p for p in info["plugins"] if p["distribution"] == "revstudio-sloppy"][0]["types"]
    problems = [p["message"] for p in info["problems"] if p["plugin"] == LABEL]
    assert ("node type 'OneShapeExample': its example 1 gives one shape, (3, 4), where a shape per input port is "
            "meant: write ((3, 4),); revstudio's catalog tests leave its examples out until it is fixed") in problems


def test_a_type_without_count_params_whose_layer_has_weights_is_reported_once(runs: dict) -> None:
    """No count_params means 0 weights to the check and the estimate; a layer with 4 said nothing."""
    run = runs["uncounted"]
    assert run["code"] == 0, run
    warning = (f"plugin {LABEL}: node type 'UncountedScale' declares no count_params but build made 4 weights "
               "(node b); the check's parameter count and the memory estimate count 0")
    assert str(run["err"]).count(warning) == 1, run["err"]
