"""A Permute of kind axes: reorders a sample's axes (dims), as torch.permute does after the batch
axis; its inverse is exact, its output a view, and a dims that is no permutation is refused with
the node and the parameter named."""
from __future__ import annotations

import itertools

import pytest
from catalog_kit import NodeKit

from revstudio.core.graph import Graph
from revstudio.core.spec import ShapeError

torch = pytest.importorskip("torch")

SHAPES = [(5, 3), (2, 3, 4)]


@pytest.mark.parametrize("shape", SHAPES)
def test_every_order_reorders_the_axes_as_torch_permute_and_inverts_exactly(kit: NodeKit,
                                                                          shape: tuple[int, ...]) -> None:
    for dims in itertools.permutations(range(len(shape))):
        built = kit.build("Permute", {"kind": "axes", "dims": list(dims)}, [shape])
        x = torch.randn(2, *shape)
        (y,) = built.module(x)
        assert tuple(y.shape[1:]) == built.outputs["out"] == tuple(shape[d] for d in dims)
        assert torch.equal(y, x.permute(0, *(d + 1 for d in dims)))
        assert y.data_ptr() == x.data_ptr()  # a view: nothing copied
        (back,) = built.module.inverse(y)
        assert torch.equal(back, x) and back.stride() == x.stride()
        assert built.count == 0 and not built.module.state_dict()


@pytest.mark.parametrize(("dims", "shape", "said"), [
    ([0, 0], (5, 3), "dims [0, 0] must be a permutation of 0..1"),
    ([1, 0], (2, 3, 4), "dims [1, 0] must be a permutation of 0..2"),
    ([2, 1, 0], (5, 3), "dims [2, 1, 0] must be a permutation of 0..1"),
])
def test_a_dims_that_is_no_permutation_of_the_inputs_axes_is_refused(kit: NodeKit, dims: list[int],
                                                                     shape: tuple[int, ...], said: str) -> None:
    with pytest.raises(ShapeError) as caught:
        kit.infer("Permute", {"kind": "axes", "dims": dims}, [shape])
    assert caught.value.message.startswith(f"Permute n: {said}"), caught.value.message
    assert "give each axis once" in caught.value.message


def test_the_check_names_the_node_and_parameter_and_a_channel_kind_ignores_dims() -> None:
    from revstudio.core.check import check

    g = Graph("t")
    g.add_node("Input", "x", {"shape": [50, 8]})
    g.add_node("Permute", "swap", {"kind": "axes", "dims": [1, 1]})
    g.add_node("Output", "y", {})
    g.connect("x.out", "swap.in")
    g.connect("swap.out", "y.in")
    (bad,) = check(g).for_node("swap")
    assert bad.message.startswith("Permute swap: dims [1, 1] must be a permutation of 0..1"), bad.message
    g.set_param("swap", "dims", [1, 5])
    (out_of_range,) = check(g).for_node("swap")
    assert "dims" in out_of_range.message and "5" in out_of_range.message, out_of_range.message
    g.set_param("swap", "dims", [1, 0])
    assert check(g).shape("swap.out") == (8, 50)
    g.set_param("swap", "kind", "reverse")
    assert check(g).shape("swap.out") == (50, 8)
