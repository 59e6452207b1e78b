"""The scripting API as a notebook uses it (DESIGN section 3): ``rs.load/check/compile/export/save``
called with what a person passes by mistake, and a compiled model used as a PyTorch module.

Each mistake must be refused at the call, naming what was given and what to pass, not fail
deep inside the check or inside torch.
"""
from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
import torch

import revstudio as rs
from revstudio.compiler import CompileError
from revstudio.core.examples import example_projects
from revstudio.core.graph import GraphError

torch.set_num_threads(1)


def _chain() -> rs.Graph:
    g = rs.Graph("chain")
    g.add_node("Input", "x", {"shape": [4, 8]})
    g.add_node("Conv", "c", {"out_channels": 4, "kernel_size": 3, "padding": "same"})
    g.add_node("Conv", "d", {"out_channels": 4, "kernel_size": 3, "padding": "same"})
    g.add_node("Output", "y")
    g.connect("x.out", "c.in")
    g.connect("c.out", "d.in")
    g.connect("d.out", "y.in")
    return g


@pytest.mark.parametrize("call", ["check", "compile", "export"])
def test_a_path_given_for_the_graph_is_refused_with_the_load_to_write(call: str) -> None:
    with pytest.raises(TypeError, match=rf"rs\.{call} takes a revstudio Graph, got the str 'model\.revs'; "
                                        rf"load the project first: rs\.{call}\(rs\.load\('model\.revs'\)\)"):
        getattr(rs, call)("model.revs")


@pytest.mark.parametrize("call", ["check", "compile", "export"])
def test_none_or_parsed_json_for_the_graph_is_refused(call: str) -> None:
    for value, got in ((None, "NoneType"), ({"nodes": []}, "dict")):
        with pytest.raises(TypeError, match=rf"rs\.{call} takes a revstudio Graph, got {got}; load one with rs\.load"):
            getattr(rs, call)(value)


def test_save_with_the_arguments_swapped_says_the_graph_comes_first(tmp_path: Path) -> None:
    target = tmp_path / "m.revs"
    with pytest.raises(TypeError, match=r"rs\.save takes a revstudio Graph, got the str .*; the graph comes "
                                        r"first: rs\.save\(graph, path\)"):
        rs.save(str(target), _chain())  # type: ignore[arg-type]
    assert not target.exists()


def test_compile_refuses_a_report_made_before_an_edit_naming_the_node() -> None:
    g = _chain()
    report = rs.check(g)
    g.set_param("c", "out_channels", 6)  # d was sized for 4 channels by that report
    with pytest.raises(CompileError, match=r"chain: the report is of an earlier state of the graph \(node 'c' "
                                           r"has other params or another type since rs\.check made it\)"):
        rs.compile(g, device="cpu", report=report)
    g.set_param("c", "out_channels", 4)
    g.remove_node("d")
    with pytest.raises(CompileError, match=r"node 'd' was removed"):
        rs.compile(g, device="cpu", report=report)


def test_compile_takes_a_report_of_the_graph_as_it_is() -> None:
    g = _chain()
    report = rs.check(g)
    g.move("c", (40, 40))  # a move changes no shape
    model = rs.compile(g, device="cpu", report=report)
    assert model(torch.randn(2, 4, 8)).shape == (2, 4, 8)


def test_compile_refuses_a_report_that_is_not_one() -> None:
    with pytest.raises(TypeError, match=r"rs\.compile: report must be what rs\.check\(graph\) returns, got str"):
        rs.compile(_chain(), device="cpu", report="valid")


@pytest.mark.parametrize("batch", [-1, 0, 2.5, "32", True])
def test_check_refuses_a_batch_that_is_not_a_number_of_samples(batch: object) -> None:
    with pytest.raises(ValueError, match=rf"rs\.check: batch {batch!r} is not a number of samples; use a whole "
                                         r"number >= 1, or None"):
        rs.check(_chain(), batch=batch)  # type: ignore[arg-type]


def test_check_prices_the_batch_it_is_given() -> None:
    assert rs.check(_chain(), batch=3).estimate.batch == 3


def test_the_estimate_refuses_a_mode_it_has_no_figures_for() -> None:
    estimate = rs.check(_chain()).estimate
    for ask in (estimate.peak_bytes, estimate.activation_bytes):
        with pytest.raises(ValueError, match=r"mode 'rev' is not known; use one of standard, reversible, checkpoint"):
            ask("rev")
    assert estimate.peak_bytes("reversible") > 0


