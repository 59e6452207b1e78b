"""Checking a run's arrays against the graph: inputs of each Input node's shape, targets of the task.

Part of the data code that ``revstudio export --with-training`` copies verbatim into the exported
script (with ``synthetic`` and ``sources``, which re-exports these names): stdlib and torch only,
torch imported inside functions. Every refusal is a :class:`DataError` naming the file, array or
node, what was expected and found, and what to change.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .data_notes import (  # noqa: F401 - re-exported: sources and the exported script read them here
    PixelScan,
    axes_form,
    inputs_note,
    looks_like_pixels,
    padding_like,
    position_unit,
    scale_bytes,
    unread_arrays,
)
from .label_fit import (  # noqa: F401 - re-exported: steps, arrays and sources read them here
    LabelFit,
    _fmt,
    label_fit,
)
from .mapped import Mapped, native


class DataError(Exception):
    """Data that does not fit: the message names the file / array / node, what was expected and found."""


# ---- checking data against the graph ----------------------------------------------------------

def layout_hint(array: tuple[int, ...], want: tuple[int, ...], name: str = "x") -> str:
    """``"; ..."`` naming the transpose that turns ``array`` (N first or not) into ``N x want`` when
    it holds the same sizes in another axis order (``N x steps x features`` or time-major
    ``steps x N x features`` for a ``features x steps`` sequence Input), else ``""``."""
    import itertools

    if len(array) != len(want) + 1:
        return ""
    for order in itertools.permutations(range(len(array))):
        if order != tuple(range(len(array))) and tuple(array[i] for i in order[1:]) == tuple(want):
            first = "" if order[0] == 0 else f"axis {order[0]} holds the samples; "
            # samples first: the graph can reorder each sample itself (a Permute of kind axes)
            dims = [i - 1 for i in order[1:]]
            in_graph = (f"; or keep the data: set the Input node to {_fmt(array[1:])} and put a Permute "
                        f"(kind axes, dims {dims}) after it") if order[0] == 0 and len(want) <= 3 else ""
            return (f"; {first}the sizes are there in another axis order: numpy.transpose({name}, {order}) "
                    f"gives N x {_fmt(want)} (Inputs are channels first: features x steps for a sequence, "
                    f"time last){in_graph}")
    return ""


def shape_advice(array: tuple[int, ...], want: tuple[int, ...], name: str, node: str) -> str:
    """``"; ..."``: what to change when array ``name`` (N first) does not fit Input node ``node``: the
    transpose or reshape that gives ``N x want`` where the sizes are all there, else the node's shape
    (if the data are right) or the array's."""
    hint = layout_hint(array, want, name)
    if hint:
        return hint
    got = tuple(int(s) for s in array[1:])
    if not got:
        return f"; save {name!r} as an N x {_fmt(want)} array"
    if math.prod(got) == math.prod(want):
        dims = ", ".join(str(int(s)) for s in want)
        return (f"; each sample holds the {math.prod(got)} values {_fmt(want)} needs: {name}.reshape(len({name}), "
                f"{dims}) gives N x {_fmt(want)} if they are stored in that order, or set Input node {node!r} "
                f"to shape {_fmt(got)}")
    return (f"; if the data are right, set Input node {node!r} to shape {_fmt(got)}; else save {name!r} as an "
            f"N x {_fmt(want)} array")


