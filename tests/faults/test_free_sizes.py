"""Sizes after the channels: a compiled or exported model holds a batch to its Input nodes' rank and
channels only, as torch's own layers do (a fully convolutional graph takes any height and width),
and its refusals and its forward's docstring say so instead of reading as if every size were checked."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import revstudio as rs  # noqa: E402
from revstudio.codegen import export  # noqa: E402
from revstudio.core.graph import Graph  # noqa: E402

CHECKED = "4 dimensions and 1 channel are checked; the sizes after the channels may differ where the layers take them"


def _conv() -> Graph:
    g = Graph("fc")
    g.add_node("Input", "x", {"shape": [1, 8, 8]})
    g.add_node("Conv", "c", {"out_channels": 2, "kernel_size": 3})
    g.add_node("Output", "y", {})
    g.connect("x.out", "c.in")
    g.connect("c.out", "y.in")
    return g


def _models(graph: Graph) -> dict:
    compiled = rs.compile(graph, device="cpu")
    namespace: dict = {}
    exec(compile(export(graph), "exported.py", "exec"), namespace)
    exported = namespace["Model"]()
    exported.load_state_dict(compiled.state_dict())
    return {"compiled": compiled, "exported": exported}


def test_a_fully_convolutional_graph_runs_on_another_height_and_width_as_its_layers_do() -> None:
    models = _models(_conv())
    x = torch.randn(3, 1, 16, 12)
    weight, bias = models["compiled"].state_dict().values()
    want = torch.nn.functional.conv2d(x, weight, bias, padding="same")
    for which, model in models.items():
        assert torch.allclose(model(x), want, atol=1e-6), which


@pytest.mark.parametrize("which", ["compiled", "exported"])
@pytest.mark.parametrize("bad", [(2, 3, 16, 16), (2, 1, 16)])
def test_a_refused_batch_says_which_sizes_were_checked(which: str, bad: tuple) -> None:
    model = _models(_conv())[which]
    with pytest.raises(ValueError) as info:
        model(torch.randn(*bad))
    assert str(info.value) == (f"input 'x' expects tensors of shape (batch, 1, 8, 8) ({CHECKED}), got {bad}; "
                               "reshape the batch or change the Input node's shape")


def test_the_exported_forward_says_the_sizes_after_the_channels_are_free_where_they_are() -> None:
    doc = _models(_conv())["exported"].forward.__doc__
    assert doc.startswith("x (B, 1, 8, 8) -> y (B, 2, 8, 8); B is the batch size.")
    assert "checked for its rank and channels only" in " ".join(doc.split())
    graph = Graph("flat")  # (features alone: every size is checked, and the docstring says no more)
    graph.add_node("Input", "a", {"shape": [3]})
    graph.add_node("Linear", "fc", {"out_features": 2})
    graph.add_node("Output", "b", {})
    graph.connect("a.out", "fc.in")
    graph.connect("fc.out", "b.in")
    model = _models(graph)["exported"]
    assert model.forward.__doc__ == "a (B, 3) -> b (B, 2); B is the batch size."
    with pytest.raises(ValueError, match=r"^input 'a' expects tensors of shape \(batch, 3\), got \(2, 4\); "):
        model(torch.randn(2, 4))

