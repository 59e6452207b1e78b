"""Every example project and random valid graphs: analysis never fails, compile works, and the
reversible gradients equal the standard ones in float64, with the streams in either layout."""
from __future__ import annotations

import pytest
import torch

import revstudio.compiler as C
from revstudio.core.check import check
from revstudio.core.examples import example_projects
from revstudio.core.generate import random_graph, revnet_chain
from revstudio.core.graph import Graph

torch.set_num_threads(1)

CASES: dict[str, Graph] = {
    **{f"example_{k}": v for k, v in example_projects().items()},
    "revnet_chain_wired": revnet_chain(3, channels=4, size=4),
    "revnet_chain_coupling": revnet_chain(3, channels=4, size=4, wired=False),
    **{f"random_{seed}": random_graph(seed, 20) for seed in range(12)},
    **{f"random_large_{seed}": random_graph(seed, 30) for seed in range(100, 104)},
}


def _grads(model: C.CompiledModel, mode: str, xs: list[torch.Tensor]) -> list[torch.Tensor]:
    model.mode = mode
    model.zero_grad(set_to_none=True)
    for x in xs:
        x.grad = None
    torch.manual_seed(3)
    outs = model(*xs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    sum((o * torch.linspace(-1, 1, o.numel(), dtype=o.dtype).view_as(o)).sum() for o in outs).backward()
    return ([x.grad if x.grad is not None else torch.zeros_like(x) for x in xs]
            + [p.grad if p.grad is not None else torch.zeros_like(p) for p in model.parameters()])


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiles_and_reversible_gradients_match(name: str) -> None:
    graph = CASES[name]
    report = check(graph)
    analysis = C.analyze(graph, report)  # never raises, valid or not
    assert all(r.nodes and r.inputs and r.outputs for r in analysis.regions)
    if not report.valid:
        with pytest.raises(C.CompileError):
            C.compile(graph, device="cpu", report=report)
        return
    torch.manual_seed(0)
    model = C.compile(graph, device="cpu", dtype=torch.float64, report=report)
    gen = torch.Generator().manual_seed(1)
    xs = [torch.randn(2, *op.shape, generator=gen, dtype=torch.float64, requires_grad=True)
          for op in model.plan.inputs]
    standard = _grads(model, "standard", xs)
    reversible = _grads(model, "reversible", xs)
    for a, b in zip(reversible, standard):
        assert float((a - b).abs().max()) <= 1e-9 * max(1.0, float(b.abs().max()))
    # streams in channels_last (what float32 regions with convolutions pick on the CPU)
    model.memory_format = torch.channels_last
    for a, b in zip(_grads(model, "reversible", xs), standard):
        assert float((a - b).abs().max()) <= 1e-9 * max(1.0, float(b.abs().max()))


def test_examples_have_the_regions_their_names_promise() -> None:
    for name in ("revnet_wired", "revnet_coupling", "glow_flow"):
        graph = example_projects()[name]
        analysis = C.analyze(graph, check(graph))
        assert len(analysis.regions) >= 1, name
        assert not analysis.near_misses, (name, [str(d) for d in analysis.near_misses])


def test_every_lowered_op_reads_only_values_defined_before_it() -> None:
    """Torch-free and cheap, so many graphs: regions run as units after all they read."""
    from revstudio.compiler.plan import CouplingOp, InputOp, OutputOp, RegionOp, lower

    checked = 0
    for seed in range(80):
        for size in (15, 30, 45):
            graph = random_graph(seed, size)
            report = check(graph)
            if not report.valid:
                continue
            plan = lower(graph, report)
            defined: set[str] = set()
            for op in plan.ops:
                if isinstance(op, InputOp):
                    defined.add(op.output)
                elif isinstance(op, OutputOp):
                    assert op.input in defined
                else:
                    assert set(op.inputs) <= defined, (seed, size, getattr(op, "id", getattr(op, "node", "")))
                    defined |= set(op.outputs)
                    if isinstance(op, RegionOp):
                        inner = set(op.inputs)
                        for step in op.steps:
                            reads = (step.a, *step.b) if isinstance(step, CouplingOp) else step.inputs
                            assert set(reads) <= inner
                            inner |= {step.output} if isinstance(step, CouplingOp) else set(step.outputs)
            checked += 1
    assert checked > 100
