"""Taking an exported model into production code: the PyTorch tools a user reaches for first
(torch.export, torch.compile for inference, torch.jit.script, torch.jit.trace) either work
quietly or refuse in words naming the region or model and the way out, never in torch's own
words about FakeTensors, data pointers or keyword-only arguments."""
from __future__ import annotations

import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from revstudio.codegen import export  # noqa: E402
from revstudio.core.project import load  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"


def _model(example: str = "digits_revnet", shape: tuple[int, ...] = (3, 1, 8, 8)):
    namespace: dict = {}
    exec(compile(export(load(str(EXAMPLES / f"{example}.revs"))), "exported.py", "exec"), namespace)
    torch.manual_seed(0)
    model = namespace["Model"]()
    model.eval()
    return model, torch.randn(*shape)


def test_torch_export_of_reversible_mode_names_the_region_and_the_mode_to_use() -> None:
    """torch.export in reversible mode failed with torch's "Cannot access data pointer of Tensor
    (e.g. FakeTensor, FunctionalTensor) ... wrap the custom kernel into an opaque custom op"."""
    model, x = _model()
    for grad_mode in (torch.enable_grad, torch.no_grad):
        with pytest.raises(RuntimeError) as info, grad_mode():
            torch.export.export(model, (x,))
        text = str(info.value)
        assert "'region-block0_split'" in text and "torch.export" in text, text
        assert 'model.mode = "standard"' in text and "FakeTensor" not in text, text
    model.mode = "standard"
    program = torch.export.export(model, (x,))
    with torch.no_grad():
        assert torch.allclose(program.module()(x), model(x), atol=1e-5)


def test_compiled_inference_in_reversible_mode_runs_the_region_eagerly_and_quietly() -> None:
    """Under torch.no_grad a compiled model's region was traced into: dynamo broke the graph at
    each in-place stream update and warned "Dynamo does not know how to trace the builtin
    `<unknown module>.Tensor.add_`" (and sub_); the region now runs eagerly, one graph break."""
    torch._dynamo.reset()
    model, x = _model()
    with torch.no_grad():
        expected = model(x)
    compiled = torch.compile(model, backend="eager")
    with warnings.catch_warnings(record=True) as seen, torch.no_grad():
        warnings.simplefilter("always")
        got = compiled(x)
    assert torch.equal(got, expected)
    dynamo_words = [str(w.message) for w in seen if "Dynamo" in str(w.message)]
    assert dynamo_words == [], dynamo_words


def test_jit_script_names_the_model_and_the_tools_that_work() -> None:
    """torch.jit.script failed with TorchScript's "Compiled functions can't take variable number
    of arguments or use keyword-only arguments with defaults", pointing at forward's *more (the
    compiled module's at its **named)."""
    from revstudio.compiler.module import compile as compile_graph

    model, _ = _model()
    compiled = compile_graph(load(str(EXAMPLES / "digits_revnet.revs")), device="cpu")
    for module, name in ((model, "Model"), (compiled, "CompiledModel")):
        with pytest.raises(RuntimeError) as info:
            torch.jit.script(module)
        text = str(info.value)
        assert text.startswith(f"{name}: torch.jit.script cannot compile this model"), text
        assert "torch.jit.trace" in text and 'model.mode = "standard"' in text, text


@pytest.mark.parametrize("example, shape", [("digits_revnet", (3, 1, 8, 8)), ("glow_flow", (3, 3, 16, 16))])
def test_jit_trace_in_standard_mode_is_quiet_and_takes_other_batch_sizes(example: str, shape: tuple) -> None:
    """torch.jit.trace in standard mode warned three TracerWarnings ("Converting a tensor to a
    Python boolean might cause the trace to be incorrect") about forward's checks of the batch."""
    model, x = _model(example, shape)
    model.mode = "standard"
    with torch.no_grad():
        model(x)  # (a flow's ActNorm initialises from its first batch, as revstudio's does)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        traced = torch.jit.trace(model, (x,))
    tracer = [str(w.message) for w in seen if issubclass(w.category, torch.jit.TracerWarning)]
    assert tracer == [], tracer
    other = torch.randn(5, *shape[1:])
    with torch.no_grad():
        assert torch.allclose(traced(other), model(other), atol=1e-5)


