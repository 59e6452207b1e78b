"""The exported Model's mode switch, dtypes and group inverses behave like the compiled module's."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from revstudio.codegen import export  # noqa: E402
from revstudio.compiler import compile as rs_compile  # noqa: E402
from revstudio.core import generate  # noqa: E402


def _pair(graph):
    """(compiled, exported) with the same weights; the export runs in this process."""
    torch.manual_seed(0)
    compiled = rs_compile(graph, device="cpu")
    namespace: dict[str, object] = {"__name__": "exported_for_test"}
    exec(compile(export(graph), "exported.py", "exec"), namespace)  # generated code, project text only as data
    exported = namespace["Model"]()  # type: ignore[operator]
    exported.load_state_dict(compiled.state_dict())
    return compiled, exported, namespace


def _step(model, x):
    x = x.clone().requires_grad_(True)
    out = model(x)
    out.square().sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    return out.detach(), x.grad, grads


@pytest.mark.parametrize("mode", ["reversible", "standard", "checkpoint"])
def test_autocast_bf16_matches_the_compiled_module(mode: str) -> None:
    compiled, exported, _ = _pair(generate.revnet_chain(2, channels=4, size=4, wired=True))
    x = torch.randn(2, 4, 4, 4)
    results = []
    for model in (compiled, exported):
        model.mode = mode
        with torch.autocast("cpu", dtype=torch.bfloat16):
            results.append(_step(model, x))
    (a_out, a_gx, a_gp), (b_out, b_gx, b_gp) = results
    assert torch.equal(a_out, b_out) and torch.equal(a_gx, b_gx)
    assert all(torch.equal(a, b) for a, b in zip(a_gp, b_gp))


def test_double_follows_the_weights_like_the_compiled_module() -> None:
    compiled, exported, _ = _pair(generate.revnet_chain(1, channels=4, size=4, wired=False))
    compiled.double()
    exported.double()
    x = torch.randn(2, 4, 4, 4, dtype=torch.float64)
    (a_out, a_gx, _), (b_out, b_gx, _) = _step(compiled, x), _step(exported, x)
    assert a_out.dtype == b_out.dtype == torch.float64
    assert torch.equal(a_out, b_out) and torch.equal(a_gx, b_gx)


def test_unknown_mode_is_refused_with_the_choices() -> None:
    _compiled, exported, _ = _pair(generate.revnet_chain(1, channels=4, size=4, wired=True))
    with pytest.raises(ValueError, match="reversible, standard, checkpoint"):
        exported.mode = "fast"
    assert exported.mode == "reversible"


def test_mode_reaches_the_groups() -> None:
    _compiled, exported, _ = _pair(generate.revnet_chain(2, channels=4, size=4, wired=False))
    exported.mode = "checkpoint"
    modes = {m._mode for m in exported.modules() if isinstance(getattr(m, "_mode", None), str)}
    assert modes == {"checkpoint"}


def test_invertible_group_classes_have_an_inverse() -> None:
    _compiled, exported, namespace = _pair(generate.revnet_chain(1, channels=4, size=4, wired=False))
    block = exported.blocks.blocks[0]
    assert type(block).__name__ == "GroupBlock" and namespace["GroupBlock"] is type(block)
    x = torch.randn(3, 4, 4, 4, dtype=torch.float64)
    block.double()
    with torch.no_grad():
        (y,) = block(x)
        (x_again,) = block.inverse(y)
    assert torch.allclose(x, x_again, atol=1e-12)


def test_exported_regions_pick_the_stream_layout_like_the_compiled_module() -> None:
    """channels_last streams for convolutions on the CPU: outputs come back in the same
    layout, bit for bit, from the exported model (it runs the same runtime)."""
    b = generate.Builder("blocks")
    src = f"{b.node('Input', 'x', shape=[4, 4, 4])}.out"
    for i in range(2):
        src = generate.wired_block(b, src, f"b{i}", 4)
    b.node("Output", "y")
    b.wire(src, "y")
    compiled, exported, _ = _pair(b.done())
    x = torch.randn(2, 4, 4, 4)
    (a_out, a_gx, a_gp), (b_out, b_gx, b_gp) = _step(compiled, x), _step(exported, x)
    assert a_out.is_contiguous(memory_format=torch.channels_last) and a_out.stride() == b_out.stride()
    assert torch.equal(a_out, b_out) and torch.equal(a_gx, b_gx)
    assert all(torch.equal(a, b) for a, b in zip(a_gp, b_gp))


def _errors(model) -> list:
    return [part.last_error for m in model.modules() for part in vars(m).values() if hasattr(part, "track_error")]


def test_track_inversion_switches_the_measurement_like_the_compiled_module() -> None:
    compiled, exported, _ = _pair(generate.revnet_chain(2, channels=4, size=4, wired=False))  # regions in groups
    x = torch.randn(2, 4, 4, 4)
    assert exported.track_inversion is True
    _step(exported, x)
    assert any(e is not None for e in _errors(exported))  # measured by default, as compiled
    compiled.track_inversion = exported.track_inversion = False
    for m in exported.modules():
        for part in vars(m).values():
            if hasattr(part, "track_error"):
                part.last_error = None
    a, b = _step(compiled, x), _step(exported, x)
    assert all(e is None for e in _errors(exported))  # nothing measured, as compiled
    assert torch.equal(a[0], b[0]) and all(torch.equal(u, v) for u, v in zip(a[2], b[2]))


def test_an_exported_model_refuses_a_memory_budget_it_would_not_use() -> None:
    """``model.memory_budget = 64 << 20`` on an exported model, as on a compiled one, was a plain
    attribute nothing read: every region stayed reversible, without a word."""
    compiled, exported, _ = _pair(generate.revnet_chain(2, channels=4, size=4, wired=True))
    assert exported.memory_budget is None and compiled.memory_budget is None
    exported.memory_budget = None  # (no budget: what it runs anyway)
    with pytest.raises(ValueError, match="an exported model does not carry a memory budget") as info:
        exported.memory_budget = 64 << 20
    assert "revstudio.compile(graph, memory_budget=" in str(info.value) and "revstudio train" in str(info.value)
    assert exported.memory_budget is None


def test_the_training_script_does_not_measure_inversion_errors(tmp_path) -> None:
    # revstudio train turns the measurement off (nothing reads it in a run); the script paid for it every step
    import runpy

    path = tmp_path / "t.py"
    path.write_text(export(generate.revnet_chain(1, channels=4, size=4, wired=True), with_training=True))
    script = runpy.run_path(str(path))  # defines, runs nothing (no __main__)
    config = {**script["TRAINING"], "steps": 1, "batch_size": 4, "val_fraction": 0.0, "device": "cpu"}
    model = script["train"](config, out=str(tmp_path / "ck.pt"))
    assert model.track_inversion is False and all(e is None for e in _errors(model))


@pytest.mark.slow
@pytest.mark.parametrize("wired", [True, False], ids=["wired", "repeat"])
def test_checkpoint_mode_survives_torch_compile(wired: bool) -> None:
    """The exported checkpoint mode calls torch.utils.checkpoint with a ``context_fn``, which
    dynamo cannot trace: it runs eagerly inside torch.compile, as the compiled module's does."""
    compiled, exported, _ = _pair(generate.revnet_chain(2, channels=4, size=4, wired=wired))
    exported.mode = "checkpoint"
    x = torch.randn(2, 4, 4, 4)
    traced = _step(torch.compile(exported, backend="aot_eager"), x)
    eager = _step(exported, x)
    for a, b in zip([traced[0], traced[1], *traced[2]], [eager[0], eager[1], *eager[2]]):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-6)
