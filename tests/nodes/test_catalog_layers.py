"""Behaviour of individual layers beyond shapes: exact conv arithmetic, BiRNN layouts,
ActNorm's one-time init, log-determinants, merge values, permutations and views."""
from __future__ import annotations

import pytest
from catalog_kit import NodeKit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from revstudio.core.spec import ShapeError

torch = pytest.importorskip("torch")

# PyTorch warns that an even kernel with padding "same" pads asymmetrically; that is intended here.
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same'")
from torch import nn  # noqa: E402


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    dims=st.integers(1, 2), size=st.integers(1, 9), kernel=st.integers(1, 5), stride=st.integers(1, 3),
    padding=st.one_of(st.just("same"), st.integers(0, 3)), dilation=st.integers(1, 3),
)
def test_conv_shape_rule_agrees_with_torch(kit: NodeKit, dims: int, size: int, kernel: int, stride: int,
                                           padding: object, dilation: int) -> None:
    shape = (2,) + (size,) * dims
    params = {"out_channels": 3, "kernel_size": kernel, "stride": stride, "padding": padding,
              "dilation": dilation}
    try:
        conv = (nn.Conv1d if dims == 1 else nn.Conv2d)(2, 3, kernel, stride, padding, dilation)
        expected = tuple(conv(torch.zeros(1, *shape)).shape[1:])
    except (RuntimeError, ValueError):
        expected = None  # torch refuses: the spec must refuse too, with a reason
    try:
        _, outputs = kit.infer("Conv", params, [shape])
        got = outputs["out"]
    except ShapeError as exc:
        assert expected is None, f"spec refused what torch accepts: {exc.message}"
        assert exc.message.startswith("Conv n:")
        return
    if padding == "same" and stride > 1:
        pytest.fail("padding 'same' with stride > 1 must be refused")
    assert got == expected


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["max", "avg"]), size=st.integers(1, 8), kernel=st.integers(1, 4),
       stride=st.integers(0, 3), padding=st.integers(0, 2))
def test_pool_shape_rule_agrees_with_torch(kit: NodeKit, kind: str, size: int, kernel: int, stride: int,
                                           padding: int) -> None:
    try:
        pool = (nn.MaxPool2d if kind == "max" else nn.AvgPool2d)(kernel, stride or kernel, padding)
        expected = tuple(pool(torch.zeros(1, 2, size, size)).shape[1:])
    except (RuntimeError, ValueError):
        expected = None
    try:
        _, outputs = kit.infer("Pool", {"kind": kind, "kernel_size": kernel, "stride": stride,
                                        "padding": padding}, [(2, size, size)])
    except ShapeError:
        assert expected is None
        return
    assert outputs["out"] == expected


@pytest.mark.parametrize("cell", ["rnn_tanh", "rnn_relu", "lstm", "gru"])
def test_birnn_reads_the_last_axis_as_time(kit: NodeKit, cell: str) -> None:
    built = kit.build("BiRNN", {"hidden_size": 3, "cell": cell}, [(2, 4, 5)])
    rnn = built.module.rnn
    assert rnn.bidirectional and rnn.batch_first and rnn.input_size == 8
    x = torch.randn(2, 2, 4, 5)
    (y,) = built.module(x)
    reference, _ = rnn(x.reshape(2, 8, 5).transpose(1, 2))  # W=5 steps of C*H=8 features
    assert y.shape == (2, 6, 5)
    assert torch.equal(y, reference.transpose(1, 2))
    assert y.is_contiguous()


def test_birnn_state_dict_uses_pytorch_names(kit: NodeKit) -> None:
    built = kit.build("BiRNN", {"hidden_size": 2, "cell": "lstm"}, [(3, 4)])
    assert "rnn.weight_ih_l0" in built.module.state_dict()
    assert "rnn.weight_hh_l0_reverse" in built.module.state_dict()


def test_conv_and_linear_state_dicts_are_plain(kit: NodeKit) -> None:
    conv = kit.build("Conv", {"out_channels": 2}, [(3, 4, 4)]).module
    assert isinstance(conv, nn.Conv2d) and list(conv.state_dict()) == ["weight", "bias"]
    linear = kit.build("Linear", {"out_features": 2}, [(3, 2, 2)]).module
    x = torch.randn(2, 3, 2, 2)
    assert torch.equal(linear(x)[0], nn.functional.linear(x.flatten(1), linear.weight, linear.bias))


def test_actnorm_initialises_once_from_the_first_batch(kit: NodeKit) -> None:
    module = kit.build("ActNorm", {}, [(3, 4, 4)]).module
    assert not bool(module.initialized)
    x = torch.randn(8, 3, 4, 4) * torch.tensor([1.0, 5.0, 0.2]).view(1, 3, 1, 1) + 3.0
    (y,) = module(x)
    assert bool(module.initialized)
    per_channel = y.transpose(0, 1).reshape(3, -1)
    assert torch.allclose(per_channel.mean(1), torch.zeros(3), atol=1e-5)
    assert torch.allclose(per_channel.std(1, unbiased=False), torch.ones(3), atol=1e-4)
    before = [p.detach().clone() for p in module.parameters()]
    module(torch.randn(8, 3, 4, 4) * 100)  # a second, very different batch: no re-initialisation
    assert all(torch.equal(a, b) for a, b in zip(before, module.parameters()))


