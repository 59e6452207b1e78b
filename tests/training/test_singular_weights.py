"""Weights that drive an InvConv1x1's matrix singular: a ``nan`` row naming the node, not an internal error.

Reversible mode rebuilds an InvConv1x1's input with its matrix's inverse; a learning rate far too
high makes that matrix singular in float32 (its LU diagonal exp(log_s) underflows to 0), where
torch's ``linalg.inv`` raises inside backward. The run and ``revstudio gradcheck`` say which node.
"""
from __future__ import annotations

import json
import math

import torch
from training_kit import ROOT, Rows, prepared

from revstudio.diagnostics.check import full_check
from revstudio.training.loop import train

GLOW = ROOT / "resources" / "examples" / "glow_flow.revs"


def test_a_diverging_flow_whose_matrix_goes_singular_stops_naming_the_node(tmp_path) -> None:
    graph, report, cfg, data = prepared(GLOW, steps=6, lr=30.0, optimizer="sgd", batch_size=8, checkpoint_every=1,
                                        gradcheck_every=0, memory_every=0, val_every=0)
    rows = Rows()
    result = train(graph, report, cfg, data, callbacks=[rows], run_dir=str(tmp_path))
    assert result.status == "nan" and result.exit_code == 1
    nan = rows.event("nan")[0]
    assert nan["node"] in ("invconv0", "invconv1")
    assert "singular" in nan["message"] and f"at step {nan['step']}" in nan["message"]
    assert "internal error" not in nan["message"]
    # the checkpoint kept is one whose matrices still invert
    saved = torch.load(tmp_path / "checkpoints" / "last.pt", weights_only=True)
    assert saved["step"] < nan["step"]
    for key in ("invconv0.lu", "invconv1.lu"):
        assert bool(torch.exp(torch.diagonal(saved["model"][key])).ne(0).all())


def test_gradcheck_at_singular_weights_names_the_node() -> None:
    import pytest

    from revstudio.compiler import compile as compile_graph
    from revstudio.core.project import load
    from revstudio.diagnostics.gradcheck import compare_modes
    from revstudio.diagnostics.singular import SingularLayer

    graph = load(GLOW)
    state = compile_graph(graph, device="cpu").state_dict()
    state["invconv1.lu"].diagonal()[0] = -200.0  # exp(-200) is 0 in float32
    with pytest.raises(SingularLayer, match="InvConv1x1 node 'invconv1'"):
        compare_modes(graph, dtype="float32", state=state)


def _deep_flow(tmp_path) -> str:
    """glow_flow's step as a group repeated 8 times, its coupling with no clamp on the log-scale."""
    glow = json.loads(GLOW.read_text())
    step = {"nodes": [{"id": "in", "type": "GroupInput", "params": {"port": "in"}},
                      {"id": "an", "type": "ActNorm", "params": {}},
                      {"id": "ic", "type": "InvConv1x1", "params": {"lu": True}},
                      {"id": "cp", "type": "AffineCoupling", "params": {"clamp": 0.0, "net": "net"}},
                      {"id": "out", "type": "GroupOutput", "params": {"port": "out"}}],
            "edges": [["in.out", "an.in"], ["an.out", "ic.in"], ["ic.out", "cp.in"], ["cp.out", "out.in"]]}
    project = {"format": "revstudio", "version": 1, "name": "deep-flow",
               "nodes": [{"id": "image", "type": "Input", "params": {"shape": [3, 8, 8]}},
                         {"id": "squeeze", "type": "Squeeze", "params": {"factor": 2}},
                         {"id": "steps", "type": "Repeat", "params": {"group": "step", "times": 8}},
                         {"id": "z", "type": "Output", "params": {"name": "z"}}],
               "edges": [["image.out", "squeeze.in"], ["squeeze.out", "steps.in"], ["steps.out", "z.in"]],
               "groups": {"net": glow["groups"]["net"], "step": step}}
    path = tmp_path / "deep_flow.revs"
    path.write_text(json.dumps(project))
    return str(path)


