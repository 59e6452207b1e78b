"""Class labels per step (sequence tagging): N x T class indices for a C x T Output, padding not scored.

The loss is ``nn.CrossEntropyLoss(ignore_index=-100)`` over the steps: the Output is channels first
(N x C x T, as a Conv or a BiRNN gives it, the layout cross-entropy reads), a label of -100 marks a step
that is not scored, and a .npz / .pt's ``lengths`` (N) or ``mask`` (N x T) turn the steps past each
sequence's end (or where the mask is 0) into -100 before the labels are checked. Padded steps are
still fed to the network. Part of the data code ``revstudio export --with-training`` copies verbatim
(after ``data_checks``): stdlib and torch only, torch imported inside functions.
"""
from __future__ import annotations

from typing import Any

from .data_checks import DataError, _fmt
from .mapped import Mapped

IGNORE = -100  # torch's ignore_index: a step with this label is not scored
PADDING_NAMES = ("lengths", "mask")  # the arrays of a .npz / .pt a per-step classification reads


def _in_memory(t: Any) -> Any:
    """A mapped array read whole (per-step labels and their padding are N x T numbers: small)."""
    import torch

    if isinstance(t, Mapped):
        return torch.cat([part for _, part in t.chunks()]) if len(t) else torch.zeros(t.shape)
    return t


def is_per_step(targets: Any, kind: str, out_shape: tuple[int, ...], auto: bool) -> bool:
    """Whether ``targets`` for an Output of ``out_shape`` are per-step class labels: a C x T Output (C > 1)
    and, under task classification, any N x S labels; under auto, N x S whole numbers (not floats)."""
    if targets is None or len(out_shape) != 2 or out_shape[0] < 2 or targets.dim() != 2:
        return False
    if kind == "classification":
        return True
    dtype = targets.array.dtype.kind if isinstance(targets, Mapped) else (
        "f" if targets.is_floating_point() else "b" if str(targets.dtype) == "torch.bool" else "i")
    return auto and kind == "regression" and dtype in "iu"


def layout_problem(steps: int, out_shape: tuple[int, ...], output_id: str, head: str) -> str | None:
    """Why labels of ``steps`` steps do not fit a C x T Output of ``out_shape``, naming the port and the fix;
    None when they fit (T == steps)."""
    classes, out_steps = out_shape
    if steps == out_steps:
        return None
    port = f"Output {output_id!r} (port '{output_id}.in')"
    if steps == classes:
        return (f"{port} reads {_fmt(out_shape)} per sample and the labels have {steps} steps: the scores are steps "
                f"x classes, and per-step classification reads them channels first, classes x steps (N x C x T, as "
                f"a Conv or a BiRNN gives them, the layout torch's CrossEntropyLoss takes); end the model in a Conv "
                f"with kernel_size 1 and out_channels = the number of classes on the C x {steps} sequence instead of "
                f"node {head!r}'s layout")
    return (f"{port} reads {_fmt(out_shape)} per sample ({classes} classes x {out_steps} steps) and the labels have "
            f"{steps} steps: per-step labels are N x T for a C x T Output; give the Input {steps} steps or save "
            f"labels of {out_steps} steps")


def _padding_mask(padding: dict[str, Any], count: int, steps: int, source: str) -> Any:
    """A bool N x T tensor, True where a step is scored by ``padding`` (``lengths`` and/or ``mask``), or None."""
    import torch

    scored = None
    lengths = padding.get("lengths")
    if lengths is not None:
        t = _in_memory(lengths)
        if t.dim() != 1 or len(t) != count:
            raise DataError(f"{source}: array 'lengths' has shape {_fmt(t.shape)}; it gives each of the {count} "
                            "samples its sequence's length: save an array of N whole numbers")
        if (t.is_floating_point() and not bool((t == t.round()).all())) or t.dtype == torch.bool or t.is_complex():
            raise DataError(f"{source}: array 'lengths' holds {t.dtype} values; save the lengths as whole numbers")
        t = t.to(torch.int64)
        bad = ((t < 0) | (t > steps)).nonzero()
        if len(bad):
            i = int(bad[0])
            raise DataError(f"{source}: array 'lengths' gives sample {i} the length {int(t[i])}, and its labels have "
                            f"{steps} steps; a length counts the real steps of a sequence, 0..{steps}: crop the "
                            f"sequences to {steps} steps or give the Input more")
        scored = torch.arange(steps)[None, :] < t[:, None]
    mask = padding.get("mask")
    if mask is not None:
        m = _in_memory(mask)
        if tuple(m.shape) != (count, steps):
            raise DataError(f"{source}: array 'mask' has shape {_fmt(m.shape)}; it marks each step of each sample "
                            f"scored (1) or padding (0): save an N x T array of {count} x {steps}")
        if not bool(((m == 0) | (m == 1)).all()):
            raise DataError(f"{source}: array 'mask' holds values other than 0 and 1; save 1 for a real step and 0 "
                            "for padding (or a bool array)")
        scored = (m != 0) if scored is None else scored & (m != 0)
    return scored