def _two_inputs() -> rs.Graph:
    g = rs.Graph("two")
    g.add_node("Input", "a", {"shape": [3]})
    g.add_node("Input", "b", {"shape": [3]})
    g.add_node("Merge", "m", {"mode": "sub"})
    g.add_node("Output", "y")
    for s, d in (("a.out", "m.in0"), ("b.out", "m.in1"), ("m.out", "y.in")):
        g.connect(s, d)
    return g


@pytest.mark.parametrize("mode", ["standard", "reversible", "checkpoint"])
def test_forward_takes_inputs_by_their_input_node_ids_as_the_exported_model_does(mode: str) -> None:
    model = rs.compile(_two_inputs(), mode=mode, device="cpu")
    a, b = torch.randn(2, 3), torch.randn(2, 3)
    want = model(a, b)
    assert torch.equal(model(a=a, b=b), want)
    assert torch.equal(model(b=b, a=a), want)  # by name, in any order
    assert torch.equal(model(a, b=b), want)


def test_a_keyword_no_input_node_has_is_refused_naming_them_in_order() -> None:
    model = rs.compile(_two_inputs(), device="cpu")
    a = torch.randn(2, 3)
    with pytest.raises(TypeError, match=r"two: expected 2 input tensor\(s\), one per Input node in this order: "
                                        r"'a' \(batch, 3\), 'b' \(batch, 3\); got 1 and 'c' by name\. Pass one "
                                        r"tensor per Input node, by position or by name: model\(a, b\)"):
        model(a, c=a)
    with pytest.raises(TypeError, match=r"got 1 and 'a' by name"):
        model(a, a=a)  # given twice


def test_measure_inversion_checks_its_batch_as_forward_does() -> None:
    model = rs.compile(example_projects()["revnet_wired"], device="cpu")
    with pytest.raises(TypeError, match=r"expected 1 input tensor\(s\), one per Input node in this order: "
                                        r"'image' \(batch, 3, 16, 16\); got 0"):
        model.measure_inversion()
    with pytest.raises(ValueError, match=r"input 'image' expects tensors of shape \(batch, 3, 16, 16\) \(4 "
                                         r"dimensions and 3 channels are checked; .*\), "
                                         r"got \(2, 8, 16, 16\)"):
        model.measure_inversion(torch.randn(2, 8, 16, 16))
    assert set(model.measure_inversion(torch.randn(2, 3, 16, 16))) == {r.id for r in model.regions}


def test_help_tells_what_the_docs_say() -> None:
    """``help(model.mode)`` or ``help(g.add_node)`` in a notebook: the public names say what they
    take; forward's was nn.Module's own "Should be overridden by all subclasses"."""
    from revstudio.compiler import CompiledModel

    def doc(obj: object) -> str:
        return " ".join((inspect.getdoc(obj) or "").split())

    assert "Input node" in doc(CompiledModel.forward) and "overridden" not in doc(CompiledModel.forward)
    for words in ('"reversible"', '"standard"', '"checkpoint"', "same weights"):
        assert words in doc(CompiledModel.mode) and words in doc(rs.compile)
    assert "Input" in doc(CompiledModel.plan) and "number type" in doc(CompiledModel.dtype)
    assert 'g.add_node("Input", "x", {"shape": [8, 16, 16]})' in doc(rs.Graph)
    for method, words in ((rs.Graph.add_node, "params"), (rs.Graph.connect, '"<node id>.<port>"'),
                          (rs.Graph.remove_node, "every wire")):
        assert words in doc(method), method.__name__


def test_the_graph_docstring_example_checks_clean() -> None:
    code = "\n".join(line.strip() for line in inspect.getdoc(rs.Graph).splitlines() if line.startswith("    "))
    space = {"rs": rs}
    exec(compile(code, "<Graph docstring>", "exec"), space)  # noqa: S102 - our own docstring
    assert rs.check(space["g"]).valid


@pytest.mark.parametrize("kwargs, words", [
    ({"params": [("out_channels", 8)]}, r"node 'c': params must be a dict of name -> value, got list"),
    ({"pos": 5}, r"node 'c': pos must be two numbers \(x, y\), got 5"),
    ({"pos": (1, 2, 3)}, r"node 'c': pos must be two numbers \(x, y\), got \(1, 2, 3\)"),
])
def test_add_node_refuses_params_or_pos_of_the_wrong_kind_naming_the_node(kwargs: dict, words: str) -> None:
    g = rs.Graph()
    with pytest.raises(GraphError, match=words):
        g.add_node("Conv", "c", **kwargs)
    assert "c" not in g


