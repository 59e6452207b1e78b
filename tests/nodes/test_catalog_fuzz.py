"""Random parameters and input shapes for every node type (hypothesis).

Whatever the values, ``infer`` either returns shapes or raises a ShapeError that
names the node (never another exception, which would reach users as a crash);
when it accepts, the built module produces exactly those shapes (in training, and
for a single sample in evaluation) and has exactly ``count_params`` parameters.
"""
from __future__ import annotations

from typing import Any

import pytest
from catalog_cases import make_groups
from catalog_kit import BOUNDARY, NodeKit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from revstudio.core import params as P
from revstudio.core.spec import ShapeError, registry

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same'")

GROUP_NAMES = sorted(make_groups())
TYPES = [s.type_id for s in registry if s.type_id not in ("Input", "GroupInput")]


def _small_int(param: Any) -> st.SearchStrategy[int]:
    lo = param.min if param.min is not None else 0
    hi = min(param.max if param.max is not None else lo + 5, lo + 5)
    return st.integers(lo, hi)


def _value(name: str, param: Any) -> st.SearchStrategy[Any]:
    if isinstance(param, P.Bool):
        return st.booleans()
    if isinstance(param, P.Choice):
        return st.sampled_from(param.options)
    if isinstance(param, P.Float):
        lo = param.min if param.min is not None else -2.0
        hi = param.max if param.max is not None else lo + 3.0
        return st.floats(lo, min(hi, lo + 3.0))
    if isinstance(param, P.GroupRef):
        return st.sampled_from(GROUP_NAMES + ([""] if param.optional else []))
    if isinstance(param, P.IntOrChoice):
        return st.one_of(st.sampled_from(param.options), st.integers(0, 3))
    if isinstance(param, P.IntOrList):
        return st.one_of(st.integers(1, 4), st.lists(st.integers(1, 4), min_size=1, max_size=3))
    if isinstance(param, P.Shape):
        return st.lists(st.sampled_from([-1, 1, 2, 3, 4, 6]), min_size=1, max_size=3)
    if isinstance(param, P.IntList):  # (a Permute's dims: orders of its axes, often whole ones)
        lo = param.min if param.min is not None else 0
        hi = min(param.max if param.max is not None else lo + 4, lo + 4)
        items = st.lists(st.integers(lo, hi), min_size=param.min_length, max_size=min(param.max_length, 4))
        return st.one_of(items, *(st.permutations(list(range(k))) for k in (1, 2, 3)))
    if isinstance(param, P.Str):
        return st.sampled_from(["in", "out", "x"])
    if isinstance(param, P.Int):
        return _small_int(param)
    raise AssertionError(f"no strategy for {name} ({param.kind})")


@st.composite
def node_case(draw: st.DrawFn, type_id: str) -> tuple[dict[str, Any], list[tuple[int, ...]]]:
    spec = registry.get(type_id)
    params = {name: draw(_value(name, p)) for name, p in spec.params.items() if draw(st.booleans())}
    resolved = {**spec.defaults(), **params}
    if "times" in resolved:
        resolved["times"] = params["times"] = min(resolved["times"], 3)
    ports = spec.input_ports(resolved, make_groups())
    rank = draw(st.integers(1, 3))
    shapes = [tuple(draw(st.lists(st.integers(1, 6), min_size=rank, max_size=rank))) for _ in ports]
    if shapes and draw(st.booleans()):  # often equal shapes, so multi-input nodes get accepted too
        shapes = [shapes[0]] * len(shapes)
    return params, shapes


@pytest.mark.parametrize("type_id", TYPES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_params_either_infer_exactly_or_explain(type_id: str, data: st.DataObject) -> None:
    params, shapes = data.draw(node_case(type_id))
    kit = NodeKit(make_groups())
    try:
        built = kit.build(type_id, params, shapes)
    except ShapeError as exc:
        assert exc.message.startswith(f"{type_id} n:") or "connect it" in exc.message, exc.message
        return
    xs = [torch.randn(2, *s) for s in shapes]
    if type_id == "Norm" and built.params["kind"] == "batch" and all(n == 1 for n in shapes[0][1:]):
        xs = [torch.randn(3, *s) for s in shapes]  # batch norm needs more than one value per channel
    built.module.train()
    ys = built.module(*xs)
    assert built.count == sum(p.numel() for p in built.module.parameters())
    if type_id in BOUNDARY:
        return
    assert [tuple(y.shape[1:]) for y in ys] == [built.outputs[p] for p in built.out_ports]
    built.module.eval()  # a single sample (inference) runs too
    ys = built.module(*[x[:1] for x in xs])
    assert [tuple(y.shape) for y in ys] == [(1, *built.outputs[p]) for p in built.out_ports]
