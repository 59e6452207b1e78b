"""An inversion error that was not measured reads as unmeasured (None), never as 0.

A region whose input is the caller's own batch uses that tensor as the reference for its
inversion error; a caller that drops it before backward leaves the region unmeasured, and the
gradient-check row, the terminal line and ``GradReport`` must not turn that into "exact".
"""
from __future__ import annotations

import io

import torch

from revstudio.compiler import compile as compile_graph
from revstudio.core.generate import glow_repeat
from revstudio.diagnostics.gradcheck import GradReport
from revstudio.training.inrun import region_gradcheck
from revstudio.training.output import Progress


def test_a_region_whose_input_was_dropped_is_unmeasured_not_zero() -> None:
    torch.manual_seed(0)
    model = compile_graph(glow_repeat(1, size=4), mode="reversible", dtype=torch.float64, device="cpu")
    gen = torch.Generator().manual_seed(1)

    def step() -> torch.Tensor:  # the batch is made here and dropped as soon as forward returns
        return model(torch.randn(2, 3, 4, 4, generator=gen, dtype=torch.float64)).pow(2).sum()

    model.initialize(torch.randn(2, 3, 4, 4, dtype=torch.float64))
    row = region_gradcheck(model, model.regions, step, torch.device("cpu"), seed=0)
    assert [r["inversion_error"] for r in row["regions"]] == [None]
    assert row["max_inversion_error"] is None
    assert model.inversion_errors() == {}
    out = io.StringIO()
    Progress(out).on_gradcheck({"step": 1, **row})
    assert "inversion error not measured" in out.getvalue()


def test_a_report_without_inversion_figures_has_no_maximum() -> None:
    report = GradReport(dtype="float64", batch=2, seed=0, tolerance=1e-10, mode="reversible", gradient_norm=1.0)
    assert report.max_inversion_error is None
    assert report.to_json()["max_inversion_error"] is None
