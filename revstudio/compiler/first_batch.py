"""A flow whose ActNorm layers never saw a batch, inverted: warned of, once per model.

ActNorm sets its scale and shift from the first batch forward sees; until then it is the identity, so
``model.inverse(z)`` of a freshly compiled flow (or of weights saved before any batch) gives samples of an
untrained flow that look like noise, with nothing said. ``torch.jit.trace``/``torch.export`` refuse such a
model (``runtime.refuse_export_initialize``); sampling is not refused, since an identity ActNorm is a valid
flow, but warned of (:class:`UninitializedActNorm`), naming the layers and what to do.
"""
from __future__ import annotations

import warnings

from torch import nn

from .runtime import uninitialized

SHOWN = 4  # layer paths named in the warning; the rest are counted


class UninitializedActNorm(UserWarning):
    """``model.inverse`` of a flow whose ActNorm layers never saw a batch (they act as the identity)."""


def pending_words(model: nn.Module) -> str | None:
    """The paths of ``model``'s ActNorm layers that never saw a batch (a few, then a count), or None."""
    pending = {id(m) for m in uninitialized(model)}
    if not pending:
        return None
    paths = [path for path, m in model.named_modules() if id(m) in pending]
    more = f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else ""
    return ", ".join(repr(p) for p in paths[:SHOWN]) + more


def warn_unseen(model: nn.Module) -> None:
    """Warn once per ``model`` (its inverse is running) when its ActNorm layers never saw a batch."""
    if model.__dict__.get("_unseen_warned"):
        return
    words = pending_words(model)
    if words is None:
        return
    model.__dict__["_unseen_warned"] = True
    warnings.warn(
        f"inverse: the ActNorm layer(s) {words} never saw a batch, so they act as the identity and these "
        "samples are not those of a trained flow: run one forward batch first (model(x), which sets their scale "
        "and shift from it) or load trained weights (model.load_state_dict(...))", UninitializedActNorm,
        stacklevel=3)