def test_a_non_finite_loss_names_the_layer_inside_a_region_and_group(tmp_path) -> None:
    # at lr 1 a log-scale overflows by step 2. The whole flow is one reversible region, whose
    # layers the model's direct children never were (the row said node null), and an fp32 run
    # was told to try fp32
    graph, report, cfg, data = prepared(_deep_flow(tmp_path), steps=3, lr=1.0, gradcheck_every=0, memory_every=0,
                                        val_every=0, checkpoint_every=0)
    rows = Rows()
    result = train(graph, report, cfg, data, callbacks=[rows])
    assert result.status == "nan"
    nan = rows.event("nan")[0]
    assert nan["node"] == "steps" and nan["inner_node"].startswith("steps.blocks.")
    assert f"first at node 'steps' (inside it, {nan['inner_node']!r})" in nan["message"]
    assert "fp32" not in nan["message"]


def test_an_affine_coupling_whose_scale_underflows_is_named_at_the_step_it_breaks(tmp_path, monkeypatch) -> None:
    # exp(-200) is 0 in float32: the coupling's output is finite (so is the loss), its inverse
    # 0 * inf = NaN, so reversible mode's gradients are NaN. The step wrote them into the weights
    # and the next step's loss was blamed on the first layer, with "try a lower --lr"
    from revstudio.training import loop

    graph, report, cfg, data = prepared(GLOW, steps=3, batch_size=8, gradcheck_every=0, memory_every=0,
                                        val_every=0, checkpoint_every=1)
    for node in graph:
        if node.type == "AffineCoupling":
            graph.set_param(node.id, "clamp", 0.0)
    report = full_check(graph, batch=cfg.batch_size)  # (of the graph as edited: compile refuses a stale one)
    real = loop.make_optimizer

    def poisoning(cfg, params):  # after the first step, the log-scale a diverging run could reach
        params = list(params)
        optimizer = real(cfg, params)
        target = [p for p in params if p.dim() == 1 and p.numel() == 12][-1]  # coupling1.net.scale_shift.bias

        def hook(opt, args, kwargs) -> None:
            if opt.state and not getattr(opt, "poisoned", False):
                opt.poisoned = True
                with torch.no_grad():
                    target[:6] = -200.0  # the log-scale half

        optimizer.register_step_post_hook(hook)
        return optimizer

    monkeypatch.setattr(loop, "make_optimizer", poisoning)
    rows = Rows()
    result = train(graph, report, cfg, data, callbacks=[rows], run_dir=str(tmp_path))
    assert result.status == "nan"
    nan = rows.event("nan")[0]
    assert nan["step"] == 2 and nan["node"] == "coupling1"
    assert "AffineCoupling" in nan["message"] and "clamp" in nan["message"] and "at step 2" in nan["message"]
    saved = torch.load(tmp_path / "checkpoints" / "last.pt", weights_only=True)
    assert all(bool(torch.isfinite(v).all()) for v in saved["model"].values() if v.is_floating_point())


def test_a_gradient_check_row_says_which_nulls_are_nan_or_inf() -> None:
    from revstudio.compiler import compile as compile_graph
    from revstudio.core.project import load
    from revstudio.training.inrun import region_gradcheck
    from revstudio.training.output import dumps

    graph = load(GLOW)
    for node in graph:
        if node.type == "AffineCoupling":
            graph.set_param(node.id, "clamp", 0.0)
    torch.manual_seed(0)
    model = compile_graph(graph, device="cpu")
    x = torch.randn(2, 3, 16, 16)
    model(x)
    with torch.no_grad():
        model.coupling1.net.scale_shift.bias[:6] = -200.0  # exp() of the log-scale is 0: the inverse is NaN

    def step() -> torch.Tensor:
        return model(x).pow(2).mean() - model.logdet.mean()

    result = region_gradcheck(model, model.regions, step, torch.device("cpu"), 0)
    region = result["regions"][0]
    assert region["nonfinite"] == ["grad_rel_error", "inversion_error"]
    assert result["max_grad_rel_error"] == math.inf and result["max_inversion_error"] == math.inf
    row = json.loads(dumps({"kind": "gradcheck", "step": 1, **result}))
    assert row["regions"][0]["grad_rel_error"] is None and row["regions"][0]["nonfinite"]
