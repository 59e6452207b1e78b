"""compiler.assembly: regions and checkpoint segments from plain data, the code both the
compiled module and the exported file run."""
from __future__ import annotations

import copy
import pickle

import pytest
import torch
from compiler_graphs import coupling_repeat, wired_revnet
from torch import nn

import revstudio.compiler as C
from revstudio.compiler import assembly as asm
from revstudio.compiler import runtime as rt
from revstudio.nodes.torch_modules.structure import Split

torch.set_num_threads(1)


class _Twice(nn.Module):
    """A tuple-returning layer, like the catalog's."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor]:
        return (2 * x,)


def _owner() -> nn.Module:
    owner = nn.Module()
    owner.split = Split([2, 2])
    owner.f = _Twice()
    return owner


def _coupling_region() -> dict:
    return {
        "id": "r",
        "steps": [
            {"kind": "node", "type": "Split", "module": "split", "inputs": ["x"], "outputs": ["a", "b"]},
            {"kind": "coupling", "a": "a", "b": ["b"], "output": "y", "sign": -1, "f": "fb",
             "body": [{"module": "f", "inputs": ["b"], "outputs": ["fb"]}]},
        ],
        "inputs": ["x"], "outputs": ["y", "b"], "side": [], "free": [],
    }


def test_build_region_numbers_slots_by_first_mention_and_computes_the_coupling() -> None:
    region = asm.build_region(_owner(), _coupling_region())
    kinds = [(type(s).__name__, s.consumes, s.produces, s.reads) for s in region.steps]
    # x is first met as the Split's input (slot 0), its pieces next, then the coupling's output
    assert kinds == [("Slice", (0,), (1, 2), ()), ("Coupling", (1,), (3,), (2,))]
    assert (region.inputs, region.outputs) == ((0,), (3, 2))
    x = torch.arange(8.0).reshape(2, 4)
    y, b = region([x], "standard", torch.float32)
    assert torch.equal(b, x[:, 2:]) and torch.equal(y, x[:, :2] - 2 * x[:, 2:])


def test_invert_region_rebuilds_the_inputs() -> None:
    region = asm.build_region(_owner(), _coupling_region())
    x = torch.randn(3, 4, dtype=torch.float64)
    y, b = region([x], "standard", torch.float64)
    (back,) = asm.invert_region(region, (b, y), [1, 0], [0], torch.float64)
    assert torch.allclose(back, x)


def test_checkpoint_segments_are_runs_of_two_or_more_ordinary_ops() -> None:
    ops = [(["x"], ["a"], True), (["a"], ["b"], True),            # a run of two
           (["b"], ["c"], False),                                  # a region
           (["c"], ["d"], True),                                   # alone: not worth a segment
           (["d"], ["e"], False),
           (["e", "a"], ["f", "g"], True), (["f"], ["h"], True)]   # reads a from the first run
    assert asm.checkpoint_segments(ops, ["h"]) == [
        (0, 2, ["x"], ["a", "b"]),        # a is read again after the run, so it is returned too
        (5, 7, ["e", "a"], ["h"]),        # g is read by nobody: not returned
    ]
    assert asm.checkpoint_segments([], []) == []


def test_shared_values_and_copies_inputs_protect_what_others_still_read() -> None:
    plan = C.lower(wired_revnet(1))
    shared = asm.shared_values(plan)
    assert {op.output for op in plan.inputs} <= shared
    region = next(op for op in plan.ops if op.kind == "region")
    assert set(region.outputs) <= shared
    relu = nn.ReLU(inplace=True)
    value = next(iter(shared))
    assert asm.copies_inputs(relu, [value], shared)
    assert not asm.copies_inputs(nn.ReLU(), [value], shared)
    assert not asm.copies_inputs(relu, ["not-shared"], shared)


def test_stream_dtype_widens_narrow_models_except_on_mps() -> None:
    """float32 models get compensated float32 pairs (float64's accuracy, no converted copy
    for F), float16/bfloat16 models float64 streams."""
    cpu, mps = torch.device("cpu"), torch.device("mps")
    assert asm.stream_dtype(torch.float32, cpu) == "float32x2"
    assert asm.stream_dtype(torch.bfloat16, cpu) is torch.float64
    assert asm.stream_dtype(torch.float64, cpu) is None
    assert asm.stream_dtype(torch.float32, mps) is None


@pytest.mark.parametrize("make", [lambda: wired_revnet(2), lambda: coupling_repeat(2)], ids=["wired", "repeat"])
def test_region_data_is_plain_and_the_compiled_regions_are_built_from_it(make) -> None:
    torch.manual_seed(0)
    model = C.compile(make(), device="cpu")
    ops = [op for op in model.plan.ops if op.kind == "region"]
    assert ops and len(ops) == len(model._regions)

    def plain(value) -> bool:
        if isinstance(value, dict):
            return all(isinstance(k, str) and plain(v) for k, v in value.items())
        if isinstance(value, list):
            return all(plain(v) for v in value)
        return isinstance(value, (str, int))

    for op, region in zip(ops, model._regions):
        data = asm.region_data(op, model.plan.groups)
        assert plain(data)
        again = asm.build_region(model, data)
        assert [(type(s).__name__, s.consumes, s.produces, s.reads) for s in again.steps] == \
            [(type(s).__name__, s.consumes, s.produces, s.reads) for s in region.steps]
        assert (again.inputs, again.outputs, again.side, again.free) == \
            (region.inputs, region.outputs, region.side, region.free)


def test_coupling_functions_follow_deepcopy_and_pickle() -> None:
    torch.manual_seed(0)
    model = C.compile(wired_revnet(1), device="cpu")
    x = torch.randn(2, *model.plan.inputs[0].shape)
    expected = model(x)
    for twin in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        coupling = next(s for r in twin._regions for s in r.steps if isinstance(s, rt.Coupling))
        assert isinstance(coupling.fn, asm.LayerChain)
        owned = {id(m) for m in twin.modules()}
        assert all(id(m) in owned for m, _ins, _outs in coupling.fn.calls)  # the copy's layers, not the original's
        with torch.no_grad():
            for p in twin.parameters():
                p.add_(1.0)
        assert not torch.equal(twin(x), expected)
        assert torch.equal(model(x), expected)
