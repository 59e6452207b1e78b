"""What the exported Model offers a user beside forward, as ``revstudio.compile``'s module does:
the refusal of a bad batch, ``logdet`` and ``inverse``, and the loading line its docstring shows."""
from __future__ import annotations

import ast
import re

import pytest

torch = pytest.importorskip("torch")

from revstudio.codegen import export  # noqa: E402
from revstudio.compiler import compile as rs_compile  # noqa: E402
from revstudio.core import generate  # noqa: E402


def _pair(graph, source=None):
    """(compiled, exported, namespace) with the same weights; the export runs in this process."""
    torch.manual_seed(0)
    compiled = rs_compile(graph, device="cpu")
    namespace: dict[str, object] = {"__name__": "exported_for_test"}
    exec(compile(source or export(graph), "exported.py", "exec"), namespace)  # generated code
    exported = namespace["Model"]()  # type: ignore[operator]
    exported.load_state_dict(compiled.state_dict())
    return compiled, exported, namespace


def _refusal(model, *inputs):
    try:
        model(*inputs)
    except Exception as exc:  # the very type and words are compared
        return type(exc), str(exc)
    return None


BAD_BATCHES = {
    "integers": lambda x: x.long(),
    "no samples": lambda x: x[:0],
    "no batch axis": lambda x: x[0],
    "other channels": lambda x: torch.cat([x, x], 1),
    "a numpy array": lambda x: x.numpy(),
    "a list": lambda x: [x],
}


@pytest.mark.parametrize("graph", ["flow", "revnet"])
@pytest.mark.parametrize("bad", list(BAD_BATCHES))
def test_a_bad_batch_is_refused_with_the_compiled_modules_words(graph: str, bad: str) -> None:
    """An integer batch went into a flow and came out as numbers; a numpy array failed with
    "'str' object has no attribute 'type'"; an empty batch with a size mismatch deep inside."""
    g = generate.glow_repeat(1) if graph == "flow" else generate.revnet_chain(1, channels=4, size=4, wired=True)
    compiled, exported, _ = _pair(g)
    op = compiled.plan.inputs[0]
    x = BAD_BATCHES[bad](torch.randn(2, *op.shape))
    expected = _refusal(compiled, x)
    assert expected is not None and op.node in expected[1]
    assert _refusal(exported, x) == expected


def test_float32_into_a_float64_model_is_refused_as_compiled() -> None:
    """model.to(torch.float64) then a float32 batch: ActNorm and InvConv1x1 computed it half in each type."""
    compiled, exported, _ = _pair(generate.glow_repeat(1))
    compiled.to(torch.float64)
    exported.to(torch.float64)
    x = torch.randn(2, *compiled.plan.inputs[0].shape)
    expected = _refusal(compiled, x)
    assert expected is not None and expected[0] is TypeError and "model.to(torch.float32)" in expected[1]
    assert _refusal(exported, x) == expected
    assert exported(x.double()).dtype == torch.float64  # the right type still runs


@pytest.mark.parametrize("name", ["revnet", 'a "quoted"\n\tname\\ ' + "x" * 120 + " \u2028end"])
def test_a_model_without_flows_has_logdet_none_and_an_inverse_that_says_why(name: str) -> None:
    """``model.logdet`` and ``model.inverse`` were AttributeErrors on an exported RevNet; the
    compiled module answers None and raises NotImplementedError naming its regions."""
    graph = generate.revnet_chain(1, channels=4, size=4, wired=True)
    graph.name = name
    compiled, exported, _ = _pair(graph)
    x = torch.randn(2, 4, 4, 4)
    out = exported(x)
    compiled(x)
    assert compiled.logdet is None and exported.logdet is None
    with pytest.raises(NotImplementedError) as want:
        compiled.inverse(out)
    with pytest.raises(NotImplementedError) as got:
        exported.inverse(out)
    assert str(got.value) == str(want.value) and "not invertible end to end" in str(got.value)


@pytest.mark.parametrize("with_training", [False, True], ids=["plain", "training"])
def test_the_docstrings_loading_lines_load_a_revstudio_checkpoint(tmp_path, monkeypatch, with_training) -> None:
    """The file's docstring showed ``model.load_state_dict(torch.load("checkpoint.pt"))``, but a
    revstudio checkpoint (and the script's own checkpoint.pt) is a dict holding ``model``."""
    graph = generate.revnet_chain(1, channels=4, size=4, wired=True)
    source = export(graph, with_training=with_training)
    compiled, _exported, namespace = _pair(graph, source)
    doc = ast.get_docstring(ast.parse(source), clean=False) or ""
    usage = [line[4:] for line in doc.splitlines() if line.startswith("    ") and "load" in line]
    assert usage, doc
    for name in re.findall(r'torch\.load\("([^"]+)"', "\n".join(usage)):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save({"format": "revstudio-checkpoint", "step": 3, "model": compiled.state_dict()}, path)
    monkeypatch.chdir(tmp_path)
    exec("model = Model()\n" + "\n".join(line for line in usage if "Model()" not in line), namespace)
    model = namespace["model"]
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), compiled.state_dict().values()))