def check_inputs(inputs: dict[str, Any], specs: dict[str, tuple[tuple[int, ...], str]],
                 source: str, later: list[tuple[str, str, Any]] | None = None) -> dict[str, Any]:
    """Inputs as float tensors of each Input node's shape (a missing channel axis of 1 is added);
    wrong shapes, non-numbers and NaN/Inf are refused naming the array and the node. With ``later``,
    a mapped array's NaN/Inf check is left to :func:`one_pass` (``(source, name, the converted array)``
    appended), which reads it once with the data digest."""
    import torch

    out: dict[str, Any] = {}
    count = None
    for node, (shape, dtype) in specs.items():
        t = inputs[node]
        name = "x" if len(specs) == 1 else node
        if not isinstance(t, (torch.Tensor, Mapped)) or t.is_complex():
            raise DataError(f"{source}: array {name!r} is not a tensor of real numbers")
        want = tuple(int(s) for s in shape)
        if t.dim() == len(want) and want and want[0] == 1 and tuple(t.shape[1:]) == want[1:]:
            t = t.unsqueeze(1)  # (N, H, W) for a 1-channel Input: add the channel axis
        if t.dim() < 1 or tuple(t.shape[1:]) != want:
            got = _fmt(t.shape[1:]) if t.dim() >= 1 else "a scalar"
            raise DataError(f"{source}: array {name!r} has samples of shape {got} (array {_fmt(t.shape)}), "
                            f"Input node {node!r} expects {_fmt(want)} (an N x {_fmt(want)} array)"
                            + shape_advice(tuple(t.shape), want, name, node))
        if len(t) == 0:
            raise DataError(f"{source}: array {name!r} has no samples")
        if count is not None and len(t) != count:
            raise DataError(f"{source}: array {name!r} has {len(t)} samples, the other inputs have {count}")
        count = len(t)
        if isinstance(t, Mapped):  # read as used: checked a chunk at a time, converted batch by batch
            t = t.converted(torch.float64 if dtype == "float64" else torch.float32)
            first, bad = _nonfinite(t) if later is None else (-1, 0)
            if later is not None:
                later.append((source, name, t))
        else:
            t = t.to(torch.float64 if dtype == "float64" else torch.float32)
            finite = torch.isfinite(t.reshape(len(t), -1)).all(dim=1)
            first, bad = (-1, 0) if bool(finite.all()) else (int((~finite).nonzero()[0]), int((~finite).sum()))
        if bad:
            raise DataError(f"{source}: array {name!r} has NaN or Inf values ({bad} sample{'s' * (bad != 1)}, "
                            f"the first is sample {first}); clean or drop them")
        out[node] = t if isinstance(t, Mapped) else t.contiguous()
    return out


def _nonfinite(t: Mapped) -> tuple[int, int]:
    """``(first sample, count)`` of the samples of a mapped array with NaN or Inf values after its
    conversion, a chunk at a time; integer arrays hold none and are not read."""
    import torch

    if _finite_kind(t):
        return -1, 0  # (no integer becomes NaN or Inf in float32)
    first, bad = -1, 0
    for start, part in t.chunks():
        finite = torch.isfinite(part.reshape(len(part), -1)).all(dim=1)
        if not bool(finite.all()):
            first = int((~finite).nonzero()[0]) + start if first < 0 else first
            bad += int((~finite).sum())
    return first, bad


def _finite_kind(t: Mapped) -> bool:
    """Whether a mapped array's values cannot be NaN or Inf once converted (integers to float32/64)."""
    import torch

    return t.array.dtype.kind in "biu" and t.to in (torch.float32, torch.float64, None)


def _label_range(low: int, high: int, num_classes: int | None, *, source: str, head: str | None,
                 output_id: str) -> None:
    """Class indices ``low..high`` must be 0..classes-1 of the head (read whole or mapped alike)."""
    if low < 0:
        raise DataError(f"{source}: array 'y' has the label {low}; class indices start at 0")
    classes = int(num_classes or 0)
    if high >= classes:
        raise DataError(f"{source}: {high + 1} classes in the labels, {classes} outputs in head {head!r} "
                        f"(labels 0..{high}, Output {output_id!r} reads {classes} scores); give the head "
                        f"{high + 1} outputs or relabel the data")


def label_dtype(t: Any) -> str:
    """The number type of labels as :func:`label_fit` reads it: numpy's name for a mapped array, torch's else."""
    return str(t.array.dtype) if isinstance(t, Mapped) else str(t.dtype)