def per_step_targets(targets: Any, count: int, *, num_classes: int | None, out_shape: tuple[int, ...],
                     output_id: str, head: str, source: str,
                     padding: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
    """``(int64 N x T labels, what was scored)``: steps past ``lengths`` or where ``mask`` is 0 set to -100,
    every other label checked to be a class index 0..C-1 (or -100), and at least one step scored in each
    sample. The facts: ``{"source", "padding": [names used], "scored", "steps", "ignored_labels"}``."""
    import torch

    t = _in_memory(targets)
    if len(t) != count:
        raise DataError(f"{source}: array 'y' has {len(t)} samples, the inputs have {count}")
    problem = layout_problem(int(t.shape[1]), out_shape, output_id, head)
    if problem:
        raise DataError(f"{source}: array 'y' holds {_fmt(t.shape[1:])} labels a sample: {problem}")
    if t.dtype == torch.bool or t.is_complex():
        raise DataError(f"{source}: array 'y' has dtype {t.dtype}; per-step labels are int64 class indices")
    if t.is_floating_point():
        finite = torch.isfinite(t)
        if not bool(finite.all()) or not bool((t[finite] == t[finite].round()).all()):
            raise DataError(f"{source}: array 'y' holds real values; per-step classification needs int64 class "
                            f"indices (or set task to 'regression' with targets of the Output's shape "
                            f"{_fmt(out_shape)})")
    steps = int(t.shape[1])
    labels = t.to(torch.int64).clone()
    given = int((labels == IGNORE).sum())
    padding = padding or {}
    used = [n for n in PADDING_NAMES if padding.get(n) is not None]
    scored = _padding_mask(padding, count, steps, source)
    if scored is not None:
        labels[~scored] = IGNORE
    classes = int(num_classes or out_shape[0])
    bad = ((labels != IGNORE) & ((labels < 0) | (labels >= classes))).nonzero()
    if len(bad):
        i, j = int(bad[0][0]), int(bad[0][1])
        value = int(labels[i, j])
        fix = ("; mark padding with -100 (torch's ignore_index), or save each sequence's length as 'lengths' "
               "(or an N x T 'mask')" if value < 0 else
               f"; give node {head!r} {int(labels.max()) + 1} outputs or relabel the data")
        raise DataError(f"{source}: array 'y' has the label {value} at sample {i}, step {j}; per-step labels are "
                        f"class indices 0..{classes - 1} (Output {output_id!r} reads {classes} scores a step) or "
                        f"-100 for a step not scored{fix}")
    none = ((labels != IGNORE).sum(dim=1) == 0).nonzero()
    if len(none):
        i = int(none[0])
        lengths = _in_memory(padding["lengths"]) if "lengths" in used else None  # (checked by _padding_mask)
        why = "its length is 0" if lengths is not None and int(lengths[i]) == 0 else (
            "its mask is all 0" if scored is not None and not bool(scored[i].any()) else "every label is -100")
        raise DataError(f"{source}: sample {i} has no step scored ({why}; {len(none)} sample"
                        f"{'s' * (len(none) != 1)} so): a batch of only such samples has no loss (cross-entropy "
                        "over no step is NaN); drop them from the data")
    facts = {"source": source, "padding": used, "scored": int((labels != IGNORE).sum()), "steps": count * steps,
             "ignored_labels": given}
    return labels.contiguous(), facts