def test_torch_export_of_a_flow_loaded_from_a_checkpoint() -> None:
    """A flow's trained weights loaded into a fresh exported Model (or compiled module) did not
    export: the exported Model's initialize called itself until Python's RecursionError, the
    compiled module failed with torch's "Could not guard on data-dependent expression" (both
    re-read ActNorm's flag inside forward, which torch.export runs on fake tensors). Now a load
    reads the flags; a model that never saw a batch is refused saying what to do."""
    from revstudio.compiler.module import compile as compile_graph

    trained, x = _model("glow_flow", (3, 3, 16, 16))
    with torch.no_grad():
        trained(x)  # ActNorm initialises from this batch: the weights a run's checkpoint holds
    state = trained.state_dict()
    fresh, _ = _model("glow_flow", (3, 3, 16, 16))
    compiled = compile_graph(load(str(EXAMPLES / "glow_flow.revs")), device="cpu")
    for model, name in ((fresh, "Model"), (compiled, "CompiledModel")):
        model.mode = "standard"
        with pytest.raises(RuntimeError) as info:
            torch.export.export(model, (x,))
        text = str(info.value)
        assert text.startswith(f"{name}: torch.export cannot trace the data-dependent initialisation"), text
        assert "load_state_dict" in text, text
        model.load_state_dict(state)
        model.eval()
        program = torch.export.export(model, (x,))
        with torch.no_grad():
            assert torch.allclose(program.module()(x), trained(x), atol=1e-5)


def test_torch_export_of_a_flow_is_quiet_and_with_logdet_records_its_logdet() -> None:
    """torch.export of a flow warned that the layers' ``logdet`` attributes were assigned during export,
    the program returned no log-determinant, and ``model.logdet`` was the trace's FakeTensor after it."""
    from revstudio.compiler.module import compile as compile_graph

    exported, x = _model("glow_flow", (3, 3, 16, 16))
    compiled = compile_graph(load(str(EXAMPLES / "glow_flow.revs")), device="cpu")
    compiled.eval()
    for model in (exported, compiled):
        model.mode = "standard"
        z, logdet = model(x), model.logdet  # (ActNorm initialises from this batch)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            plain = torch.export.export(model, (x,))
            both = torch.export.export(model.with_logdet(), (x,))
        assert not [str(w.message) for w in seen if "logdet" in str(w.message)]
        assert type(model.logdet) is torch.Tensor and torch.equal(model.logdet, logdet)  # (the eager one)
        got, got_logdet = both.module()(x)
        assert torch.allclose(got, z, atol=1e-5) and torch.allclose(got_logdet, logdet, atol=1e-4)
        assert torch.allclose(plain.module()(x), z, atol=1e-5)
        eager_z, eager_logdet = model.with_logdet()(x)
        assert torch.equal(eager_z, model(x)) and torch.equal(eager_logdet, model.logdet)

        with pytest.raises(RuntimeError, match=r"logdet: torch.export does not record the log-determinant .* "
                                               r"export model.with_logdet\(\), whose forward returns"):
            torch.export.export(_Pair(model), (x,))  # the read that used to be the way: a constant now


class _Pair(torch.nn.Module):
    """``(model(x), model.logdet)``: the log-determinant read as an attribute after forward."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> tuple:
        return self.model(x), self.model.logdet


def _header_recipe(source: str) -> str:
    """The indented lines of the exported file's docstring: how to use the Model."""
    doc = source.split('"""')[1]
    return "\n".join(line[4:] for line in doc.splitlines() if line.startswith("    "))