def check_targets(targets: Any, count: int, *, kind: str, num_classes: int | None, output_id: str,
                  head_id: str | None, out_shape: tuple[int, ...], source: str,
                  auto: bool, later: list[tuple[Any, Any]] | None = None) -> tuple[Any, str]:
    """``(targets, kind)``: int64 class indices in range for a classification head, floats of the
    Output's shape for regression, None for a flow. What the labels make of the graph's ``kind``, or why
    they are refused, is :func:`label_fit`'s (the rule ``revstudio check`` and the Run Settings preview
    read from a file's header): here the values make the checks it leaves to them. With ``later``,
    mapped targets' checks that need their values (integer labels' range, regression targets' NaN/Inf)
    are left to :func:`one_pass` (``(the targets, the check)`` appended), which reads them once with the
    data digest."""
    import torch

    if kind == "flow":
        return None, kind
    if targets is None:
        raise DataError(f"{source}: missing array 'y' (the targets: int64 class indices or float values); a "
                        f"{kind} task needs one")
    t = targets
    if t.dim() == 0 or len(t) != count:
        n = len(t) if t.dim() else "no"
        raise DataError(f"{source}: array 'y' has {n} samples, the inputs have {count}")
    head = head_id or output_id
    fit = label_fit(kind, out_shape, tuple(t.shape[1:]), label_dtype(t), auto=auto, output_id=output_id, head=head)
    if fit.one_hot and _one_hot(t, out_shape):
        # one-hot rows for a K-vector output are class labels (float ones would else turn auto into MSE)
        if isinstance(t, Mapped):  # (N indices, in memory)
            t = torch.cat([part.to(torch.float32).argmax(dim=1) for _, part in t.chunks()])
        else:
            t = t.to(torch.float32).argmax(dim=1)
        fit, kind, num_classes = LabelFit("classification"), "classification", int(out_shape[0])
    if isinstance(t, Mapped):  # (labels mapped from a large .npz: the same checks, a chunk at a time)
        return _mapped_targets(t, count, fit=fit, given=kind, num_classes=num_classes, output_id=output_id,
                               head=head, out_shape=out_shape, source=source, later=later)
    if kind == "classification" and t.is_floating_point() and not bool(torch.isfinite(t).all()):
        bad = ~torch.isfinite(t.reshape(count, -1)).all(dim=1)
        raise DataError(f"{source}: array 'y' has NaN or Inf values ({int(bad.sum())} sample"
                        f"{'s' * (int(bad.sum()) != 1)}, the first is sample {int(bad.nonzero()[0])}); clean or "
                        "drop them")
    if fit.problem is not None:
        raise DataError(f"{source}: {fit.problem}")
    if fit.kind != kind:
        kind, num_classes = fit.kind, int(out_shape[0]) if fit.kind == "classification" else None
    if kind == "classification":
        if fit.whole is not None:
            if not bool((t == t.round()).all()):
                raise DataError(f"{source}: {fit.whole}")
            t = t.to(torch.int64)
        if t.dim() == 2 and t.shape[1] == 1:
            t = t[:, 0]
        unsigned = t.dtype == getattr(torch, "uint64", None)
        t = t.to(torch.int64)
        low, high = int(t.min()), int(t.max())
        if unsigned and low < 0:  # uint64 labels of 2**63 and more wrap round to negative int64s
            low, high = 0, int(t[t < 0].max()) + 2**64
        _label_range(low, high, num_classes, source=source, head=head, output_id=output_id)
        return t.contiguous(), kind
    # regression
    want = tuple(int(s) for s in out_shape)
    if tuple(t.shape[1:]) != want:
        t = t.reshape(count, *want)
    t = t.to(torch.float32)
    finite = torch.isfinite(t.reshape(count, -1)).all(dim=1)
    if not bool(finite.all()):
        raise DataError(f"{source}: array 'y' has NaN or Inf values (the first at sample "
                        f"{int((~finite).nonzero()[0])}); clean or drop those samples")
    return t.contiguous(), kind


def _one_hot(t: Any, out_shape: tuple[int, ...]) -> bool:
    """True for N x K targets of 0s and 1s with a single 1 a row, K the size of a 1-D Output (K > 1)."""
    if t.dim() != 2 or len(out_shape) != 1 or t.shape[1] != out_shape[0] or out_shape[0] < 2 or t.is_complex():
        return False
    import torch

    if isinstance(t, Mapped):
        return all(_one_hot(part, out_shape) for _, part in t.chunks())
    values = t.to(torch.int64) if t.dtype == torch.bool else t
    return bool(((values == 0) | (values == 1)).all()) and bool((values.sum(dim=1) == 1).all())