def test_a_float64_input_gives_float64_weights_as_compiled() -> None:
    """An Input node declaring float64 makes revstudio.compile build float64 weights; Model() built
    float32 ones, so a revstudio checkpoint loaded into it was rounded to float32 without a word."""
    b = generate.Builder("double-input")
    b.node("Input", "x", shape=[4, 4, 4], dtype="float64")
    src = generate.wired_block(b, "x.out", "blk", 4)
    generate.classifier_head(b, src, classes=3)
    graph = b.done()
    source = export(graph)
    torch.manual_seed(3)
    compiled = rs_compile(graph, device="cpu")
    namespace: dict[str, object] = {"__name__": "exported_for_test"}
    exec(compile(source, "exported.py", "exec"), namespace)
    torch.manual_seed(3)
    fresh = namespace["Model"]()  # type: ignore[operator]
    assert compiled.dtype == torch.float64
    assert {k: v.dtype for k, v in fresh.state_dict().items()} == {k: v.dtype for k, v in compiled.state_dict().items()}
    assert all(torch.equal(a, b) for a, b in zip(fresh.state_dict().values(), compiled.state_dict().values()))
    x = torch.randn(2, 4, 4, 4, dtype=torch.float64)
    assert torch.equal(fresh(x), compiled(x))


BAD_OUTPUTS = {
    "integers": lambda z: z.long(),
    "no samples": lambda z: z[:0],
    "other channels": lambda z: z[:, :2],
    "a list": lambda z: [z],
    "a numpy array": lambda z: z.numpy(),
    "float64": lambda z: z.double(),
    "float16": lambda z: z.half(),
}


@pytest.mark.parametrize("bad", list(BAD_OUTPUTS))
def test_inverse_refuses_what_the_compiled_inverse_refuses(bad: str) -> None:
    """An exported flow's inverse took an integer z and returned numbers, and failed inside the
    runtime on a list ("'list' object has no attribute 'dtype'") or a numpy array."""
    compiled, exported, _ = _pair(generate.glow_repeat(1))
    x = torch.randn(2, *compiled.plan.inputs[0].shape)
    with torch.no_grad():
        z = exported(x)
    arg = BAD_OUTPUTS[bad](z)
    try:
        compiled.inverse(arg)
    except Exception as exc:
        expected = (type(exc), str(exc))
    try:
        exported.inverse(arg)
    except Exception as exc:
        got = (type(exc), str(exc))
    assert got == expected and "inverse: output" in got[1]
    if bad.startswith("float"):  # (a float64 z came back as float64 samples computed half in each type)
        assert got[0] is TypeError and f"holds torch.{bad} values" in got[1] and "z.to(torch.float32)" in got[1]


def test_a_double_exported_flow_inverts_its_own_type_and_autocast_takes_others() -> None:
    """The type check follows .double() as forward's does, and steps aside under autocast."""
    _, exported, _ = _pair(generate.glow_repeat(1))
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        z = exported(x)
        exported.double()
        assert exported.inverse(z.double()).dtype == torch.float64
        with pytest.raises(TypeError, match="weights are torch.float64"):
            exported.inverse(z)
        exported.float()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            back = exported.inverse(z.to(torch.bfloat16))
    assert bool(torch.isfinite(back.float()).all())


def test_the_models_inverse_takes_arguments_named_after_its_outputs() -> None:
    import inspect

    compiled, exported, _ = _pair(generate.glow_repeat(1))
    names = [op.name for op in sorted(compiled.plan.outputs, key=lambda o: o.index)]
    assert list(inspect.signature(exported.inverse).parameters) == names


def _two_inputs():
    from revstudio.core.graph import Graph

    g = Graph("two-in")
    g.add_node("Input", "img", {"shape": [2, 4, 4]})
    g.add_node("Input", "aux", {"shape": [3, 4, 4]})
    g.add_node("Concat", "c", {})
    g.add_node("Conv", "conv", {"out_channels": 2, "kernel_size": 1})
    g.add_node("Output", "y")
    g.connect("img.out", "c.in0")
    g.connect("aux.out", "c.in1")
    g.connect("c.out", "conv.in")
    g.connect("conv.out", "y.in")
    return g