@pytest.mark.parametrize("graph", [lambda: rs.Graph("blank"), lambda: _chain()], ids=["empty", "no-output"])
def test_compile_refuses_a_graph_with_no_output_node(graph) -> None:
    g = graph()
    if "y" in g:
        g.remove_node("y")  # forgotten: the model returned () and .sum() failed on a tuple
    with pytest.raises(CompileError, match=rf"{g.name}: the graph has no Output node, so the model would return "
                                           r"nothing; add an Output node after the layer"):
        rs.compile(g, device="cpu")


def test_export_still_writes_a_graph_being_drawn_without_an_output() -> None:
    g = _chain()
    g.remove_node("y")
    assert "class Model(" in rs.export(g)


def test_numpy_and_torch_numbers_build_a_graph_that_checks_compiles_and_saves(tmp_path: Path) -> None:
    """Sizes a notebook computed (``np.prod``, ``x.shape``, ``torch.tensor(4)``) were refused by
    the check as "expected an integer, got np.int64(4)" and could not be saved as JSON."""
    np = pytest.importorskip("numpy")
    g = rs.Graph("computed")
    g.add_node("Input", "x", {"shape": np.array([4, 8])})
    g.add_node("Conv", "c", {"out_channels": np.int64(4), "kernel_size": torch.tensor(3), "padding": "same"})
    g.add_node("Dropout", "p", {"p": np.float32(0.25)})
    g.add_node("Output", "y")
    for s, d in (("x.out", "c.in"), ("c.out", "p.in"), ("p.out", "y.in")):
        g.connect(s, d)
    g.set_param("c", "out_channels", torch.Size([6])[0])
    g.set_param("x", "shape", torch.Size([4, 8]))
    assert g.node("x").params["shape"] == [4, 8] and type(g.node("c").params["out_channels"]) is int
    assert type(g.node("c").params["kernel_size"]) is int and type(g.node("p").params["p"]) is float
    assert rs.check(g).valid, [str(d) for d in rs.check(g).diagnostics]
    assert rs.compile(g, device="cpu")(torch.randn(2, 4, 8)).shape == (2, 6, 8)
    rs.save(g, tmp_path / "computed.revs")
    assert rs.load(tmp_path / "computed.revs").node("c").params["out_channels"] == 6


