"""The temporaries of the reversible runtime's in-place stream updates, torch-free.

Backward rebuilds a coupling's input in place (``runtime_streams._update``): along
the batch, in pieces, each with temporaries of its size. The estimate counts them
with the rule the runtime uses (``runtime_streams._pieces`` on the CPU);
tests/diagnostics/test_update_temporaries.py holds the two equal.
"""
from __future__ import annotations

# How the runtime updates a stream in place on the CPU (runtime_streams._pieces): along the batch,
# in pieces whose temporaries take at most CHUNK_BYTES, and at least MIN_PIECES pieces once
# they would take CHUNK_BYTES // 4.
CHUNK_BYTES = 1 << 18
MIN_PIECES = 8


def update_pieces(batch: int, sample_bytes: int, temporaries: int) -> int:
    """Pieces an in-place stream update of ``batch`` samples of ``sample_bytes`` each works in."""
    size = batch * sample_bytes * temporaries
    least = MIN_PIECES if size >= CHUNK_BYTES // 4 else 1
    return max(1, min(batch, max(-(-size // CHUNK_BYTES), least)))


def _temporaries(elements: int, elem: int, stream_bytes: int) -> tuple[int, int] | None:
    """(bytes of one temporary per sample, temporaries) of an in-place update of a stream value
    of ``elements`` per sample; None where the stream is in the model's dtype (no temporaries).
    A compensated float32 pair's TwoSum takes three float32 temporaries
    (runtime_streams._two_sum_), a float64 stream one widened copy of the narrow update."""
    if stream_bytes <= elem or elements <= 0:
        return None
    if elem == 4 and stream_bytes == 8:  # float32x2 pairs
        return elements * 4, 3
    return elements * stream_bytes, 1


def update_break(elements: int, elem: int, stream_bytes: int) -> int | None:
    """The batch from which an update of ``elements`` per sample works in at least MIN_PIECES
    pieces, so its temporaries shrink: the one place a larger batch can peak lower (None: never,
    or from batch 1)."""
    found = _temporaries(elements, elem, stream_bytes)
    if found is None:
        return None
    first = -(-(CHUNK_BYTES // 4) // (found[0] * found[1]))
    return first if first > 1 else None


def update_temporaries(batch: int, elements: int, elem: int, stream_bytes: int) -> int:
    """Bytes of temporaries alive while backward rebuilds a stream value of ``elements`` per
    sample in place (one piece's worth: see :func:`update_pieces`)."""
    found = _temporaries(elements, elem, stream_bytes)
    if found is None:
        return 0
    sample_bytes, count = found
    return count * -(-batch // update_pieces(batch, sample_bytes, count)) * sample_bytes