@pytest.mark.parametrize("call", ["too many", "too few", "none", "an unknown name"])
def test_a_call_with_another_count_of_inputs_names_the_input_nodes_in_order(call: str) -> None:
    """Python's "Model.forward() takes 2 positional arguments but 3 were given" named no Input node."""
    compiled, exported, _ = _pair(_two_inputs())
    img, aux = torch.randn(2, 2, 4, 4), torch.randn(2, 3, 4, 4)
    args, named = {"too many": ((img, aux, aux), {}), "too few": ((img,), {}), "none": ((), {}),
                   "an unknown name": ((img,), {"extra": aux})}[call]
    for model in (compiled, exported):
        with pytest.raises(TypeError) as info:
            model(*args, **named)
        text = str(info.value)
        assert "'img' (batch, 2, 4, 4), 'aux' (batch, 3, 4, 4)" in text, text
        assert "two-in: expected 2 input tensor(s)" in text and f"got {len(args)}" in text, text
        assert "forward()" not in text


@pytest.mark.parametrize("call", ["too many", "too few", "none", "an unknown name"])
def test_forward_called_directly_names_the_input_nodes_too(call: str) -> None:
    """model.forward(img) skipped the pre-hook's count check: Python's "forward() missing 1
    required positional argument: 'aux'" named no Input node and no shape."""
    _, exported, _ = _pair(_two_inputs())
    img, aux = torch.randn(2, 2, 4, 4), torch.randn(2, 3, 4, 4)
    args, named = {"too many": ((img, aux, aux), {}), "too few": ((img,), {}), "none": ((), {}),
                   "an unknown name": ((img,), {"extra": aux})}[call]
    with pytest.raises(TypeError) as info:
        exported.forward(*args, **named)
    text = str(info.value)
    assert "two-in: expected 2 input tensor(s)" in text and f"got {len(args)}" in text, text
    assert "'img' (batch, 2, 4, 4), 'aux' (batch, 3, 4, 4)" in text, text


def test_the_exported_model_still_takes_its_inputs_by_position_and_by_name() -> None:
    compiled, exported, _ = _pair(_two_inputs())
    img, aux = torch.randn(2, 2, 4, 4), torch.randn(2, 3, 4, 4)
    expected = compiled(img, aux)
    assert torch.equal(exported(img, aux), expected) and torch.equal(exported(img, aux=aux), expected)
    assert torch.equal(exported(img=img, aux=aux), expected)


@pytest.mark.parametrize("example", ["digits_revnet", "two_branch", "glow_flow"])
def test_sizes_the_layers_refuse_name_the_input_as_compiled(example: str) -> None:
    """Other sizes than the Input node declares got torch's words from deep inside the exported
    model ("mat1 and mat2 shapes cannot be multiplied (4x1024 and 256x10)", "input.size(-1) must
    be equal to input_size", "pixel_unshuffle expects height to be divisible"), naming no input;
    the compiled module's named it."""
    from pathlib import Path

    from revstudio.core.project import load

    graph = load(str(Path(__file__).resolve().parents[2] / "resources" / "examples" / f"{example}.revs"))
    compiled, exported, namespace = _pair(graph)
    node, (shape, _) = next(iter(namespace["INPUTS"].items()))  # type: ignore[attr-defined]
    x = torch.randn(4, shape[0], *[2 * d + 1 for d in shape[1:]])
    got = _refusal(exported, x)
    assert got is not None and got == _refusal(compiled, x), got
    kind, text = got
    assert kind is ValueError and text.startswith(f"input {node!r} has shape {tuple(x.shape)} but its Input node declares")


def test_exporting_a_graph_with_errors_says_which_in_the_exception() -> None:
    """A script's ``rs.export(g)`` showed ``CodegenError: untitled: the graph has errors`` and no node: the
    errors were only in ``exc.problems``, which a traceback does not show."""
    from revstudio.codegen import CodegenError
    from revstudio.core.graph import Graph

    g = Graph()
    for i in range(5):
        g.add_node("Conv", f"c{i}")
    with pytest.raises(CodegenError) as caught:
        export(g)
    text = str(caught.value)
    assert text.startswith("untitled: the graph has errors: ") and "c0.in" in text and "not connected" in text
    assert "more; revstudio check FILE lists them all" in text and len(caught.value.problems) > 3
