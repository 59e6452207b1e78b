"""Forward drops each value once nothing after it reads it, as a forward written by hand does:
what autograd did not save is freed at once, not when forward returns. The compiled module
held every value of the run in its dict until forward returned; a chain of layers whose
outputs no layer saves (a permutation, a dropout, a gelu before a Linear) then peaked at the
sum of all of them in standard mode: 440,340 B where the estimate said 270,932 (random graph 7
at batch 256; now 270,940 measured). The exported code drops them too (``del``)."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from revstudio.codegen import export  # noqa: E402
from revstudio.compiler import compile as rs_compile  # noqa: E402
from revstudio.core.generate import Builder  # noqa: E402
from revstudio.diagnostics.check import full_check  # noqa: E402
from revstudio.diagnostics.memory import measure_step  # noqa: E402

BATCH = 64


def _unsaved_chain(length: int, tracked: bool = True):
    """x -> Conv -> (Permute -> Dropout) * length -> Linear -> y: a permutation keeps only its
    index and a dropout its mask, so no layer keeps the values between them. Without the Conv
    (``tracked=False``) nothing before the Linear needs a gradient: autograd records none of it."""
    b = Builder("unsaved-chain")
    b.node("Input", "x", shape=[16, 8])
    src = "x.out"
    if tracked:
        src = b.chain(src, b.node("Conv", "stem", out_channels=16, kernel_size=1))
    for i in range(length):
        src = b.chain(src, b.node("Permute", f"p{i}", kind="shuffle", seed=i), b.node("Dropout", f"d{i}", p=0.1))
    src = b.chain(src, b.node("Linear", "head", out_features=4))
    b.wire(src, b.node("Output", "y"))
    return b.done()


def _peak(model, mode: str) -> dict:
    model.train()
    model.mode = mode
    return measure_step(model, (torch.randn(BATCH, 16, 8),), timing_runs=0)


@pytest.mark.parametrize("mode", ["standard", "checkpoint"])
def test_a_longer_chain_of_unsaved_values_does_not_raise_the_forward_peak(mode: str) -> None:
    short, long = _unsaved_chain(2), _unsaved_chain(8)
    value = BATCH * 16 * 8 * 4
    peaks = {}
    for name, graph in (("short", short), ("long", long)):
        torch.manual_seed(0)
        model = rs_compile(graph, device="cpu")
        peaks[name] = _peak(model, mode)
        report = full_check(graph, batch=BATCH)
        estimate = report.estimate.peak_bytes(mode)
        assert abs(estimate / peaks[name]["peak_bytes"] - 1) < 0.02, (name, estimate, peaks[name])
    # six more links keep six more masks (checkpoint mode while it recomputes them), not the
    # values between them as well
    grown = peaks["long"]["peak_bytes"] - peaks["short"]["peak_bytes"]
    assert grown <= 6 * value, grown


def test_the_exported_model_drops_values_as_the_compiled_one_does() -> None:
    graph = _unsaved_chain(8)
    torch.manual_seed(0)
    compiled = rs_compile(graph, device="cpu")
    source = export(graph)
    assert "        del " in source
    namespace: dict[str, object] = {"__name__": "exported_for_test"}
    exec(compile(source, "exported.py", "exec"), namespace)  # generated code, project text only as data
    exported = namespace["Model"]()  # type: ignore[operator]
    exported.load_state_dict(compiled.state_dict())
    value = BATCH * 16 * 8 * 4
    for mode in ("standard", "reversible", "checkpoint"):
        ours, theirs = _peak(compiled, mode), _peak(exported, mode)
        assert ours["kept_bytes"] == theirs["kept_bytes"], mode
        # a run of layers is a method the exported forward calls (checkpoint mode recomputes it),
        # and the forward's own name for the run's input holds it until the call returns
        assert ours["peak_bytes"] <= theirs["peak_bytes"] <= ours["peak_bytes"] + value, mode


def test_dropout_keeps_a_mask_of_the_inputs_dtype_on_the_cpu() -> None:
    """torch's CPU dropout multiplies by a float mask and keeps it (4 bytes a value in float32);
    on CUDA one fused kernel keeps a bool mask. The estimate counted the bool mask everywhere:
    a quarter of what the CPU keeps."""
    graph = _unsaved_chain(3)
    torch.manual_seed(0)
    model = rs_compile(graph, device="cpu")
    measured = _peak(model, "standard")["kept_bytes"]
    cpu = full_check(graph, batch=BATCH).estimate
    cuda = full_check(graph, batch=BATCH, device="cuda").estimate
    assert abs(cpu.activation_bytes("standard") - measured) <= 1024, (cpu.activation_bytes("standard"), measured)
    masks = 3 * BATCH * 16 * 8
    assert cpu.activation_bytes("standard") - cuda.activation_bytes("standard") == 3 * masks


def test_layers_no_gradient_reaches_keep_nothing() -> None:
    """The caller's inputs need no gradient: a dropout or permutation before the first layer
    with weights is not recorded by autograd and keeps nothing. The estimate counted their
    masks and the values they hand on (132,096 B where the model keeps 33,796)."""
    graph = _unsaved_chain(3, tracked=False)
    torch.manual_seed(0)
    measured = _peak(rs_compile(graph, device="cpu"), "standard")
    estimate = full_check(graph, batch=BATCH).estimate
    assert abs(estimate.activation_bytes("standard") - measured["kept_bytes"]) <= 64
    assert abs(estimate.peak_bytes("standard") / measured["peak_bytes"] - 1) < 0.02
