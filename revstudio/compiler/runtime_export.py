"""A flow's log-determinant under ``torch.export``: ``model.with_logdet()`` and the put-back of the
layers' ``logdet`` after a trace.

The flow layers (and a region of them) keep the log-determinant of their last forward as an
attribute, ``logdet``, which ``model.logdet`` sums. ``torch.export`` records no attribute: it warned
that each layer's was assigned during export, put the layers' back, and left a region's holding
the trace's FakeTensor (``model.logdet`` after an export). Under ``torch.export`` a model's forward
now puts every ``logdet`` back as it was (:func:`logdet_put_back`), and ``model.with_logdet()``
is the model whose forward returns ``(outputs, logdet)``, which an exported program does record.
Imports only torch and the standard library: the code exporter inlines this file verbatim.
"""
import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from .runtime import exporting

_TRACED: set[int] = set()  # the models whose forward a logdet_put_back is tracing (by id)


def _logdet_owners(model: nn.Module) -> list[Any]:
    """Every object of ``model`` that keeps a ``logdet``: its flow layers and their regions."""
    found: dict[int, Any] = {}
    for module in model.modules():
        if "logdet" in vars(module):
            found[id(module)] = module
        for value in vars(module).values():
            for part in value if isinstance(value, (list, tuple)) else (value,):
                if not isinstance(part, nn.Module) and "logdet" in getattr(part, "__dict__", {}):
                    found[id(part)] = part
    return list(found.values())


@contextlib.contextmanager
def logdet_put_back(model: nn.Module) -> Iterator[None]:
    """While torch.export traces ``model``: each flow layer's and region's ``logdet`` put back as it
    was once the block has run, so the trace assigns no tensor attribute and leaves none of its
    tensors in the model. Outside an export, and inside an outer put-back of the same model (the
    forward of ``model.with_logdet()``), it does nothing."""
    if not exporting() or id(model) in _TRACED:
        yield
        return
    kept = [(owner, vars(owner)["logdet"]) for owner in _logdet_owners(model)]
    _TRACED.add(id(model))
    try:
        yield
    finally:
        _TRACED.discard(id(model))
        for owner, value in kept:
            vars(owner)["logdet"] = value


def refuse_untraced_logdet(model: nn.Module) -> None:
    """``model.logdet`` read while torch.export traces ``model`` outside ``model.with_logdet()``:
    a refusal saying what to export instead (it read the logdet of the last forward before the
    export, which the program would have kept as a constant)."""
    if exporting() and id(model) not in _TRACED:
        raise RuntimeError(
            f"{type(model).__name__}.logdet: torch.export does not record the log-determinant the flow layers "
            "keep as an attribute; export model.with_logdet(), whose forward returns (outputs, logdet): "
            "torch.export.export(model.with_logdet(), (x,))")


class WithLogdet(nn.Module):
    """``model.with_logdet()``: ``model`` (the same layers and weights) whose forward returns
    ``(model's outputs, model.logdet)`` in one call, so that ``torch.export.export`` records the
    log-determinant too: ``z, logdet = torch.export.export(model.with_logdet(), (x,)).module()(x)``."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, *inputs: torch.Tensor, **named: torch.Tensor) -> tuple[Any, torch.Tensor | None]:
        with logdet_put_back(self.model):
            outputs = self.model(*inputs, **named)
            logdet: torch.Tensor | None = getattr(self.model, "logdet", None)
            return outputs, logdet
