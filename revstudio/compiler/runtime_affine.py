"""The affine coupling step of the reversible runtime (RealNVP/Glow), with a fused backward.

``y2 = x2 * exp(s) + t`` where ``(s, t)`` come from the coupling's net applied to
``x1``, which passes through unchanged (the region slices x into x1 and x2 and
concatenates x1 and y2 around this step). Backward evaluates the net once,
with grad, and that one evaluation rebuilds ``x2 = (y2 - t) * exp(-s)`` and
gives the gradients of x1, of the net's parameters and of the log-determinant
``sum(s)``. Imports only torch and the standard library: the code exporter
inlines this file verbatim.
"""
from typing import Any

import torch
from torch import nn

from .runtime_grad import vjp
from .runtime_steps import LOGDET, Owned, Step, _accumulate, _add_logdet, _is_stochastic
from .runtime_streams import Pair, Value, as_dtype, exact, value

Tensor = torch.Tensor


def _wide(v: Value) -> Tensor:
    """A stream value to scale: a compensated pair as float64 (``hi + lo``), a tensor as it is."""
    return exact(v) if isinstance(v, Pair) else v


def _narrow(ref: Value, y: Tensor) -> Value:
    """``y`` (from :func:`_wide`) back as a stream value of ``ref``'s kind."""
    if isinstance(ref, Pair):
        hi = y.to(torch.float32)
        return Pair(hi, (y - hi.double()).to(torch.float32))
    return y


class Affine(Step):
    """``out = a * exp(s(b)) + t(b)``; ``module`` is the AffineCoupling whose net gives (s, t)."""

    flow = True

    def __init__(self, a: int, b: int, out: int, module: nn.Module) -> None:
        self.a, self.b, self.out, self.module = a, b, out, module
        self.consumes, self.reads, self.produces = (a,), (b,), (out,)
        self.modules = [module]
        self.stochastic = _is_stochastic(self.modules)

    def scale_shift(self, x1: Value, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        """(log-scale, shift) from the net, in the compute dtype."""
        scale_shift: Any = self.module._scale_shift
        return scale_shift(as_dtype(value(x1), dtype))

    def _record(self, env: dict[int, Any], s: Tensor) -> None:
        logdet = s.flatten(1).sum(1)
        # what the module itself reports after a forward; not after a checkpoint's recompute,
        # which runs inside backward: its logdet would keep that rerun's graph alive (and the
        # clamp's tanh it saved) until the next forward
        if torch._C._current_autograd_node() is None:
            self.module.logdet = logdet
        _add_logdet(env, logdet)

    def run(self, env: dict[int, Value], dtype: torch.dtype, own: Owned | None = None,
            dying: frozenset[int] = frozenset()) -> None:
        s, t = self.scale_shift(env[self.b], dtype)
        x2 = env[self.a]
        if isinstance(x2, Pair):  # y2 = x2 * exp(s) + t, rounded back to a compensated pair
            wide = _wide(x2)
            env[self.out] = _narrow(x2, wide * torch.exp(s).to(wide.dtype) + t.to(wide.dtype))
            if own is not None:
                own.values.discard(self.a)
                own.values.add(self.out)
            self._record(env, s)
            return
        if own is not None and self.a in own.values and self.a in dying:
            y2 = x2.mul_(torch.exp(s).to(x2.dtype)).add_(t.to(x2.dtype))  # a stream the runtime owns
            own.values.discard(self.a)
        else:
            y2 = x2 * torch.exp(s).to(x2.dtype) + t.to(x2.dtype)
        env[self.out] = y2
        if own is not None:
            own.values.add(self.out)
        self._record(env, s)

    def inverse(self, env: dict[int, Value], dtype: torch.dtype) -> None:
        y2 = env.pop(self.out)
        s, t = self.scale_shift(env[self.b], dtype)
        wide = _wide(y2)
        # divided by the very exp(s) forward multiplied by (exp(-s) would be another rounding)
        env[self.a] = _narrow(y2, (wide - t.to(wide.dtype)) / torch.exp(s).to(wide.dtype))

    def backward(self, env: dict[int, Value], grads: dict[int, Tensor], pgrads: dict[int, Tensor],
                 dtype: torch.dtype, own: Owned | None = None) -> None:
        own = own or Owned()
        gy = grads.pop(self.out, None)
        gld = grads.get(LOGDET)
        need = gy is not None or gld is not None
        with torch.set_grad_enabled(need):
            x1 = as_dtype(value(env[self.b]).detach(), dtype).requires_grad_(need and self.b not in own.unneeded)
            s, t = self.scale_shift(x1, dtype)
        y2 = env.pop(self.out)
        own.values.discard(self.out)
        with torch.no_grad():  # the rebuilt input, from the same (s, t) the gradients use
            sd, td = s.detach(), t.detach()
            wide = _wide(y2)
            centred = wide - td.to(wide.dtype)  # = x2 * exp(s): also d loss / d s per unit gradient
            env[self.a] = _narrow(y2, centred / torch.exp(sd).to(wide.dtype))
            own.values.add(self.a)
        del y2, wide
        if not need:
            return
        outputs: list[Tensor] = []
        seeds: list[Tensor] = []
        gs: Tensor | None = None
        if gy is not None:
            gy_c = gy.to(s.dtype)
            _accumulate(grads, own.grads, self.a, gy_c * torch.exp(sd))  # d y2 / d x2 = exp(s)
            gs = gy_c * centred.to(s.dtype)
            if t.requires_grad:
                outputs.append(t)
                seeds.append(gy_c)
        del centred
        if gld is not None:  # log|det| = sum(s) per sample
            per_sample = gld.to(s.dtype).reshape(-1, *([1] * (s.dim() - 1)))
            gs = per_sample.expand_as(s) if gs is None else gs + per_sample
        if gs is not None and s.requires_grad:
            outputs.append(s)
            seeds.append(gs)
        if not outputs:
            return
        params = self.params()
        wrt: list[Tensor] = [x1] if x1.requires_grad else []
        res = vjp(outputs, [*wrt, *params], seeds)
        if wrt:
            _accumulate(grads, own.grads, self.b, res[0])
        for p, g in zip(params, res[len(wrt):]):
            _accumulate(pgrads, own.params, id(p), g)

