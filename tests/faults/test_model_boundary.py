"""The compiled model's forward checks its inputs at the boundary, naming the Input node."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import revstudio as rs  # noqa: E402
from revstudio.compiler import CompileError  # noqa: E402
from revstudio.core.examples import example_projects  # noqa: E402

GRAPH = example_projects()["glow_flow"]


@pytest.fixture(scope="module")
def model():
    return rs.compile(GRAPH, device="cpu")


@pytest.mark.parametrize("args, error, words", [
    ((torch.randn(0, 3, 16, 16),), ValueError, "input 'image' got a batch of 0 samples"),
    (([torch.randn(2, 3, 16, 16)],), TypeError, "input 'image' expects a tensor of shape (batch, 3, 16, 16), got list"),
    ((None,), TypeError, "got NoneType"),
    ((torch.zeros(2, 3, 16, 16, dtype=torch.int64),), TypeError, "expects floating-point values"),
    ((torch.empty(2, 3, 16, 16, device="meta"),), ValueError, "input 'image' is on the meta device"),
    ((torch.randn(2, 3, 16),), ValueError, "expects tensors of shape (batch, 3, 16, 16) (4 dimensions and 3 "
                                           "channels are checked; the sizes after the channels may differ where "
                                           "the layers take them), got (2, 3, 16)"),
    ((torch.randn(2, 4, 16, 16),), ValueError, "got (2, 4, 16, 16)"),
    ((), TypeError, "expected 1 input tensor(s), one per Input node in this order: 'image' (batch, 3, 16, 16); got 0"),
])
def test_bad_inputs_name_the_input_node(model, args, error, words) -> None:
    with pytest.raises(error) as info:
        model(*args)
    assert words in str(info.value)


def test_sizes_the_layers_refuse_name_the_input() -> None:
    model = rs.compile(example_projects()["birnn_sequence"], device="cpu")
    op = model.plan.inputs[0]
    bad = torch.randn(2, op.shape[0], *[d + 3 for d in op.shape[1:]])
    try:
        model(bad)
    except ValueError as exc:
        assert f"input {op.node!r} has shape" in str(exc) and "Input node declares" in str(exc)
    # a fully convolutional graph may take other sizes: then it simply runs


def test_a_good_batch_still_runs(model) -> None:
    z = model(torch.randn(2, 3, 16, 16))
    assert z.shape[0] == 2


@pytest.mark.parametrize("device, words", [
    ("nope", "device 'nope' is not a device torch knows; use 'auto', 'cpu'"),
    # one past the last CUDA device this machine has (cuda:0 where there is none)
    (f"cuda:{torch.cuda.device_count() if torch.cuda.is_available() else 0}", "cuda"),
])
def test_compile_refuses_unknown_devices(device: str, words: str) -> None:
    with pytest.raises(CompileError, match=words):
        rs.compile(GRAPH, device=device)


@pytest.mark.parametrize("name", ["revnet_wired", "birnn_sequence"])
@pytest.mark.parametrize("mode", ["standard", "reversible", "checkpoint"])
def test_another_number_type_than_the_weights_names_the_input(name: str, mode: str) -> None:
    model = rs.compile(example_projects()[name], device="cpu", mode=mode)
    op = model.plan.inputs[0]
    x = torch.randn(2, *op.shape, dtype=torch.float64)
    with pytest.raises(TypeError) as info:  # torch's own words: "expected scalar type Double but found Float"
        model(x)
    words = str(info.value)
    assert f"input {op.node!r} holds torch.float64 values but the model's weights are torch.float32" in words
    assert "x.to(torch.float32)" in words
    with torch.autocast("cpu", dtype=torch.bfloat16):  # mixed precision is no mismatch
        model(x.float())


def test_a_first_batch_the_layers_refuse_names_the_input() -> None:
    """The first forward also runs the data-dependent initialisation (ActNorm): a batch the
    layers refuse there gets the same hint as on any later forward."""
    model = rs.compile(GRAPH, device="cpu")
    with pytest.raises(ValueError, match=r"input 'image' has shape \(2, 3, 15, 15\) but its Input node declares"):
        model(torch.randn(2, 3, 15, 15))


@pytest.mark.parametrize("outputs, error, words", [
    (([torch.randn(2, 12, 8, 8)],), TypeError, "inverse: output 'z' expects a tensor of shape (batch, 12, 8, 8), "
                                                "got list"),
    ((torch.zeros(2, 12, 8, 8, dtype=torch.int64),), TypeError, "output 'z' expects floating-point values"),
    ((torch.randn(2, 5, 8, 8),), ValueError, "output 'z' expects tensors of shape (batch, 12, 8, 8) (4 dimensions "
                                             "and 12 channels are checked; the sizes after the channels may differ "
                                             "where the layers take them), got (2, 5, 8, 8)"),
    ((torch.randn(0, 12, 8, 8),), ValueError, "output 'z' got no samples"),
    ((torch.empty(2, 12, 8, 8, device="meta"),), ValueError, "output 'z' is on the meta device"),
])
def test_bad_inverse_arguments_name_the_output_node(model, outputs, error, words) -> None:
    with pytest.raises(error) as info:  # (an integer batch came back as NaNs, a list failed in a layer)
        model.inverse(*outputs)
    assert words in str(info.value)
    x = model.inverse(torch.randn(2, 12, 8, 8))  # a good one still samples
    assert x.shape == (2, 3, 16, 16)


def test_a_dtype_given_by_name_is_refused_with_the_torch_dtype_to_use() -> None:
    with pytest.raises(CompileError, match="a torch.dtype, not its name"):
        rs.compile(GRAPH, device="cpu", dtype="float64")