def _label_scan(t: Mapped) -> tuple[int, int, bool, Any, Any]:
    """``(first sample with NaN or Inf, how many, whether every value is a whole number, the smallest
    value, the largest)`` of mapped targets, a chunk at a time in their own number type (uint64 labels
    exact, as Python ints)."""
    import numpy as np

    first, bad, whole, low, high = -1, 0, True, None, None
    for start, rows in t.raw_chunks():
        part = np.asarray(rows)
        if not part.size:
            continue
        if part.dtype.kind == "f":
            finite = np.isfinite(part.reshape(len(part), -1)).all(axis=1)
            if not finite.all():
                first = int(np.flatnonzero(~finite)[0]) + start if first < 0 else first
                bad += int((~finite).sum())
                continue
            whole = whole and bool((part == np.round(part)).all())
        lo, hi = part.min().item(), part.max().item()
        low, high = (lo, hi) if low is None else (min(low, lo), max(high, hi))
    return first, bad, whole and not bad, low, high


def _mapped_targets(t: Mapped, count: int, *, fit: LabelFit, given: str, num_classes: int | None, output_id: str,
                    head: str, out_shape: tuple[int, ...], source: str,
                    later: list[tuple[Any, Any]] | None = None) -> tuple[Any, str]:
    """:func:`check_targets` of targets mapped from a large .npz (not one-hot): ``fit`` of the graph's
    ``given`` kind, and the checks of the values from one chunked scan; what comes back stays mapped,
    converted (and reshaped) as used. With ``later`` the checks that only refuse (integer labels' range,
    regression targets' NaN/Inf) wait for :func:`one_pass`'s read instead of a scan of their own; float
    labels taken as classes are scanned here."""
    import torch

    kinds = t.array.dtype.kind
    low: Any = None
    high: Any = None
    whole = True
    if given == "classification" and kinds == "f":  # (NaN first, as for labels read whole)
        first, bad, whole, low, high = _label_scan(t)
        if bad:
            raise DataError(f"{source}: array 'y' has NaN or Inf values ({bad} sample{'s' * (bad != 1)}, the first "
                            f"is sample {first}); clean or drop them")
    if fit.problem is not None:
        raise DataError(f"{source}: {fit.problem}")
    kind = fit.kind
    if kind != given:
        num_classes = int(out_shape[0]) if kind == "classification" else None
    if kind == "classification":
        if fit.whole is not None and not whole:
            raise DataError(f"{source}: {fit.whole}")
        if low is None and (later is None or kinds not in "iu"):
            _, _, _, low, high = _label_scan(t)
        if t.dim() == 2 and t.shape[1] == 1:
            t = t.reshaped(())

        def in_range(low: Any, high: Any) -> None:
            _label_range(int(low), int(high), num_classes, source=source, head=head, output_id=output_id)

        labels = t.converted(torch.int64)
        if low is None and later is not None:  # (integer labels: their range from one_pass's read)
            later.append((labels, lambda first, bad, low, high: in_range(low, high)))
        else:
            in_range(low, high)
        return labels, kind
    want = tuple(int(s) for s in out_shape)
    if tuple(t.shape[1:]) != want:
        t = t.reshaped(want)
    t = t.converted(torch.float32)

    def finite(first: int, bad: int, low: Any, high: Any) -> None:
        if first >= 0:
            raise DataError(f"{source}: array 'y' has NaN or Inf values (the first at sample {first}); clean or "
                            "drop those samples")

    if later is not None:  # (regression targets as large as the inputs: read once, with the digest)
        if not _finite_kind(t):
            later.append((t, finite))
    else:
        finite(_nonfinite(t)[0], 0, None, None)
    return t, kind


# ---- what a run's data are: for a resumed run, and a flow's levels ------------------------------

