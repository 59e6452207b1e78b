"""Residual stream values of the reversible runtime: one tensor, or a compensated pair.

A stream inside a region is a tensor (in the model's dtype, or float64 for a
float32 model), or with ``FLOAT32X2`` a :class:`Pair` of float32 tensors: ``hi``
(the float32 rounding of the value, what layers read, without a copy) and ``lo``
(the rounding error, so ``hi + lo`` carries about 48 bits like a float64 stream
carries 53). Couplings update a pair with TwoSum and renormalise it (Fast2Sum).
The helpers here take either kind. Imports only torch and the standard library:
the code exporter inlines this file verbatim.
"""
import sys
from collections.abc import Sequence

import torch

from .runtime_fused import fused_two_sum_, fused_usable, fused_wanted

# The stream setting for compensated float32 pairs (``model.stream_dtype = "float32x2"``).
FLOAT32X2 = "float32x2"

_CHUNK_BYTES = 1 << 18
_MIN_PIECES = 8
# On an accelerator every piece costs each pass a kernel launch, which outweighs the
# work at these sizes: pieces only bound the temporaries of very large streams there
_DEVICE_CHUNK_BYTES = 1 << 26


class Pair:
    """A compensated float32 stream value: ``hi`` is the float32 rounding of ``hi + lo``."""

    __slots__ = ("hi", "lo")

    def __init__(self, hi: torch.Tensor, lo: torch.Tensor) -> None:
        self.hi, self.lo = hi, lo

    @property
    def shape(self) -> torch.Size:
        return self.hi.shape


Value = torch.Tensor | Pair


def is_pair(stream: object) -> bool:
    return isinstance(stream, str) and stream == FLOAT32X2


def to_stream(x: torch.Tensor, stream: "torch.dtype | str | None", copy: bool = False,
              layout: torch.memory_format = torch.preserve_format) -> Value:
    """``x`` as a stream value. ``copy``: the runtime will update it in place, so a pair gets
    buffers of its own (like the converted copy of a wider dtype); otherwise a pair reads
    ``x`` itself with a correction of zeros that takes no memory (nothing may write it).
    ``layout``: the memory layout of such copies (the region's, see ``Region.layout_of``);
    a value read without ``copy`` (a side input, kept for backward) is never copied for it."""
    if stream is None:
        return x
    if not is_pair(stream):
        return x.to(stream, memory_format=layout if copy else torch.preserve_format)  # type: ignore[call-overload]
    hi = x.to(torch.float32, copy=True, memory_format=layout) if copy else x.to(torch.float32)
    # (a copy's correction too: zeros that take no memory until its first update, which
    # then starts from no correction, see _pair_update)
    return Pair(hi, no_correction(hi))


def no_correction(hi: torch.Tensor) -> torch.Tensor:
    """A pair's correction of zeros that takes no memory (an expanded scalar: nothing may write it)."""
    return hi.new_zeros(()).expand_as(hi)


def _expanded(t: torch.Tensor) -> bool:
    """Whether elements of ``t`` share memory (an expanded tensor, e.g. :func:`no_correction`)."""
    strides = t.stride()
    return 0 in strides and any(st == 0 and n > 1 for st, n in zip(strides, t.shape))


def value(v: Value) -> torch.Tensor:
    """What a layer reads from a stream: the tensor, or a pair's ``hi`` (no copy)."""
    return v.hi if isinstance(v, Pair) else v