def test_the_files_header_shows_eval_and_a_flows_inverse_and_logdet_and_runs(tmp_path) -> None:
    """The header said how to load a checkpoint and pick a mode, but not model.eval(), and
    nothing at the top of the file said an invertible network's inverse (or a flow's logdet)
    is a method of the exported Model."""
    source = export(load(str(EXAMPLES / "glow_flow.revs")))
    recipe = _header_recipe(source)
    assert "model.eval()" in recipe and "model.inverse(z)" in recipe and "model.logdet" in recipe, recipe
    namespace: dict = {}
    exec(compile(source, "exported.py", "exec"), namespace)
    torch.manual_seed(0)
    trained = namespace["Model"]()
    x = torch.randn(4, 3, 16, 16)
    with torch.no_grad():
        trained(x)
    torch.save({"model": trained.state_dict()}, tmp_path / "last.pt")
    scope = {"torch": torch, "Model": namespace["Model"], "x": x.clone()}
    with torch.no_grad():
        exec(recipe.replace('"last.pt"', repr(str(tmp_path / "last.pt"))), scope)  # noqa: S102
    assert scope["log_det"].shape == (4,)
    assert torch.allclose(scope["x"], x, atol=1e-4)
    plain = _header_recipe(export(load(str(EXAMPLES / "digits_revnet.revs"))))
    assert "model.eval()" in plain and "inverse" not in plain and "logdet" not in plain, plain


def test_torch_export_with_a_dynamic_batch_takes_any_batch_and_with_logdet_nests_its_inputs() -> None:
    """docs/cli.md's recipe for a service's batches: an exported program kept its example's batch
    size (torch's "Guard failed: image.size()[0] == 4" for any other), and with_logdet() takes
    `*inputs`, so its dynamic_shapes nest one level deeper."""
    from torch.export import Dim

    model, x = _model(shape=(4, 1, 8, 8))
    model.mode = "standard"
    batch = Dim("batch")
    program = torch.export.export(model, (x,), dynamic_shapes=({0: batch},)).module()
    for n in (1, 7):
        xs = torch.randn(n, 1, 8, 8)
        with torch.no_grad():
            assert torch.allclose(program(xs), model(xs), atol=1e-5)
    flow, z_in = _model("glow_flow", (4, 3, 16, 16))
    flow.mode = "standard"
    with torch.no_grad():
        flow(z_in)  # (ActNorm initialises from a first batch, which torch.export cannot trace)
    wrapped = torch.export.export(flow.with_logdet(), (z_in,), dynamic_shapes=(({0: batch},),)).module()
    one = torch.randn(1, 3, 16, 16)
    z, logdet = wrapped(one)
    with torch.no_grad():
        assert torch.allclose(z, flow(one), atol=1e-5) and torch.allclose(logdet, flow.logdet, atol=1e-4)


def test_the_exported_model_on_the_meta_device_gives_shapes_in_reversible_mode() -> None:
    """The exported file's runtime is the compiler's: model.to("meta") in reversible mode failed with
    torch's "unknown device type for autocast" there too."""
    model, x = _model()
    model.train()
    model = model.to("meta")
    x = x.to("meta").requires_grad_()
    y = model(x)
    assert y.device.type == "meta" and y.shape[0] == 3
    y.sum().backward()
    assert x.grad is not None and x.grad.shape == x.shape


def test_the_exported_model_says_what_to_do_with_a_batch_of_one_through_a_batch_norm() -> None:
    """The exported file's forward let torch's bare "Expected more than 1 value per channel when
    training" through at a training batch of one sample."""
    from revstudio.core.graph import Graph

    g = Graph("mlp")
    g.add_node("Input", "feat", {"shape": [6]})
    g.add_node("Linear", "fc", {"out_features": 8})
    g.add_node("Norm", "bn", {"kind": "batch"})
    g.add_node("Output", "out")
    for a, b in (("feat", "fc"), ("fc", "bn"), ("bn", "out")):
        g.connect(f"{a}.out", f"{b}.in")
    namespace: dict = {}
    exec(compile(export(g), "exported.py", "exec"), namespace)
    model = namespace["Model"]()
    with pytest.raises(ValueError, match=r"^a batch Norm layer sees one value per channel in this training batch "
                                         r"of 1, .*batch of 2 or more.*model\.eval\(\)"):
        model(torch.randn(1, 6))
    model.eval()
    assert model(torch.randn(1, 6)).shape == (1, 8)
