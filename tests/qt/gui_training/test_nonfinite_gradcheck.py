"""A gradient check whose result is NaN or Inf: a warning on the plots, not a point silently left out.

The rows write NaN and Inf as null, which is also what a region whose inversion error was not
measured gets; the row's ``nonfinite`` key says which nulls were NaN or Inf.
"""
from __future__ import annotations

import math

from revstudio.qt.plots.panel import PlotsPanel
from revstudio.qt.plots.rows import GRAD_PREFIX, INV_PREFIX, RunData


def _run(last_region: dict) -> RunData:
    run = RunData("bad")
    run.feed({"kind": "event", "event": "started", "time": 0.0, "mode": "reversible", "total_steps": 20,
              "regions": ["r0"], "config": {"precision": "fp32"}})
    for s in (10, 20):
        run.feed({"kind": "step", "step": s, "epoch": s / 10, "time": s * 0.1, "loss": 1.0, "samples_per_s": 10.0})
        region = {"region": "r0", "grad_rel_error": 1e-8, "inversion_error": 1e-7} if s == 10 else last_region
        run.feed({"kind": "gradcheck", "step": s, "epoch": s / 10, "time": s * 0.1, "regions": [region]})
    return run


def test_a_nan_gradient_check_warns_in_the_plots(qtbot) -> None:
    panel = PlotsPanel()
    qtbot.addWidget(panel)
    run = _run({"region": "r0", "grad_rel_error": None, "inversion_error": None,
                "nonfinite": ["grad_rel_error", "inversion_error"]})
    assert len(run.series[GRAD_PREFIX + "r0"]) == 2 and math.isnan(run.series[GRAD_PREFIX + "r0"].last())
    assert math.isnan(run.series[INV_PREFIX + "r0"].last())
    panel.show()
    panel.set_runs([run])
    assert panel.warning.isVisibleTo(panel)
    assert "Region r0" in panel.warning.text() and "NaN or Inf" in panel.warning.text()
    assert "at step 20" in panel.warning.text()


def test_an_unmeasured_inversion_error_is_no_point_and_no_warning(qtbot) -> None:
    panel = PlotsPanel()
    qtbot.addWidget(panel)
    run = _run({"region": "r0", "grad_rel_error": 1e-8, "inversion_error": None})
    assert len(run.series[INV_PREFIX + "r0"]) == 1
    panel.set_runs([run])
    assert panel.warning.text() == ""


def test_a_plugin_layer_whose_inverse_misses_is_named_not_called_a_precision_loss(qtbot) -> None:
    """A gradient check row names the layers whose inverse misses (``inverse_off``): a plugin's is
    its bug, so the plots name the node and the plugin instead of advising a smaller learning rate."""
    from revstudio.core.plugins import Provider
    from revstudio.core.spec import NodeSpec, registry

    spec = NodeSpec(type_id="PanelTwice", category="Test", help="", params={}, inputs=("in",), outputs=("out",),
                    infer=lambda ctx: {"out": ctx.input("in")})
    registry.register(spec, Provider("twice", "twice.nodes:SPECS", "revstudio-twice", "0.1"))
    try:
        panel = PlotsPanel()
        qtbot.addWidget(panel)
        run = _run({"region": "r0", "grad_rel_error": 1e-8, "inversion_error": 0.2,
                    "inverse_off": [{"node": "t", "type": "PanelTwice", "error": 0.2}]})
        panel.show()
        panel.set_runs([run])
        text = panel.warning.text()
        assert "Region r0 at step 20: The inverse of node t (PanelTwice) does not undo its forward" in text, text
        assert "a bug in the plugin revstudio-twice (entry point 'twice')" in text, text
        assert "mode checkpoint or standard" in text and "losing precision" not in text, text
    finally:
        registry._specs.pop("PanelTwice", None)
        registry._providers.pop("PanelTwice", None)