def data_digest(splits: list[Any], visit: Any = None) -> str:
    """A digest of a run's data: ``splits`` are ``(inputs by node id, targets or None)`` pairs (or None),
    training first; every tensor's name, shape, number type and bytes count, in order. A checkpoint
    keeps it so that a resumed run can tell data rewritten since from the same data. ``visit(array,
    first sample, chunk as the file holds it, chunk converted)`` sees each chunk of a mapped array as it
    is hashed (``one_pass``)."""
    import hashlib

    import torch

    digest = hashlib.blake2b(digest_size=16)
    for split in splits:
        if split is None:
            digest.update(b"none")
            continue
        inputs, targets = split
        for name, t in [*sorted(inputs.items()), ("<targets>", targets)]:
            if isinstance(t, Mapped):  # (the same bytes as read whole, a chunk at a time)
                digest.update(f"{name}{tuple(t.shape)}{t.dtype}".encode())
                for start, raw in t.raw_chunks():
                    part = t._tensor(raw)
                    digest.update(memoryview(part.contiguous().reshape(-1).view(torch.uint8).numpy()))
                    if visit is not None:
                        visit(t, start, raw, part)
            elif t is not None:
                digest.update(f"{name}{tuple(t.shape)}{t.dtype}".encode())
                digest.update(memoryview(t.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy()))
    return digest.hexdigest()


def one_pass(splits: list[Any], later: list[tuple[str, str, Any]], pixels: dict[str, Any],
             targets: Sequence[tuple[Any, Any]] = ()) -> tuple[str, list[str]]:
    """``(the data digest, the names in pixels that look like 8-bit pixels)`` from one read of the mapped
    arrays: the digest's own pass (training rows, then validation rows: each sample once) also makes the
    NaN/Inf check :func:`check_inputs` left in ``later``, the checks :func:`check_targets` left in
    ``targets`` (each given the first sample with NaN or Inf, how many, and the smallest and largest
    value as the file holds them) and :func:`looks_like_pixels` of the arrays in ``pixels`` ({name:
    mapped array as the file holds it}); a NaN or Inf is refused as check_inputs refuses it (the first
    sample and the count over the whole array)."""
    import numpy as np
    import torch

    bad: dict[int, list[Any]] = {id(t.array): [-1, 0, None, None] for _, _, t in later if not _finite_kind(t)}
    bad.update((id(t.array), [-1, 0, None, None]) for t, _ in targets)
    scans = {id(t.array): PixelScan() for t in pixels.values()}
    ranged = {id(t.array) for t, _ in targets if t.array.dtype.kind in "iu"}

    def visit(t: Mapped, start: int, raw: Any, part: Any) -> None:
        found = bad.get(id(t.array))
        if found is not None and len(part):
            if id(t.array) in ranged:  # (integer labels: exact, uint64 too, as Python ints)
                lo, hi = raw.min().item(), raw.max().item()
                found[2:] = [lo, hi] if found[2] is None else [min(found[2], lo), max(found[3], hi)]
            elif not _finite_kind(t):
                finite = torch.isfinite(part.reshape(len(part), -1)).all(dim=1)
                if not bool(finite.all()):
                    where = (~finite).nonzero()[:, 0].numpy() + start
                    where = where if t.rows is None else t.rows[where]
                    found[0] = int(where.min()) if found[0] < 0 else min(found[0], int(where.min()))
                    found[1] += len(where)
        scan = scans.get(id(t.array))
        if scan is not None:
            # (a read-only map: torch warns on a tensor it cannot write, so the chunk is copied, as Mapped does)
            scan.add(torch.from_numpy(native(raw) if raw.flags.writeable else native(np.array(raw))))

    digest = data_digest(splits, visit)
    for source, name, t in later:
        first, count = bad.get(id(t.array), (-1, 0))[:2]
        if count:
            raise DataError(f"{source}: array {name!r} has NaN or Inf values ({count} sample{'s' * (count != 1)}, "
                            f"the first is sample {first}); clean or drop them")
    for t, check in targets:
        check(*bad[id(t.array)])
    return digest, [n for n, t in pixels.items() if scans[id(t.array)].answer()]


def flow_levels(eight_bit: list[bool]) -> int | None:
    """256 where a flow's data are 8-bit images scaled to [0, 1] (``mnist:``, ``cifar10:``, uint8
    arrays scaled by ``scale_uint8``; the validation data too), which it dequantises; None for data
    it models as given (float arrays, raw 0..255 bytes, synthetic). ``eight_bit``: one flag a source."""
    return 256 if eight_bit and all(eight_bit) else None