def test_actnorm_keeps_its_initialisation_through_a_checkpoint(kit: NodeKit) -> None:
    trained = kit.build("ActNorm", {}, [(2, 3)]).module
    trained.initialize(torch.randn(4, 2, 3) + 7.0)
    fresh = kit.build("ActNorm", {}, [(2, 3)]).module
    fresh(torch.randn(4, 2, 3))  # initialises itself from a different batch first
    fresh.load_state_dict(trained.state_dict())
    x = torch.randn(4, 2, 3)
    assert torch.equal(fresh(x)[0], trained(x)[0])
    assert torch.equal(fresh.bias, trained.bias)


def _jacobian_logdet(module, shape):  # type: ignore[no-untyped-def]
    x = torch.randn(1, *shape, dtype=torch.float64)
    jac = torch.autograd.functional.jacobian(lambda t: module(t)[0], x).reshape(x.numel(), x.numel())
    module(x)
    return torch.linalg.slogdet(jac)[1], module.logdet


@pytest.mark.parametrize(("type_id", "params", "shape"), [
    ("InvConv1x1", {"lu": True}, (3, 2, 2)),
    ("InvConv1x1", {"lu": False}, (3, 2)),
    ("ActNorm", {}, (2, 3)),
    ("AffineCoupling", {"net": "net"}, (4, 2, 2)),
    ("AffineCoupling", {"net": "net", "clamp": 0.5}, (4, 3)),
    ("AdditiveCoupling", {"f": "f", "g": "g"}, (4, 3)),
])
def test_logdet_is_the_log_determinant_of_the_jacobian(kit: NodeKit, type_id: str, params, shape) -> None:  # type: ignore[no-untyped-def]
    module = kit.build(type_id, params, [shape]).module.double()
    if type_id == "ActNorm":
        module.initialize(torch.randn(5, *shape, dtype=torch.float64) * 3)
    if type_id == "AffineCoupling":  # make the scale non-trivial
        with torch.no_grad():
            for p in module.parameters():
                p.add_(0.3 * torch.randn_like(p))
    exact, stored = _jacobian_logdet(module, shape)
    assert stored.shape == (1,)
    assert torch.allclose(stored[0], exact, atol=1e-9)


def test_affine_clamp_bounds_the_log_scale(kit: NodeKit) -> None:
    module = kit.build("AffineCoupling", {"net": "net", "clamp": 0.5}, [(4, 3)]).module
    with torch.no_grad():
        for p in module.parameters():
            p.fill_(3.0)
    module(torch.ones(2, 4, 3))
    assert module.logdet.abs().max() <= 0.5 * 2 * 3  # |s| < clamp for each of the 2x3 values


@pytest.mark.parametrize(("mode", "expected"), [
    ("add", lambda a, b: a + b), ("sub", lambda a, b: a - b), ("mul", lambda a, b: a * b),
    ("mean", lambda a, b: (a + b) / 2), ("max", torch.maximum),
    ("concat", lambda a, b: torch.cat([a, b], 1)), ("stack", lambda a, b: torch.stack([a, b], 1)),
])
def test_merge_modes_compute_what_they_say(kit: NodeKit, mode: str, expected) -> None:  # type: ignore[no-untyped-def]
    module = kit.build("Merge", {"mode": mode}, [(2, 3), (2, 3)]).module
    a, b = torch.randn(4, 2, 3), torch.randn(4, 2, 3)
    assert torch.allclose(module(a, b)[0], expected(a, b))


def test_sub_with_three_inputs_subtracts_the_rest_from_the_first(kit: NodeKit) -> None:
    module = kit.build("Merge", {"mode": "sub", "inputs": 3}, [(2,), (2,), (2,)]).module
    a, b, c = torch.randn(3, 1, 2).unbind(0)
    assert torch.allclose(module(a, b, c)[0], a - b - c)


def test_permute_is_fixed_by_kind_and_seed(kit: NodeKit) -> None:
    x = torch.arange(6.0).view(1, 6)
    (rev,) = kit.build("Permute", {"kind": "reverse"}, [(6,)]).module(x)
    assert rev.tolist() == [[5.0, 4.0, 3.0, 2.0, 1.0, 0.0]]
    first = kit.build("Permute", {"seed": 7}, [(6,)]).module(x)[0]
    again = kit.build("Permute", {"seed": 7}, [(6,)]).module(x)[0]
    other = kit.build("Permute", {"seed": 8}, [(6,)]).module(x)[0]
    assert torch.equal(first, again) and not torch.equal(first, other)
    assert sorted(first[0].tolist()) == x[0].tolist()
    assert "perm" not in kit.build("Permute", {}, [(6,)]).module.state_dict()  # derived, not a weight