def as_dtype(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``x.to(dtype)``, asked only when the dtype differs (the call costs a small model's step
    a measurable share where it would return ``x`` itself, as it almost always does)."""
    return x if x.dtype == dtype else x.to(dtype)


def tensors(v: Value) -> tuple[torch.Tensor, ...]:
    return (v.hi, v.lo) if isinstance(v, Pair) else (v,)


def exact(v: Value) -> torch.Tensor:
    """The stream's value in float64 (a pair's hi + lo): for measuring, never kept."""
    return v.hi.double() + v.lo.double() if isinstance(v, Pair) else v


# How many values of a stream the inversion error compares (see :func:`sample`)
SAMPLES = 256


def sample(v: Value, k: int = SAMPLES) -> torch.Tensor:
    """``k`` values spread evenly over the stream (the same ones every time; copies only those).
    A pair's are ``hi + lo`` in float64 (float32 widens exactly, so adding ``lo`` in place
    is the same sum as widening both)."""
    if isinstance(v, Pair):
        index = _sample_index(v.hi, k)
        return torch.take(v.hi, index).double().add_(torch.take(v.lo, index))
    return torch.take(v, _sample_index(v, k))


_SAMPLE_INDEX: dict[tuple[tuple[int, ...], int, torch.device], torch.Tensor] = {}


def _sample_index(v: torch.Tensor, k: int) -> torch.Tensor:
    """The flat (row-major) indices :func:`sample` reads, made once per shape. ``take`` reads
    them in one op in any layout (a few small ops per call were a measurable share of a small
    model's step: every region samples every step)."""
    key = (tuple(v.shape), k, v.device)
    found = _SAMPLE_INDEX.get(key)
    if found is None:
        if len(_SAMPLE_INDEX) > 256:
            _SAMPLE_INDEX.clear()
        n = v.numel()
        m = min(k, n)
        # integer arithmetic: a float32 linspace rounds its last index up to n on CUDA for
        # n = 2**24 (a 128x128x32x32 stream), and ``take`` then reads out of bounds
        found = torch.arange(m, dtype=torch.int64) * (n - 1) // max(m - 1, 1)
        found = _SAMPLE_INDEX[key] = found.to(v.device)
    return found


def like(ref: Value, y: torch.Tensor) -> Value:
    """A layer's result ``y`` as a stream value of ``ref``'s kind (a pair with no correction:
    zeros that take no memory; the layer's result is not the runtime's to update in place)."""
    if isinstance(ref, Pair):
        hi = y.to(torch.float32)
        return Pair(hi, no_correction(hi))
    return y.to(ref.dtype)


def split(v: Value, sizes: Sequence[int], dim: int) -> list[Value]:
    if isinstance(v, Pair):
        return [Pair(h, lo) for h, lo in zip(torch.split(v.hi, list(sizes), dim), torch.split(v.lo, list(sizes), dim))]
    return list(torch.split(v, list(sizes), dim))


def apart(v: Value, sizes: Sequence[int], dim: int) -> list[Value]:
    """:func:`split`, but a pair's parts get dense buffers of their own (copies, in the
    pair's memory layout) where the views would not be dense: layers read ``hi`` as it is,
    and a channel-slice view makes every convolution reorder its input (forward, and again
    in backward for what it saved). For a value the caller lets go (the copies replace it)."""
    if not isinstance(v, Pair):
        return split(v, sizes, dim)
    fmt = layout(v.hi)
    his = torch.split(v.hi, list(sizes), dim)
    if all(h.is_contiguous(memory_format=fmt) for h in his):
        return split(v, sizes, dim)  # views of one buffer (a Cat finds them whole: :func:`whole`)
    return [Pair(h.contiguous(memory_format=fmt), _apart_lo(lo, fmt))
            for h, lo in zip(his, torch.split(v.lo, list(sizes), dim))]


def _apart_lo(lo: torch.Tensor, fmt: torch.memory_format) -> torch.Tensor:
    if _expanded(lo):
        return lo  # an expanded correction of zeros: no memory, nothing writes it
    return lo.contiguous(memory_format=fmt)


def layout(x: torch.Tensor) -> torch.memory_format:
    """The memory layout ``x`` is dense in: channels_last for a 4-D tensor stored so (what
    a region's streams use on the CPU, see ``Region.layout_of``), else contiguous."""
    if x.dim() == 4 and not x.is_contiguous() and x.is_contiguous(memory_format=torch.channels_last):
        return torch.channels_last
    return torch.contiguous_format


def dense(x: torch.Tensor) -> bool:
    """Whether ``x`` covers its elements without gaps, in either layout."""
    return x.is_contiguous() or (x.dim() == 4 and x.is_contiguous(memory_format=torch.channels_last))


def cat(parts: Sequence[Value], dim: int) -> Value:
    if parts and isinstance(parts[0], Pair):
        return Pair(torch.cat([value(p) for p in parts], dim), torch.cat([_lo(p) for p in parts], dim))
    return torch.cat(list(parts), dim)  # type: ignore[arg-type]


def gather(parts: list[Value], dim: int) -> Value:
    """:func:`cat` of parts handed over (``parts`` is emptied): a pair's ``hi`` parts are
    released before its ``lo`` is concatenated, so at most half a whole copy sits next to them."""
    if not (parts and isinstance(parts[0], Pair)):
        return cat(parts, dim)
    his, los = [value(p) for p in parts], [_lo(p) for p in parts]
    parts.clear()
    hi = torch.cat(his, dim)
    his.clear()
    return Pair(hi, torch.cat(los, dim))


def _lo(v: Value) -> torch.Tensor:
    return v.lo if isinstance(v, Pair) else torch.zeros_like(v)


def whole(parts: Sequence[Value], sizes: Sequence[int], dim: int) -> Value | None:
    """The value whose split into ``sizes`` along ``dim`` are exactly ``parts`` (in order),
    or None: concatenating such parts is that value, without a copy."""
    if isinstance(parts[0], Pair):
        hi = _whole([value(p) for p in parts], sizes, dim)
        if hi is None:
            return None
        los = [_lo(p) for p in parts]
        if all(_expanded(lo) for lo in los):  # no part has a correction yet: neither has the whole
            return Pair(hi, no_correction(hi))
        lo = _whole(los, sizes, dim)
        # parts updated where they were split, some with a correction of their own since (a
        # part's first in-place update makes its own): the corrections joined anew, hi as it is
        return Pair(hi, lo if lo is not None else torch.cat(los, dim))
    return _whole(parts, sizes, dim)  # type: ignore[arg-type]


def _whole(parts: Sequence[torch.Tensor], sizes: Sequence[int], dim: int) -> torch.Tensor | None:
    base = parts[0]._base
    if base is None or base.dim() <= dim or base.shape[dim] != sum(sizes):
        return None
    for part, view in zip(parts, torch.split(base, list(sizes), dim)):
        if (part._base is not base or part.storage_offset() != view.storage_offset()
                or part.shape != view.shape or part.stride() != view.stride()):
            return None
    return base


def _shares(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def shares(a: Value, b: Value) -> bool:
    """Whether the two values share any storage."""
    return any(any_in(tensors(a), y) for y in tensors(b))


def any_in(ts: Sequence[torch.Tensor | None], ref: torch.Tensor) -> bool:
    """Whether any of ``ts`` (None: skipped) has elements in ``ref``'s storage. Two live
    storages never overlap, so a tensor whose first element lies in ``ref``'s storage bytes is
    in that storage; ``ref``'s span is read once and each tensor's address is one call
    (``untyped_storage()`` makes an object per call, a measurable share of a tiny model's
    coupling backward)."""
    storage = ref.untyped_storage()
    start = storage.data_ptr()
    end = start + storage.nbytes()
    return any(t is not None and start <= t.data_ptr() < end and t.numel() > 0 for t in ts)


def fresh_alias(x: torch.Tensor) -> torch.Tensor:
    """The same memory as ``x`` under a version counter of its own.

    F reads a stream whose neighbour (another part of the same buffer) the runtime
    updates in place before F's backward runs: the elements differ, but views share
    their base's version counter, and autograd would refuse what F saved.
    """
    alias = x.new_empty((0,))
    with torch.no_grad():
        alias.set_(x.untyped_storage(), x.storage_offset(), x.shape, x.stride())
    return alias


def _pieces(y: torch.Tensor, temporaries: int = 1, whole: bool = False) -> int:
    """How many batch pieces an in-place update of ``y`` works in, when each piece needs
    ``temporaries`` temporaries of its size: pieces of at most _CHUNK_BYTES of them, and at
    least _MIN_PIECES where they matter, so they stay small next to the stream itself (they
    are alive at the peak). Off the CPU, pieces of up to _DEVICE_CHUNK_BYTES (a launch per
    pass and piece; not yet measured on a GPU)."""
    size = y.numel() * y.element_size() * temporaries
    if y.device.type != "cpu":
        return max(1, min(y.shape[0], -(-size // _DEVICE_CHUNK_BYTES)))
    least = _MIN_PIECES if size >= _CHUNK_BYTES // 4 and not whole else 1  # whole: L2-sized pieces only
    return max(1, min(y.shape[0], max(-(-size // _CHUNK_BYTES), least)))


# How many tensors hold a storage (torch's own count; None where this torch has no such call)
_storage_users = getattr(torch._C, "_storage_Use_Count", None)


def sole(f: torch.Tensor) -> bool:
    """Whether ``f``'s memory is its caller's alone, held by one name: no other tensor shares
    its storage (a view of it, what F's graph saved for its backward, such as a ReLU's or a
    custom Function's output, a module's buffer or parameter, an input passed through) and no
    other Python name holds it (a module keeping its last output). Such an output may be
    written over once it has been read: nothing can see it change."""
    if not unshared(f):
        return False
    # the caller's name, this argument and getrefcount's own
    return sys.getrefcount(f) <= 3


def unshared(t: torch.Tensor) -> bool:
    """Whether ``t`` is a dense buffer of its own: no view, and no other tensor on its storage."""
    return t._base is None and dense(t) and alone(t)


def alone(t: torch.Tensor) -> bool:
    """Whether no other tensor shares ``t``'s storage (torch's count of its users: ``t`` and the
    storage handle asked); False where unknown (a torch without the count, a tensor subclass)."""
    if _storage_users is None:
        return False
    try:
        return bool(_storage_users(t.untyped_storage()._cdata) == 2)
    except (AttributeError, RuntimeError, NotImplementedError, TypeError):  # a tensor subclass
        return False


def _update(y: Value, f: torch.Tensor, sign: int, in_place: bool, whole: bool = False) -> Value:
    """``y + sign * f`` in y's kind (float64 streams stay float64, pairs stay compensated).

    A narrow ``f`` is widened before the arithmetic (a mixed-dtype op makes the
    same widened copy internally, ~2x slower on CPU); in place, a piece at a time
    along the batch, so no widened copy of the whole of f sits next to the stream.
    ``whole``: a pair's temporaries may be as large as the stream (not at the peak),
    so a small stream is updated in one piece: each piece costs ten dispatched passes.
    """
    if isinstance(y, Pair):
        return _pair_update(y, f, sign, in_place, whole)
    in_place = in_place and y.shape == f.shape and (
        y.dtype == f.dtype or torch.promote_types(y.dtype, f.dtype) == y.dtype)  # (an op call: asked only when needed)
    if not in_place:
        f = f.to(y.dtype)
        return torch.add(y, f) if sign > 0 else torch.sub(y, f)
    if f.dtype == y.dtype or y.dim() == 0:
        return y.add_(f) if sign > 0 else y.sub_(f)
    for yp, fp in zip(y.chunk(_pieces(y)), f.chunk(_pieces(y))):
        wide = fp.to(y.dtype)
        yp.add_(wide) if sign > 0 else yp.sub_(wide)
        del wide  # else it lives on beside the next piece's copy
    return y


def _two_sum(hi: torch.Tensor, lo: torch.Tensor, f: torch.Tensor, sign: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(hi, lo) + sign * f: TwoSum puts the rounding error of hi + f into lo (exactly),
    Fast2Sum renormalises so hi is the float32 rounding of hi + lo. Negating f is exact
    and rounding symmetric, so a subtraction is the addition of -f bit for bit."""
    total = hi + f if sign > 0 else hi - f
    back = total - hi
    err = hi - (total - back)
    err = err + (f - back) if sign > 0 else err - (f + back)
    lo = lo + err
    new_hi = total + lo
    return new_hi, lo - (new_hi - total)


def _two_sum_exact(hi: torch.Tensor, f: torch.Tensor, sign: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``hi + sign * f`` as a pair, for a stream with no correction yet: TwoSum alone. The sum's
    float32 rounding and its exact error are already normalised (adding the error back rounds
    to the same sum), so this is :func:`_two_sum_` with ``lo = 0`` in six passes instead of ten,
    with the same three temporaries (two of them are the new pair), and no zeros made for lo."""
    total = hi + f if sign > 0 else hi - f
    back = total - hi
    err = total - back
    torch.sub(hi, err, out=err)
    if sign > 0:
        err.add_(torch.sub(f, back, out=back))
    else:
        err.sub_(torch.add(f, back, out=back))
    return total, err


def _pair_update(y: Pair, f: torch.Tensor, sign: int, in_place: bool, whole: bool = False) -> Pair:
    f = f.to(torch.float32)  # autocast's bfloat16/float16 widen exactly
    if not (in_place and y.hi.shape == f.shape and y.hi.dim() > 0):
        return Pair(*_two_sum(y.hi, y.lo, f, sign))
    if fused_wanted(y.hi):
        fused = _fused_update(y, f, sign)
        if fused is not None:
            return fused
    pieces = _pieces(y.hi, 3, whole)
    if _expanded(y.lo):  # no correction yet (a stream's first update in a region)
        if pieces == 1 and y.hi._base is None:
            return Pair(*_two_sum_exact(y.hi, f, sign))
        y = Pair(y.hi, torch.zeros_like(y.hi))
    if pieces == 1:  # (three chunk calls of one piece each cost as much as a pass)
        _two_sum_(y.hi, y.lo, f, sign)
        return y
    for hp, lp, fp in zip(y.hi.chunk(pieces), y.lo.chunk(pieces), f.chunk(pieces)):
        _two_sum_(hp, lp, fp, sign)
    return y


def _fused_update(y: Pair, f: torch.Tensor, sign: int) -> Pair | None:
    """The in-place pair update as one GPU kernel (``runtime_fused``: the same bits, no
    temporaries), or None where it cannot run. A first update (``lo`` an expanded zero) writes
    the sum over ``hi`` and its error into a new ``lo``."""
    first = _expanded(y.lo)
    if not fused_usable(y.hi, None if first else y.lo, f):
        return None
    if first:
        lo = torch.empty_like(y.hi)
        return Pair(y.hi, lo) if fused_two_sum_(y.hi, lo, f, sign, exact=True) else None
    return y if fused_two_sum_(y.hi, y.lo, f, sign) else None


def update_over(y: Pair, f: torch.Tensor, sign: int) -> Pair:
    """``y + sign * f`` written over ``y``, using ``f``'s own memory as one of TwoSum's
    temporaries (f is float32, of y's shape, and the caller's alone: see :func:`sole`; its
    values are lost). The same operations as :func:`_two_sum_` bit for bit, with two
    temporaries instead of three, in fewer pieces (:func:`over_rows`). On a GPU, one fused
    kernel with none (``runtime_fused``). A stream with no correction yet (an expanded zero,
    which nothing may write) takes its first update as :func:`_pair_update` does."""
    if _expanded(y.lo):
        return _pair_update(y, f, sign, True)
    if fused_wanted(y.hi) and fused_usable(y.hi, y.lo, f) and fused_two_sum_(y.hi, y.lo, f, sign):
        return y
    rows = over_rows(y.hi)
    if rows >= y.hi.shape[0]:
        _two_sum_over_(y.hi, y.lo, f, sign)
        return y
    for hp, lp, fp in zip(y.hi.split(rows), y.lo.split(rows), f.split(rows)):
        _two_sum_over_(hp, lp, fp, sign)
    return y


def over_rows(y: torch.Tensor) -> int:
    """Rows (along the batch) per piece of :func:`update_over`. Its two temporaries take at most
    F's output's bytes (half the batch each), where :func:`_pair_update`'s three took 3/8 of
    them: F's backward, which comes next, holds its graph and two of its largest activations
    (F's output is one), so the update's moment stays below it. A stream whose update
    :func:`_pair_update` does in one piece is done in one piece (two temporaries, not three);
    pieces of at most _CHUNK_BYTES of temporaries, as there."""
    batch = y.shape[0]
    if y.device.type != "cpu":
        return -(-batch // _pieces(y, 2))
    if _pieces(y, 3) == 1:
        return batch
    row = 2 * (y.numel() // batch) * y.element_size()  # the temporaries of one row (y[0] would dispatch a select)
    return max(1, min(batch // 2, _CHUNK_BYTES // row))


def _two_sum_over_(hi: torch.Tensor, lo: torch.Tensor, f: torch.Tensor, sign: int) -> None:
    total = hi + f if sign > 0 else hi - f
    back = total - hi
    f.sub_(back) if sign > 0 else f.add_(back)  # f - back (f + back), kept in f
    torch.sub(total, back, out=back)
    torch.sub(hi, back, out=back)  # the error of total, before what f loses to its rounding
    back.add_(f) if sign > 0 else back.sub_(f)
    lo.add_(back)
    torch.add(total, lo, out=hi)
    lo.sub_(torch.sub(hi, total, out=back))


def _two_sum_(hi: torch.Tensor, lo: torch.Tensor, f: torch.Tensor, sign: int) -> None:
    """:func:`_two_sum` in place, the same operations bit for bit, with three temporaries.

    Ten passes are the floor: TwoSum's six operations are the fewest for an exact error
    without knowing which magnitude is larger. Measured on CPU, none of these was faster:
    reused scratch buffers with fewer three-operand passes, float64 arithmetic, smaller
    (L1) or larger pieces, views made once per pair; a pass costs about a microsecond of
    dispatch plus L2 bandwidth. The pair's whole extra cost over float32 streams is these
    passes (with the update replaced by one add, the default ran as fast as float32 streams)."""
    total, err = _two_sum_exact(hi, f, sign)  # (its third temporary is gone on return)
    lo.add_(err)
    torch.add(total, lo, out=hi)
    lo.sub_(torch.sub(hi, total, out=err))
