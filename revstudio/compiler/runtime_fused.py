"""A compensated pair's in-place update as one GPU kernel (Triton), where torch takes ten.

``runtime_streams._two_sum_`` updates a float32 pair ``(hi, lo)`` by ``sign * f`` in ten
elementwise passes with three temporaries: TwoSum's six operations, then Fast2Sum's
renormalisation. On a GPU each pass is a kernel launch over a tensor too small to fill the
device, and the H200 measured the pairs at 1.35x the float32-stream runtime at the size
sweep's median (benchmarks/README.md, "The GPU check"). Here the same operations, in the
same order, run in registers in one kernel: each element is read once and written once,
with no temporaries. The arithmetic is IEEE float32 addition and subtraction only (nothing
to contract into a fused multiply-add), so the result is the torch passes' bit for bit; the
tests hold the two equal through Triton's interpreter on the CPU, and
``benchmarks/device_check.py`` on a GPU.

The runtime asks :func:`fused_usable` first: a CUDA float32 pair and update, contiguous, and
Triton importable. Anything else takes the torch passes. A kernel that fails to build or
launch is reported once and never tried again in this process.
"""

import contextlib
import os
import warnings
from typing import Any

import torch

_BLOCK = 1024
_kernels: dict[str, Any] | None = None
_broken: str | None = None  # why the fused path is off in this process


def _build() -> dict[str, Any] | None:
    global _kernels, _broken
    if _kernels is not None or _broken is not None:
        return _kernels
    try:
        _kernels = _define()
    except Exception as exc:  # noqa: BLE001 - not installed, a build that cannot load here, or code run from a string
        # (Triton reads a kernel's source from its file: an exported model run through exec() has none)
        _broken = f"Triton cannot build the kernel here ({type(exc).__name__}: {exc})"
    return _kernels


def _define() -> dict[str, Any]:
    import triton
    import triton.language as tl

    @triton.jit
    def two_sum(hi_ptr, lo_ptr, f_ptr, n, SIGN: tl.constexpr, EXACT: tl.constexpr,  # type: ignore[no-untyped-def]
                BLOCK: tl.constexpr):
        offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        hi = tl.load(hi_ptr + offs, mask=mask)
        f = tl.load(f_ptr + offs, mask=mask)
        # TwoSum: total is hi + sign * f rounded, err its rounding error, exactly
        if SIGN > 0:
            total = hi + f
        else:
            total = hi - f
        back = total - hi
        err = hi - (total - back)
        if SIGN > 0:
            err = err + (f - back)
        else:
            err = err - (f + back)
        if EXACT:  # no correction yet: (total, err) is already normalised
            tl.store(hi_ptr + offs, total, mask=mask)
            tl.store(lo_ptr + offs, err, mask=mask)
        else:  # fold err into lo, then Fast2Sum: hi is the rounding of total + lo
            lo = tl.load(lo_ptr + offs, mask=mask) + err
            new_hi = total + lo
            tl.store(hi_ptr + offs, new_hi, mask=mask)
            tl.store(lo_ptr + offs, lo - (new_hi - total), mask=mask)

    return {"two_sum": two_sum, "cdiv": triton.cdiv}


# Triton's interpreter runs kernels on the CPU (read once: Triton reads it at import, too)
_INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"


def fused_wanted(t: torch.Tensor) -> bool:
    """Whether a pair on ``t``'s device should try the kernel: on CUDA (and on the CPU under
    Triton's interpreter, ``TRITON_INTERPRET=1``, which the tests use), unless it failed."""
    return _broken is None and (t.is_cuda or (_INTERPRET and t.device.type == "cpu"))


def fused_usable(hi: torch.Tensor, lo: torch.Tensor | None, f: torch.Tensor) -> bool:
    """Whether :func:`fused_two_sum_` can update this pair (``lo`` None: a first update, no
    correction yet): float32 CUDA tensors of one shape, each contiguous (on the CPU only
    under Triton's interpreter, which the tests use)."""
    if not fused_wanted(hi):
        return False
    parts = (hi, f) if lo is None else (hi, lo, f)
    if any(t.dtype != torch.float32 or t.shape != hi.shape or not t.is_contiguous() for t in parts):
        return False
    return _build() is not None


def fused_two_sum_(hi: torch.Tensor, lo: torch.Tensor, f: torch.Tensor, sign: int, exact: bool = False) -> bool:
    """``(hi, lo) += sign * f`` in place, as ``runtime_streams._two_sum_`` computes it
    (``exact``: as ``_two_sum_exact``, ``lo``'s old values unread and overwritten, ``hi``
    overwritten with the sum). ``f`` is only read. False (nothing written) where the kernel
    could not run: the caller then takes the torch passes."""
    global _broken
    kernels = _build()
    if kernels is None:
        return False
    n = hi.numel()
    if n == 0:
        return True
    # Triton launches on the current device and its current stream: make that the tensors' own
    # (a model on cuda:1 while cuda:0 is current, as in a single process driving several GPUs)
    on_device = torch.cuda.device(hi.device) if hi.is_cuda else contextlib.nullcontext()
    try:
        with on_device:
            kernels["two_sum"][(kernels["cdiv"](n, _BLOCK),)](hi, lo, f, n, SIGN=1 if sign > 0 else -1,
                                                              EXACT=bool(exact), BLOCK=_BLOCK)
    except Exception as exc:  # noqa: BLE001 - a build or launch failure (Triton's errors have no common base): say so once, then keep to torch
        _broken = f"the fused pair update failed ({type(exc).__name__}: {exc})"
        warnings.warn(f"revstudio: {_broken}; compensated streams use torch's elementwise passes",
                      RuntimeWarning, stacklevel=2)
        return False
    return True


def fused_status() -> str:
    """One line for diagnostics: whether the fused update is on, and why not."""
    if _broken is not None:
        return f"off: {_broken}"
    return "on (Triton)" if _kernels is not None else "not built yet (built at the first CUDA pair update)"
