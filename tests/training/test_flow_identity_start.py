"""A deep flow starts with its couplings as the identity, and a diverged one says how to get there.

64 copies of a Glow step (``generate.glow_repeat``) whose couplings' last layer kept PyTorch's
default init scaled the input by up to exp(2) per coupling at the start: the first step's largest
gradient was 5,312 and the gradients went NaN at step 2, at any learning rate and in every mode.
Glow and RealNVP zero-initialise that layer; the helper now does, and a run of a hand-drawn flow
that diverges names the coupling whose last layer to zero.
"""
from __future__ import annotations

import torch

from revstudio.compiler import compile as compile_graph
from revstudio.core.generate import glow_repeat
from revstudio.diagnostics.coupling_init import couplings_not_starting_as_identity, identity_start_advice


def test_the_glow_helper_starts_every_coupling_as_the_identity() -> None:
    graph = glow_repeat(2, size=4)
    assert couplings_not_starting_as_identity(graph) == []
    assert identity_start_advice(graph) == ""
    torch.manual_seed(0)
    model = compile_graph(graph, dtype=torch.float64, device="cpu")
    x = torch.randn(2, 3, 4, 4, dtype=torch.float64)
    model.initialize(x)
    with torch.no_grad():
        model(x)
    couplings = [m for m in model.modules() if type(m).__name__ == "AffineCoupling"]
    assert len(couplings) == 2
    assert all(m.logdet is not None and float(m.logdet.abs().max()) == 0.0 for m in couplings)  # log-scale 0


def test_a_flow_whose_coupling_keeps_a_random_last_layer_is_told_to_zero_it() -> None:
    graph = glow_repeat(2, size=4)
    graph.groups["net"].set_param("scale_shift", "init", "default")
    assert couplings_not_starting_as_identity(graph) == [("'coupling' (in group 'step')", "scale_shift", "default")]
    advice = identity_start_advice(graph)
    assert "'coupling' (in group 'step')" in advice and "'scale_shift'" in advice and "init to 'zeros'" in advice
