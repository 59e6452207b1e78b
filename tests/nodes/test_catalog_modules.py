"""Every node type's built module against its spec: shapes, parameter counts,
inverses, float64 finite-difference gradients and zero initialisation."""
from __future__ import annotations

import ast

import pytest
from catalog_cases import CASES, INVERTIBLE_GROUP_CASES, all_cases, case_id
from catalog_kit import BOUNDARY, NodeKit

from revstudio.core.spec import registry
from revstudio.nodes import module_recipe

torch = pytest.importorskip("torch")

# PyTorch warns that an even kernel with padding "same" pads asymmetrically; that is intended here.
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same'")

BATCH = 2
CASE_LIST = all_cases()
INVERTIBLE_CASES = [c for c in CASE_LIST if registry.get(c[0]).invertible] + [
    (t, p, s) for t, (p, s) in INVERTIBLE_GROUP_CASES
]
INIT_TYPES = [t for t in CASES if "init" in registry.get(t).params]


def _inputs(shapes, dtype=torch.float64, requires_grad=False, seed=0):  # type: ignore[no-untyped-def]
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn((BATCH, *s), generator=gen, dtype=dtype).requires_grad_(requires_grad) for s in shapes]


def _built(kit: NodeKit, type_id: str, params, shapes, dtype=torch.float64):  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    built = kit.build(type_id, params, shapes)
    built.module.to(dtype)
    return built


@pytest.mark.parametrize("case", CASE_LIST, ids=case_id)
def test_forward_shapes_match_the_shape_rule(kit: NodeKit, case) -> None:  # type: ignore[no-untyped-def]
    type_id, params, shapes = case
    built = _built(kit, type_id, params, shapes, torch.float32)
    xs = _inputs(shapes, torch.float32)
    if type_id == "Input":
        xs = _inputs([built.outputs["out"]], torch.float32)
    ys = built.module(*xs)
    assert isinstance(ys, tuple)
    if type_id in BOUNDARY:  # boundary modules pass the crossing value through
        assert [tuple(y.shape) for y in ys] == [tuple(x.shape) for x in xs]
        return
    assert len(ys) == len(built.out_ports)
    for port, y in zip(built.out_ports, ys):
        assert tuple(y.shape) == (BATCH, *built.outputs[port]), port


@pytest.mark.parametrize("case", CASE_LIST, ids=case_id)
def test_count_params_equals_the_built_module(kit: NodeKit, case) -> None:  # type: ignore[no-untyped-def]
    type_id, params, shapes = case
    built = _built(kit, type_id, params, shapes)
    assert built.count == sum(p.numel() for p in built.module.parameters())


@pytest.mark.parametrize("case", INVERTIBLE_CASES, ids=case_id)
def test_inverse_reconstructs_the_input(kit: NodeKit, case) -> None:  # type: ignore[no-untyped-def]
    type_id, params, shapes = case
    built = _built(kit, type_id, params, shapes)
    xs = _inputs(shapes, seed=1)
    with torch.no_grad():
        ys = built.module(*xs)
        xs_back = built.module.inverse(*ys)
    assert len(xs_back) == len(xs)
    for x, x_back in zip(xs, xs_back):
        assert x_back.shape == x.shape
        assert torch.allclose(x_back, x, rtol=0, atol=1e-10), (x_back - x).abs().max()


@pytest.mark.parametrize("case", CASE_LIST, ids=case_id)
def test_gradcheck_float64(kit: NodeKit, case) -> None:  # type: ignore[no-untyped-def]
    type_id, params, shapes = case
    if type_id == "Input":
        shapes = [tuple(params["shape"])]
    built = _built(kit, type_id, params, shapes)
    xs = _inputs(shapes, requires_grad=True, seed=2)
    with torch.no_grad():
        built.module(*[x.detach().clone() for x in xs])  # data-dependent init (ActNorm) happens once, before

    def run(*inputs):  # type: ignore[no-untyped-def]
        torch.manual_seed(0)  # the same dropout mask on every evaluation
        return built.module(*[x.clone() for x in inputs])  # clone: in-place activations need a non-leaf

    # fast_mode checks random projections of the Jacobian: as strict a test, far cheaper on CI
    assert torch.autograd.gradcheck(run, tuple(xs), eps=1e-6, atol=1e-5, fast_mode=True)
    params_with_grad = [p for p in built.module.parameters() if p.requires_grad]
    if params_with_grad:  # weights get gradients through autograd as usual
        sum(y.sum() for y in run(*xs)).backward()
        assert all(p.grad is not None for p in params_with_grad)


@pytest.mark.parametrize("type_id", INIT_TYPES)
@pytest.mark.parametrize("scheme", ["zeros", "xavier_uniform", "xavier_normal", "kaiming_uniform",
                                    "kaiming_normal", "orthogonal", "default"])
