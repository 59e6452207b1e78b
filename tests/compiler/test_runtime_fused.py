"""The fused pair update (``compiler.runtime_fused``: one Triton kernel on a GPU) computes the
torch passes' bits exactly. No GPU here: Triton's interpreter runs the same kernel on the CPU
(``TRITON_INTERPRET=1``, set before Triton is imported, hence a subprocess)."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
needs_triton = pytest.mark.skipif(importlib.util.find_spec("triton") is None,
                                  reason="Triton is not installed (it comes with the dev extra on Linux x86-64)")


def _interpreted(code: str) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": path}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=600)


@needs_triton
def test_the_kernel_is_the_torch_passes_bit_for_bit() -> None:
    """Both signs, a first update (no correction yet) and a later one, sizes around the kernel's
    block, magnitudes from 1e-30 to 1e30 with zeros, signed zeros and ties between them."""
    proc = _interpreted("""
        import torch
        from revstudio.compiler import runtime_fused as fused
        from revstudio.compiler.runtime_streams import _two_sum_, _two_sum_exact

        def bits(t):
            return t.contiguous().view(torch.int32)

        g = torch.Generator().manual_seed(0)
        checked = 0
        for n in (1, 7, 1023, 1024, 1025, 5000):
            for scale in (1.0, 1e-30, 1e30):
                hi = torch.randn(n, generator=g) * scale
                lo = torch.randn(n, generator=g) * scale * 1e-8
                f = torch.randn(n, generator=g) * torch.logspace(-8, 8, n)
                f[::5] = 0.0
                f[1::7] = -hi[1::7]           # exact cancellation
                hi[2::11] = -0.0
                f[3::13] = hi[3::13] * 2 ** -24  # a tie with the last bit
                for sign in (1, -1):
                    a_hi, a_lo = hi.clone(), lo.clone()
                    _two_sum_(a_hi, a_lo, f, sign)
                    b_hi, b_lo = hi.clone(), lo.clone()
                    assert fused.fused_usable(b_hi, b_lo, f)
                    assert fused.fused_two_sum_(b_hi, b_lo, f, sign)
                    assert torch.equal(bits(a_hi), bits(b_hi)) and torch.equal(bits(a_lo), bits(b_lo)), (n, scale, sign)
                    e_hi, e_lo = _two_sum_exact(hi, f, sign)
                    c_hi, c_lo = hi.clone(), torch.empty_like(hi)
                    assert fused.fused_two_sum_(c_hi, c_lo, f, sign, exact=True)
                    assert torch.equal(bits(e_hi), bits(c_hi)) and torch.equal(bits(e_lo), bits(c_lo)), (n, scale, sign)
                    assert torch.equal(f, f)  # (f is only read)
                    checked += 1
        print("checked", checked, fused.fused_status())
    """)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "checked 36 on (Triton)" in proc.stdout


@needs_triton
def test_a_reversible_model_through_the_kernel_matches_the_torch_passes() -> None:
    """The runtime takes the kernel for its in-place pair updates (forward, backward, a first
    update and one written over F's output) and gives the same loss, input and parameter
    gradients, bit for bit, as the same model on the torch passes."""
    proc = _interpreted("""
        import torch
        from revstudio.compiler import runtime_fused as fused
        from revstudio.core.project import load
        from revstudio.compiler import compile as rs_compile

        from revstudio.compiler import runtime_streams

        calls = []
        kernel = runtime_streams.fused_two_sum_
        runtime_streams.fused_two_sum_ = lambda *a, **k: calls.append(k.get("exact", False)) or kernel(*a, **k)
        graph = load("resources/examples/revnet_wired.revs")
        results = []
        for use in (True, False):
            torch.manual_seed(0)
            model = rs_compile(graph)
            model.memory_format = torch.contiguous_format  # the kernel takes contiguous streams
            if not use:
                fused._broken = "off for the comparison"
            x = torch.randn(3, *model.plan.inputs[0].shape, generator=torch.Generator().manual_seed(1),
                            requires_grad=True)
            out = model(x)
            out.square().sum().backward()
            results.append((out.detach(), x.grad, [p.grad.clone() for p in model.parameters()]))
        (a, ga, pa), (b, gb, pb) = results
        assert torch.equal(a, b) and torch.equal(ga, gb)
        assert all(torch.equal(u, v) for u, v in zip(pa, pb))
        print("fused calls", len(calls), "first updates", sum(calls))
    """)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    line = next(text for text in proc.stdout.splitlines() if text.startswith("fused calls"))
    calls, firsts = int(line.split()[2]), int(line.split()[5])
    assert calls >= 8 and firsts >= 1, line


def test_no_kernel_on_the_cpu_or_for_what_it_does_not_take() -> None:
    from revstudio.compiler import runtime_fused as fused

    x = torch.zeros(4, 3)
    if os.environ.get("TRITON_INTERPRET") != "1":
        assert not fused.fused_wanted(x) and not fused.fused_usable(x, x, x)
    # whatever the device: other dtypes, shapes and layouts take the torch passes
    for hi, lo, f in ((x.double(), x.double(), x.double()), (x, x, torch.zeros(4, 4)), (x.t(), x.t(), x.t())):
        assert not fused.fused_usable(hi, lo, f)


def test_a_kernel_that_cannot_be_built_falls_back_to_the_torch_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Triton reads a kernel's source from its file, so in an exported model run through exec()
    the kernel cannot be built ("@jit functions should be defined in a Python file": the H200
    run found it). The update then says why, takes the torch passes, and never tries again."""
    from revstudio.compiler import runtime_fused as fused

    def no_source() -> None:
        raise ValueError("@jit functions should be defined in a Python file")

    monkeypatch.setattr(fused, "_kernels", None)
    monkeypatch.setattr(fused, "_broken", None)
    monkeypatch.setattr(fused, "_define", no_source)
    monkeypatch.setattr(fused, "_INTERPRET", True)  # so that CPU tensors ask for the kernel
    hi, lo, f = torch.randn(100), torch.randn(100) * 1e-8, torch.randn(100)
    assert fused.fused_wanted(hi)
    assert not fused.fused_usable(hi, lo, f)  # no exception: the build failed and said why
    assert fused.fused_status().startswith("off: Triton cannot build the kernel here (ValueError: @jit")
    assert not fused.fused_wanted(hi) and not fused.fused_two_sum_(hi, lo, f, 1)