def test_split_outputs_are_views_and_concat_undoes_them(kit: NodeKit) -> None:
    split = kit.build("Split", {"sections": [1, 3]}, [(4, 2)]).module
    x = torch.randn(2, 4, 2)
    parts = split(x)
    assert [tuple(p.shape) for p in parts] == [(2, 1, 2), (2, 3, 2)]
    assert all(p.untyped_storage().data_ptr() == x.untyped_storage().data_ptr() for p in parts)
    concat = kit.build("Concat", {}, [(1, 2), (3, 2)]).module
    assert torch.equal(concat(*parts)[0], x)


def test_squeeze_folds_patches_into_channels(kit: NodeKit) -> None:
    module = kit.build("Squeeze", {"factor": 2}, [(1, 2, 2)]).module
    x = torch.arange(4.0).view(1, 1, 2, 2)
    assert module(x)[0].flatten().tolist() == [0.0, 1.0, 2.0, 3.0]
    seq = kit.build("Squeeze", {"factor": 2}, [(1, 4)]).module
    (y,) = seq(torch.arange(4.0).view(1, 1, 4))
    assert y.tolist() == [[[0.0, 2.0], [1.0, 3.0]]]  # channel k holds every position = k (mod f)


def test_inplace_activation_reuses_the_input_memory(kit: NodeKit) -> None:
    module = kit.build("Activation", {"fn": "relu", "inplace": True}, [(3,)]).module
    x = torch.randn(2, 3)
    (y,) = module(x)
    assert y.data_ptr() == x.data_ptr() and (x >= 0).all()
    copy = kit.build("Activation", {"fn": "relu"}, [(3,)]).module
    x = torch.randn(2, 3)
    assert copy(x)[0].data_ptr() != x.data_ptr()


def test_dropout_is_the_identity_in_eval_mode(kit: NodeKit) -> None:
    module = kit.build("Dropout", {"p": 0.5}, [(100,)]).module
    x = torch.ones(4, 100)
    module.train()
    dropped = (module(x)[0] == 0).float().mean().item()
    assert 0.3 < dropped < 0.7
    module.eval()
    assert torch.equal(module(x)[0], x)


def test_dropout_masks_do_not_depend_on_the_memory_layout(kit: NodeKit) -> None:
    """Reversible regions keep channels_last streams on the CPU; standard mode and the
    regions must drop the same values from the same random state."""
    module = kit.build("Dropout", {"p": 0.3}, [(3, 4, 5)]).module
    module.train()
    x = torch.randn(2, 3, 4, 5)
    torch.manual_seed(1)
    plain = module(x)[0]
    torch.manual_seed(1)
    reference = nn.functional.dropout(x, 0.3, True)  # what nn.Dropout gives a contiguous input
    torch.manual_seed(1)
    strided = module(x.contiguous(memory_format=torch.channels_last))[0]
    assert torch.equal(plain, reference) and torch.equal(strided, reference)
    assert strided.is_contiguous(memory_format=torch.channels_last)  # the layout is kept


def test_repeat_copies_have_their_own_weights(kit: NodeKit) -> None:
    built = kit.build("Repeat", {"group": "block", "times": 3}, [(4, 3, 3)])
    blocks = built.module.blocks
    assert len(blocks) == 3
    weights = [dict(b.named_parameters())["layers.n0.weight"] for b in blocks]
    assert weights[0].data_ptr() != weights[1].data_ptr()
    assert not torch.equal(weights[0], weights[1])
    _, single = kit.infer("Group", {"group": "block"}, [(4, 3, 3)])
    assert built.count == 3 * kit.infer_group("block", {"in": (4, 3, 3)}).parameters


def test_group_call_exposes_the_body(kit: NodeKit) -> None:
    built = kit.build("Group", {"group": "two"}, [(2, 3), (2, 3)])
    a, b = torch.randn(1, 2, 3), torch.randn(1, 2, 3)
    total, product = built.module(a, b)
    assert torch.allclose(total, a + b) and torch.allclose(product, a * b)
    assert built.count == 0


def test_building_a_group_node_without_build_group_says_so(kit: NodeKit) -> None:
    from revstudio.core.spec import BuildContext, registry

    ctx, out = kit.infer("AdditiveCoupling", {"f": "f"}, [(4, 2)])
    spec = registry.get("AdditiveCoupling")
    with pytest.raises(RuntimeError, match="build_group"):
        spec.build(BuildContext("c", ctx.params, [(4, 2)], [out["out"]], kit.groups))


def test_actnorm_on_a_single_value_per_channel_only_centres(kit: NodeKit) -> None:
    module = kit.build("ActNorm", {}, [(3,)]).module
    x = torch.tensor([[1.0, 2.0, 3.0]])
    (y,) = module(x)
    assert torch.equal(y, torch.zeros(1, 3)) and torch.equal(module.log_scale, torch.zeros(3))