def test_dir_lists_the_lazy_api_names_before_their_first_use() -> None:
    """A notebook completes ``rs.<Tab>`` from ``dir(rs)``, which showed none of the API until used."""
    import subprocess
    import sys

    code = ("import revstudio as rs, revstudio.compiler as c; "
            "print(sorted(set(rs.__all__) - set(dir(rs))), sorted(set(c.__all__) - set(dir(c))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout
    assert out.split() == ["[]", "[]"], out


def test_export_refuses_a_training_section_that_is_not_a_dict() -> None:
    with pytest.raises(TypeError, match=r"rs\.export: training must be a dict like the project's training section "
                                        r"\(\{'lr': 0\.001, 'steps': 400\}\), got str"):
        rs.export(_chain(), training="lr=0.1")  # type: ignore[arg-type]


def test_a_param_json_cannot_hold_is_refused_naming_the_file_and_the_node(tmp_path: Path) -> None:
    from revstudio.core.project import ProjectError

    g = _chain()
    g.set_param("c", "out_channels", {4})  # a set: JSON has none
    target = tmp_path / "m.revs"
    with pytest.raises(ProjectError, match=rf"^{re.escape(str(target))}: not saved, the file on disk is unchanged: "
                                           r"node 'c': cannot be saved as JSON"):
        rs.save(g, target)
    assert not target.exists()


def test_inverse_takes_outputs_by_their_output_node_ids_as_the_exported_model_does() -> None:
    model = rs.compile(example_projects()["glow_flow"], device="cpu", dtype=torch.float64)
    out = model.plan.outputs[0].node
    z = torch.randn(2, 12, 8, 8, dtype=torch.float64)
    with torch.no_grad():
        model(torch.rand(2, 3, 16, 16, dtype=torch.float64))  # (ActNorm's data-dependent init)
        assert torch.equal(model.inverse(**{out: z}), model.inverse(z))
    with pytest.raises(TypeError, match=rf"inverse expects 1 tensor\(s\), one per Output node in this order: "
                                        rf"'{out}'; got 0 and 'x' by name\. Pass them by position or by name: "
                                        rf"model\.inverse\({out}\)"):
        model.inverse(x=z)
    with pytest.raises(TypeError, match=r"got 2\. Pass them"):
        model.inverse(z, z)


@pytest.mark.parametrize("with_training", [False, True])
def test_export_checks_a_training_section_with_or_without_the_script(with_training: bool) -> None:
    # without with_training a bad section went into the file's reopenable project without a word
    from revstudio.codegen import CodegenError

    for bad, said in (({"lr": "fast"}, r"training\.lr: expected a number .*got 'fast'"),
                      ({"stepz": 5}, r"training\.stepz: unknown key; the known keys are .*steps"),
                      ({"optimizer": "adamm"}, r"training\.optimizer: 'adamm' is not one of sgd, adam, adamw")):
        with pytest.raises(CodegenError, match=rf"^rs\.export: the training section does not fit: {said}"):
            rs.export(_chain(), with_training=with_training, training=bad)
    assert '"lr": 0.5' in rs.export(_chain(), with_training=with_training, training={"lr": 0.5})


def test_check_takes_the_devices_torch_names_and_refuses_others() -> None:
    # device="gpu" was priced as an accelerator (anything but "cpu" was), without a word
    g = _chain()
    cuda = rs.check(g, batch=4, device="cuda").estimate
    assert cuda is not None
    for same in ("cuda:1", torch.device("cuda", 0)):
        estimate = rs.check(g, batch=4, device=same).estimate
        assert estimate is not None and estimate.peak_bytes("reversible") == cuda.peak_bytes("reversible")
    from types import SimpleNamespace  # (a torch.device of an out-of-tree backend: torch made it)

    for name in ("cpu", "mps", "xpu:0", torch.device("cpu"), SimpleNamespace(type="npu")):
        assert rs.check(g, batch=4, device=name).estimate is not None
    for bad in ("gpu", "CUDA", "cuda:", "cuda:-1", "cuda 0", 0, ""):
        with pytest.raises(ValueError, match=rf"^rs\.check: device {re.escape(repr(bad))} is not a device torch "
                                             r"knows; use 'auto', 'cpu', 'cuda', 'cuda:N', 'mps', 'xpu' .*a torch\.device, "
                                             r"or None for the project's training device"):
            rs.check(g, device=bad)
        if isinstance(bad, str):  # torch refuses them too
            with pytest.raises(RuntimeError):
                torch.device(bad)


def test_check_and_compile_take_the_same_device_names_auto_too() -> None:
    # rs.check(device="auto") and rs.compile(device="auto") were refused, though `--device auto` and
    # `training.device: auto` are the CLI's and the project's default
    from revstudio.diagnostics.device_probe import auto_device

    g = _chain()
    assert rs.check(g, batch=4, device="auto").estimate is not None
    here = rs.check(g, batch=4, device=auto_device()).estimate
    assert here is not None
    assert rs.check(g, batch=4, device="auto").estimate.peak_bytes("reversible") == here.peak_bytes("reversible")
    model = rs.compile(g, device="auto")
    assert next(model.parameters()).device.type == ("cuda" if torch.cuda.is_available() else "cpu")
    for bad in ("gpu", "CUDA", "Auto", "cuda:", 0):  # one message, naming who refused it
        for call, who in ((rs.check, "rs.check"), (rs.compile, "rs.compile")):
            with pytest.raises(ValueError, match=rf"^{re.escape(who)}: device {re.escape(repr(bad))} is not a device "
                                                 r"torch knows; use 'auto', 'cpu', 'cuda', 'cuda:N'"):
                call(g, device=bad)


def test_the_device_types_the_check_takes_are_torchs() -> None:
    from revstudio.diagnostics.device_probe import TORCH_DEVICE_TYPES

    with pytest.raises(RuntimeError, match="Expected one of") as info:
        torch.device("gpu")
    listed = re.search(r"Expected one of (.*?) device type", str(info.value))
    assert listed is not None and tuple(listed.group(1).split(", ")) == TORCH_DEVICE_TYPES