def test_every_init_scheme_builds_and_runs(kit: NodeKit, type_id: str, scheme: str) -> None:
    params, shapes = CASES[type_id][0]
    built = _built(kit, type_id, {**params, "init": scheme}, shapes)
    ys = built.module(*_inputs(shapes))
    assert all(torch.isfinite(y).all() for y in ys)
    weights = list(built.module.parameters())
    if scheme == "zeros":
        assert all((p == 0).all() for p in weights)
        assert all((y == 0).all() for y in ys)
    elif scheme != "default":
        assert any((p != 0).any() for p in weights)
        assert all((p == 0).all() for p in weights if p.dim() == 1)  # biases start at zero


def test_orthogonal_init_gives_orthogonal_rows(kit: NodeKit) -> None:
    built = _built(kit, "Linear", {"out_features": 3, "init": "orthogonal"}, [(6,)])
    w = built.module.weight
    assert torch.allclose(w @ w.T, torch.eye(3, dtype=w.dtype), atol=1e-6)


@pytest.mark.parametrize(("type_id", "params"), [
    ("AdditiveCoupling", {"f": "f_zero"}),
    ("AffineCoupling", {"net": "net_zero"}),
])
def test_zero_initialised_couplings_are_the_identity(kit: NodeKit, type_id: str, params) -> None:  # type: ignore[no-untyped-def]
    built = _built(kit, type_id, params, [(4, 3, 3)])
    (x,) = _inputs([(4, 3, 3)])
    (y,) = built.module(x)
    assert torch.equal(y, x)
    assert torch.equal(built.module.logdet, torch.zeros(BATCH, dtype=x.dtype))


@pytest.mark.parametrize("case", [c for c in CASE_LIST if c[0] in CASES], ids=case_id)  # recipes: built-ins only
def test_module_recipes_are_plain_source_values(kit: NodeKit, case) -> None:  # type: ignore[no-untyped-def]
    """The code exporter writes recipes as source: every argument must survive repr -> literal_eval."""
    type_id, params, shapes = case
    built = kit.build(type_id, params, shapes)
    from revstudio.core.spec import BuildContext

    spec = registry.get(type_id)
    out_shapes = [built.outputs[p] for p in spec.output_ports(built.params, kit.groups)]
    rec = module_recipe(type_id, BuildContext("n", built.params, shapes, out_shapes, kit.groups))
    assert rec.module.startswith("revstudio.nodes.torch_modules.")
    assert type(built.module).__name__ == rec.cls
    for value in rec.kwargs.values():
        assert ast.literal_eval(repr(value)) == value


@pytest.mark.parametrize("memory_format", ["contiguous", "channels_last"])
def test_global_pool_gives_its_input_a_gradient_of_its_own(memory_format: str) -> None:
    """The mean over the spatial axes as they lie: the input's gradient is a tensor of its own,
    not a view of another (a reversible region before the pool releases it once read)."""
    from revstudio.nodes.torch_modules.layers import GlobalAvgPool

    x = torch.randn(3, 4, 5, 6, dtype=torch.float64)
    if memory_format == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
    x.requires_grad_(True)
    (y,) = GlobalAvgPool()(x)
    assert torch.allclose(y, x.detach().reshape(3, 4, -1).mean(2))
    (g,) = torch.autograd.grad((y * torch.arange(12.0, dtype=torch.float64).view(3, 4)).sum(), [x])
    assert g._base is None
    assert torch.allclose(g, torch.arange(12.0, dtype=torch.float64).view(3, 4, 1, 1).expand(3, 4, 5, 6) / 30)


@pytest.mark.parametrize("case", CASE_LIST, ids=case_id)
def test_every_module_trains_under_cpu_bf16_autocast(kit: NodeKit, case) -> None:  # type: ignore[no-untyped-def]
    """``--precision bf16`` on the CPU runs every node type forward and backward (a float32
    LSTM under autocast used to stop in oneDNN on CPUs without AVX512-BF16)."""
    type_id, params, shapes = case
    built = _built(kit, type_id, params, shapes, torch.float32)
    xs = _inputs(shapes, torch.float32, requires_grad=True)
    if type_id == "Input":
        xs = _inputs([built.outputs["out"]], torch.float32, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ys = built.module(*[x * 1 for x in xs])  # (not leaves: in-place activations may write them)
    outs = [y for y in ys if y.is_floating_point() and y.requires_grad]
    if not outs:
        return
    sum(y.float().sum() for y in outs).backward()
    for y in outs:
        assert bool(torch.isfinite(y.float()).all())
    for p in built.module.parameters():
        assert p.dtype == torch.float32 and (p.grad is None or bool(torch.isfinite(p.grad).all()))
