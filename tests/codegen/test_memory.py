"""The exported runtime holds what the compiled module holds: exact tensor accounting on the CPU.

Bit-identical outputs do not show memory: a region run reversibly where the compiler runs it
in standard mode gives the same numbers and keeps more. Peaks and kept bytes of one step are
measured with revstudio's live-tensor accounting (never RSS) for both, with the same weights.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from revstudio.codegen import export  # noqa: E402
from revstudio.compiler import compile as rs_compile  # noqa: E402
from revstudio.core import generate  # noqa: E402
from revstudio.core.generate import Builder, _body  # noqa: E402
from revstudio.diagnostics.memory import measure_step  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from random_revnets import random_skipnet  # noqa: E402


def _pair(graph: Any) -> tuple[Any, Any]:
    torch.manual_seed(0)
    compiled = rs_compile(graph, device="cpu")
    namespace: dict[str, Any] = {"__name__": "exported_for_memory"}
    exec(compile(export(graph), "exported.py", "exec"), namespace)  # generated code; ids only as data
    exported = namespace["Model"]()
    exported.load_state_dict(compiled.state_dict())
    return compiled, exported


def _step(model: Any, mode: str, x: Any) -> tuple[int, int]:
    model.mode = mode
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        result = measure_step(model, [x], timing_runs=0)
    finally:
        torch.set_num_threads(threads)
    return result["peak_bytes"], result["kept_bytes"]


def _reshape_ending_f() -> Any:
    """A coupling whose F and G end in a Reshape: a region nested in each body that only
    rearranges values, which the compiled module runs as standard mode."""
    b = Builder("nested-reshape")
    b.node("Input", "x", shape=[8, 8])
    for name in ("f", "g"):
        b.graph.groups[name] = _body(name, lambda bb, s, name=name: bb.chain(
            s, bb.node("Linear", f"{name}_fc", out_features=32), bb.node("Activation", f"{name}_act", fn="tanh"),
            bb.node("Reshape", f"{name}_shape", shape=[4, 8])))
    b.chain("x.out", b.node("AdditiveCoupling", "c", f="f", g="g"), b.node("Flatten", "flat"),
            b.node("Linear", "head", out_features=3), b.node("Output", "y"))
    return b.done()


@pytest.mark.parametrize("mode", ["reversible", "standard", "checkpoint"])
def test_a_nested_rearranging_region_costs_what_it_costs_compiled(mode: str) -> None:
    compiled, exported = _pair(_reshape_ending_f())
    x = torch.randn(16, 8, 8)
    assert _step(exported, mode, x) == _step(compiled, mode, x)


def test_exported_reversible_memory_is_flat_in_depth_like_the_compiled_module() -> None:
    x = torch.randn(2, 4, 4, 4)
    kept = {}
    for depth in (1, 3):
        compiled, exported = _pair(generate.revnet_chain(depth, channels=4, size=4, wired=True))
        for mode in ("reversible", "standard"):
            kept[depth, mode] = _step(exported, mode, x)
            assert kept[depth, mode] == _step(compiled, mode, x), (depth, mode)
    assert kept[1, "reversible"][1] == kept[3, "reversible"][1]  # activations kept: independent of depth
    assert kept[3, "standard"][1] > kept[1, "standard"][1]


@pytest.mark.parametrize("mode", ["standard", "reversible", "checkpoint"])
def test_a_run_of_layers_frees_its_inputs_as_the_compiled_module_does(mode: str) -> None:
    # a skip Merge reads values that die inside the run of layers after it: forward held them
    # (its arguments to the part) until the whole run returned, 5 KiB over the compiled peak
    compiled, exported = _pair(random_skipnet(15))
    x = torch.randn(4, *compiled.plan.inputs[0].shape)
    assert _step(exported, mode, x) == _step(compiled, mode, x)
