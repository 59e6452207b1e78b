"""Class labels per position: a class per step (sequence tagging, N x T labels for a C x T Output), per
pixel (segmentation, N x H x W labels for a C x H x W Output), per voxel (N x D x H x W for C x D x H x W)
or per position of any more axes, unscored ones left out.

The loss is ``nn.CrossEntropyLoss(ignore_index=-100)`` over the positions: the Output is channels first
(N x C x T as a Conv or a BiRNN gives it, N x C x H x W as a 2-d Conv does: the layout cross-entropy reads),
a label of -100 marks a position that is not scored, and a .npz / .pt's ``lengths`` (N, sequences only) or
``mask`` (N x T, N x H x W, N x D x H x W) turn the steps past each sequence's end (or where the mask is 0) into -100
before the labels are checked. Unscored positions are still fed to the network. The words ("steps",
"pixels", "voxels", "positions") follow the labels' rank (:func:`position_unit`). Part of the data code ``revstudio export --with-training``
copies verbatim (after ``data_checks``): stdlib and torch only, torch imported inside functions.
"""
from __future__ import annotations

from typing import Any

from .data_checks import DataError, _fmt, axes_form, label_dtype, position_unit
from .label_fit import label_fit
from .mapped import Mapped

IGNORE = -100  # torch's ignore_index: a position with this label is not scored
PADDING_NAMES = ("lengths", "mask")  # the arrays of a .npz / .pt a per-position classification reads


def _in_memory(t: Any) -> Any:
    """A mapped array read whole (per-position labels and their padding are small integers)."""
    import torch

    if isinstance(t, Mapped):
        return torch.cat([part for _, part in t.chunks()]) if len(t) else torch.zeros(t.shape)
    return t


def _padding_mask(padding: dict[str, Any], count: int, positions: tuple[int, ...], source: str) -> Any:
    """A bool N x T (N x H x W, N x D x H x W ...) tensor, True where a position is scored by ``padding`` (``lengths``
    and/or ``mask``), or None."""
    import torch

    scored = None
    word = position_unit(len(positions))
    lengths = padding.get("lengths")
    if lengths is not None:
        if len(positions) != 1:
            raise DataError(f"{source}: array 'lengths' gives each sequence's length, and the labels are "
                            f"{_fmt(positions)} per sample (a class per {word}): mark the {word}s not scored with "
                            f"-100 or an N x {_fmt(positions)} 'mask' of 0 and 1, and drop 'lengths'")
        steps = positions[0]
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
        if tuple(m.shape) != (count, *positions):
            form = "N x " + axes_form(positions)
            off = "padding" if len(positions) == 1 else "not scored"
            raise DataError(f"{source}: array 'mask' has shape {_fmt(m.shape)}; it marks each {word} of each sample "
                            f"scored (1) or {off} (0): save an {form} array of "
                            f"{' x '.join(map(str, (count, *positions)))}")
        if not bool(((m == 0) | (m == 1)).all()):
            raise DataError(f"{source}: array 'mask' holds values other than 0 and 1; save 1 for a real {word} and 0 "
                            f"for {'padding' if len(positions) == 1 else 'one not scored'} (or a bool array)")
        scored = (m != 0) if scored is None else scored & (m != 0)
    return scored


def per_step_targets(targets: Any, count: int, *, num_classes: int | None, out_shape: tuple[int, ...],
                     output_id: str, head: str, source: str,
                     padding: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
    """``(int64 N x T (N x H x W, N x D x H x W ...) labels, what was scored)``: positions past ``lengths`` or where ``mask``
    is 0 set to -100, every other label checked to be a class index 0..C-1 (or -100), and at least one
    position scored in each sample. The facts: ``{"source", "padding": [names used], "scored", "steps"
    (positions in all), "ignored_labels", "unit": "step" | "pixel" | "voxel" | "position"}``."""
    import torch

    t = _in_memory(targets)
    if len(t) != count:
        raise DataError(f"{source}: array 'y' has {len(t)} samples, the inputs have {count}")
    fit = label_fit("classification", out_shape, tuple(t.shape[1:]), label_dtype(t), auto=False, output_id=output_id,
                    head=head)  # (the layout and the number type: the rule check and the preview apply too)
    if fit.problem is not None:
        raise DataError(f"{source}: {fit.problem}")
    word = position_unit(t.dim() - 1)
    if fit.whole is not None:
        finite = torch.isfinite(t)
        if not bool(finite.all()) or not bool((t[finite] == t[finite].round()).all()):
            raise DataError(f"{source}: {fit.whole}")
    positions = tuple(int(s) for s in t.shape[1:])
    labels = t.to(torch.int64).clone()
    given = int((labels == IGNORE).sum())
    padding = padding or {}
    used = [n for n in PADDING_NAMES if padding.get(n) is not None]
    scored = _padding_mask(padding, count, positions, source)
    if scored is not None:
        labels[~scored] = IGNORE
    classes = int(num_classes or out_shape[0])
    bad = ((labels != IGNORE) & ((labels < 0) | (labels >= classes))).nonzero()
    if len(bad):
        i, at = int(bad[0][0]), tuple(int(j) for j in bad[0][1:])
        value = int(labels[(i, *at)])
        where = f"step {at[0]}" if len(at) == 1 else f"{word} {at}"
        mark = ("save each sequence's length as 'lengths' (or an N x T 'mask')" if len(at) == 1 else
                f"save an N x {_fmt(positions)} 'mask' of 0 and 1")
        marked = "padding" if len(at) == 1 else f"{word}s not scored"
        fix = (f"; mark {marked} with -100 (torch's ignore_index), or {mark}" if value < 0 else
               f"; give node {head!r} {int(labels.max()) + 1} outputs or relabel the data")
        raise DataError(f"{source}: array 'y' has the label {value} at sample {i}, {where}; per-{word} labels are "
                        f"class indices 0..{classes - 1} (Output {output_id!r} reads {classes} scores a {word}) or "
                        f"-100 for a {word} not scored{fix}")
    none = ((labels != IGNORE).flatten(1).sum(dim=1) == 0).nonzero()
    if len(none):
        i = int(none[0])
        lengths = _in_memory(padding["lengths"]) if "lengths" in used else None  # (checked by _padding_mask)
        why = "its length is 0" if lengths is not None and int(lengths[i]) == 0 else (
            "its mask is all 0" if scored is not None and not bool(scored[i].any()) else "every label is -100")
        raise DataError(f"{source}: sample {i} has no {word} scored ({why}; {len(none)} sample"
                        f"{'s' * (len(none) != 1)} so): a batch of only such samples has no loss (cross-entropy "
                        f"over no {word} is NaN); drop them from the data")
    facts = {"source": source, "padding": used, "scored": int((labels != IGNORE).sum()),
             "steps": count * int(labels[0].numel()) if count else 0, "ignored_labels": given, "unit": word}
    return labels.contiguous(), facts
