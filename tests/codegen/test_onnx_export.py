"""ONNX export (`revstudio export FILE -o OUT.onnx`, `rs.export(g, onnx=PATH)`): every example's network as
an ONNX file onnxruntime runs at any batch size, with the compiled module's outputs in every mode, a
flow's log-determinant as an output of its own, and refusals that name the node, the opset or the
package. docs/cli.md said `torch.onnx.export` worked; nothing checked it, and "reversible" mode does
not trace at all (a region's autograd Function)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")
pytest.importorskip("onnxscript")
ort = pytest.importorskip("onnxruntime")

import revstudio as rs  # noqa: E402
from revstudio.codegen.onnx_export import TOLERANCE, OnnxError, export_onnx  # noqa: E402
from revstudio.diagnostics.gradcheck import random_inputs  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "resources" / "examples").glob("*.revs"))
MODES = ("standard", "checkpoint", "reversible")


def warmed_state(graph: Any) -> dict[str, Any]:
    """The weights of the model after one batch (a flow's ActNorm layers initialised from it)."""
    torch.manual_seed(1)
    model = rs.compile(graph, device="cpu")
    with torch.no_grad():
        model(*random_inputs(graph, 8, torch.float32, seed=5, requires_grad=False))
    return model.state_dict()


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``exported(example)``: the example's graph, its warmed weights, the ONNX file of the two and
    export_onnx's answer, each example exported once per module. Most of a test's seconds are the
    export's trace (torch.export), and the flow's log-determinant test asks the very export of
    glow_flow the every-example test makes (same weights, same call)."""
    folder = tmp_path_factory.mktemp("onnx")
    done: dict[str, Any] = {}

    def export(example: Path) -> tuple[Any, dict[str, Any], Path, Any]:
        if example.stem not in done:
            graph = rs.load(str(example))
            state = warmed_state(graph)
            out = folder / f"{example.stem}.onnx"
            done[example.stem] = (graph, state, out, export_onnx(graph, str(out), state=state))
        return done[example.stem]

    return export


def onnx_outputs(path: Path, inputs: tuple[Any, ...]) -> tuple[list[str], list[str], list[Any]]:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    got = session.run(None, {name: t.numpy() for name, t in zip(names, inputs)})
    return names, [o.name for o in session.get_outputs()], got


def flat(value: Any) -> list[Any]:
    return [leaf for part in value for leaf in flat(part)] if isinstance(value, (tuple, list)) else [value]


@pytest.mark.slow  # an export, two onnxruntime runs and three modes per example: 10-40 s each
@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_runs_in_onnxruntime_as_the_compiled_module_does_in_every_mode(
        example: Path, exported: Any) -> None:
    graph, state, out, done = exported(example)
    assert done.max_abs_diff is not None and done.max_abs_diff <= TOLERANCE["float32"]
    x = random_inputs(graph, 3, torch.float32, seed=9, requires_grad=False)  # a batch size never traced
    names, outputs, got = onnx_outputs(out, x)
    assert names == [n.id for n in graph if n.type == "Input"] == list(done.inputs)
    assert outputs == list(done.outputs)
    for mode in MODES:
        model = rs.compile(graph, mode=mode, device="cpu")
        model.load_state_dict(state)
        model.eval()
        with torch.no_grad():
            want = flat(model(*x))
            if model.logdet is not None:
                want.append(model.logdet)
        assert len(want) == len(got), (mode, outputs)
        for name, w, g in zip(outputs, want, got):
            scale = max(1.0, float(w.abs().max()))
            assert float((torch.from_numpy(g) - w).abs().max()) <= TOLERANCE["float32"] * scale, (mode, name)


def test_a_flow_exports_its_log_determinant_as_an_output_named_logdet(exported: Any) -> None:
    graph, state, out, done = exported(ROOT / "resources" / "examples" / "glow_flow.revs")
    assert done.outputs == ("z", "logdet")
    model = rs.compile(graph, device="cpu")
    model.load_state_dict(state)
    x = random_inputs(graph, 1, torch.float32, seed=4, requires_grad=False)
    with torch.no_grad():
        z = model(*x)
    _, _, (z_onnx, logdet_onnx) = onnx_outputs(out, x)
    assert logdet_onnx.shape == (1,)
    assert abs(float(logdet_onnx[0]) - float(model.logdet[0])) <= 1e-4 * max(1.0, abs(float(model.logdet[0])))
    assert float((torch.from_numpy(z_onnx) - z).abs().max()) <= 1e-4


def two_in_two_out() -> Any:
    g = rs.Graph("two-in-two-out")
    g.add_node("Input", "image", {"shape": [2, 6, 6]})
    g.add_node("Input", "extra", {"shape": [5]})
    g.add_node("Conv", "conv", {"out_channels": 4, "kernel_size": 3, "padding": "same"})
    g.add_node("Flatten", "flat")
    g.add_node("Linear", "head", {"out_features": 3})
    g.add_node("Linear", "side", {"out_features": 2})
    g.add_node("Output", "logits")
    g.add_node("Output", "aux")
    for a, b in (("image", "conv"), ("conv", "flat"), ("flat", "head"), ("head", "logits"), ("extra", "side"),
                 ("side", "aux")):
        g.connect(f"{a}.out", f"{b}.in")
    return g


def test_several_inputs_and_outputs_keep_the_node_ids_as_names_in_node_order(tmp_path: Path) -> None:
    graph = two_in_two_out()
    assert rs.check(graph).valid
    model = rs.compile(graph, device="cpu")
    done = rs.export(graph, onnx=tmp_path / "two.onnx", weights=model.state_dict())
    assert (done.inputs, done.outputs) == (("image", "extra"), ("logits", "aux"))
    x = random_inputs(graph, 7, torch.float32, seed=2, requires_grad=False)
    with torch.no_grad():
        want = model(*x)
    names, outputs, got = onnx_outputs(tmp_path / "two.onnx", x)
    assert (names, outputs) == (["image", "extra"], ["logits", "aux"])
    for w, g in zip(want, got):
        assert float((torch.from_numpy(g) - w).abs().max()) <= 1e-5


def test_a_flow_that_never_saw_a_batch_is_refused_naming_its_actnorm_nodes_and_nothing_is_written(
        tmp_path: Path) -> None:
    graph = rs.load(str(ROOT / "resources" / "examples" / "glow_flow.revs"))
    out = tmp_path / "glow.onnx"
    out.write_bytes(b"the file from before")
    with pytest.raises(OnnxError) as err:
        export_onnx(graph, str(out))
    assert "node actnorm0" in str(err.value) and "node actnorm1" in str(err.value)
    assert "trained weights" in str(err.value)
    assert out.read_bytes() == b"the file from before"
    assert os.listdir(tmp_path) == ["glow.onnx"]


def test_weights_given_to_rs_export_are_the_ones_in_the_file(tmp_path: Path) -> None:
    graph = rs.load(str(ROOT / "resources" / "examples" / "digits_revnet.revs"))
    torch.manual_seed(3)
    state = {k: v + 0.01 * torch.randn_like(v) if v.is_floating_point() else v
             for k, v in rs.compile(graph, device="cpu").state_dict().items()}
    torch.save(state, tmp_path / "w.pt")
    rs.export(graph, onnx=str(tmp_path / "d.onnx"), weights=str(tmp_path / "w.pt"))
    model = rs.compile(graph, device="cpu")
    model.load_state_dict(state)
    x = random_inputs(graph, 2, torch.float32, seed=8, requires_grad=False)
    with torch.no_grad():
        want = model(*x)
    _, _, (got,) = onnx_outputs(tmp_path / "d.onnx", x)
    assert float((torch.from_numpy(got) - want).abs().max()) <= 1e-5


def test_rs_export_refuses_what_belongs_to_the_other_format(tmp_path: Path) -> None:
    graph = two_in_two_out()
    with pytest.raises(TypeError, match="onnx='model.onnx'"):
        rs.export(graph, opset=18)
    with pytest.raises(TypeError, match="with_training"):
        rs.export(graph, onnx=str(tmp_path / "x.onnx"), with_training=True)
    with pytest.raises(OnnxError, match="is a folder"):
        rs.export(graph, onnx=str(tmp_path))
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(("opset", "words"), [(13, "fell back to 18"), (10_000, "choose one"), ("18", "choose one")])
def test_an_opset_the_exporter_cannot_write_is_refused_naming_it(tmp_path: Path, opset: Any, words: str) -> None:
    with pytest.raises(OnnxError) as err:
        rs.export(two_in_two_out(), onnx=str(tmp_path / "x.onnx"), opset=opset)
    assert f"opset {opset!r}" in str(err.value) or f"opset {opset}" in str(err.value)
    assert words in str(err.value)
    assert not (tmp_path / "x.onnx").exists()


def test_an_opset_it_can_write_is_the_files(tmp_path: Path) -> None:
    import onnx

    done = rs.export(two_in_two_out(), onnx=str(tmp_path / "x.onnx"), opset=17)
    assert done.opset == 17
    model = onnx.load(str(tmp_path / "x.onnx"))
    assert [e.version for e in model.opset_import if e.domain in ("", "ai.onnx")] == [17]


def test_the_exported_model_class_goes_to_onnx_in_standard_and_checkpoint_mode_not_reversible(
        tmp_path: Path) -> None:
    """docs/cli.md's facts about `torch.onnx.export` of the exported `Model` (the code export)."""
    import importlib.util

    graph = rs.load(str(ROOT / "resources" / "examples" / "digits_revnet.revs"))
    (tmp_path / "digits_model.py").write_text(rs.export(graph), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("digits_model", tmp_path / "digits_model.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = random_inputs(graph, 2, torch.float32, requires_grad=False)
    later = random_inputs(graph, 5, torch.float32, seed=7, requires_grad=False)
    batch = ({0: torch.export.Dim("batch")},)
    for mode in ("standard", "checkpoint"):
        model = module.Model().eval()
        model.mode = mode
        program = torch.onnx.export(model, x, None, dynamo=True, dynamic_shapes=batch, verbose=False)
        session = ort.InferenceSession(program.model_proto.SerializeToString(), providers=["CPUExecutionProvider"])
        (got,) = session.run(None, {session.get_inputs()[0].name: later[0].numpy()})
        with torch.no_grad():
            want = model(*later)
        assert float((torch.from_numpy(got) - want).abs().max()) <= 1e-5, mode
    model = module.Model().eval()
    model.mode = "reversible"
    with pytest.raises(Exception, match="reversible"):
        torch.onnx.export(model, x, None, dynamo=True, dynamic_shapes=batch, verbose=False)
