"""Arrays of an uncompressed ``.npz`` mapped from the file and read as they are used.

``numpy.savez`` stores each array as a ``.npy`` member of a zip without compressing it, so the
array's bytes lie in the file as they are: :func:`map_npz` maps each large member at its offset
(as ``numpy.load(..., mmap_mode="r")`` maps a ``.npy``) and :class:`Mapped` hands out batches that
copy only their samples, converted as a run converts the arrays it reads whole (uint8 scaled to
[0, 1], the model's float type, a channel axis added). What reads every sample (the NaN check,
the data digest, the pixel-like note) walks the map ``CHUNK_BYTES`` at a time. Copied verbatim into
an exported training script with ``sources``: numpy and torch only, imported inside functions.
"""
from __future__ import annotations

import math
import os
import struct
import zipfile
from typing import Any

# A stored (uncompressed) member larger than this is mapped, not read whole; tests lower it.
MAP_ABOVE = 256 * 2**20
# What walks a mapped array's every sample reads at most about this many bytes at a time.
CHUNK_BYTES = 64 * 2**20


class MappedError(ValueError):
    """A stored member whose bytes do not hold what its ``.npy`` header says."""


class Mapped:
    """N-first samples of an array mapped from its file. ``rows``: the samples it holds (indices into the
    map, None for all); ``scale``: uint8 read as float32 ``k / 255``; ``to``: the torch dtype samples
    become (None: the array's own); ``channel``: a channel axis of 1 added after N; ``sample``: each
    sample's shape, reshaped from the file's (None: as it is; targets of N x 1 become N, N x K a 1-D
    Output's shape). (Methods that return a Mapped say ``Any``: the exported script, which copies this
    class, has no ``__future__`` import.)"""

    def __init__(self, array: Any, rows: Any = None, *, scale: bool = False, to: Any = None,
                 channel: bool = False, sample: Any = None) -> None:
        self.array, self.rows, self.scale, self.to, self.channel = array, rows, scale, to, channel
        self.sample = sample

    def _with(self, **changes: Any) -> Any:
        fields = {"rows": self.rows, "scale": self.scale, "to": self.to, "channel": self.channel,
                  "sample": self.sample, **changes}
        return Mapped(self.array, **fields)

    def __len__(self) -> int:
        return len(self.array) if self.rows is None else len(self.rows)

    @property
    def shape(self) -> tuple[int, ...]:
        rest = tuple(int(s) for s in (self.array.shape[1:] if self.sample is None else self.sample))
        return (len(self), *((1,) if self.channel else ()), *rest)

    @property
    def dtype(self) -> Any:
        import numpy as np
        import torch

        if self.to is not None:
            return self.to
        if self.scale:
            return torch.float32
        return torch.from_numpy(np.empty(0, self.array.dtype.newbyteorder("="))).dtype

    @property
    def nbytes(self) -> int:
        """The bytes the samples take in the file."""
        return len(self) * math.prod(self.array.shape[1:]) * self.array.dtype.itemsize

    def dim(self) -> int:
        return len(self.shape)

    def is_complex(self) -> bool:
        return self.array.dtype.kind == "c"

    def unsqueeze(self, axis: int) -> Any:
        assert axis == 1 and not self.channel
        return self._with(channel=True)

    def scaled(self) -> Any:
        return self._with(scale=True)

    def converted(self, dtype: Any) -> Any:
        return self._with(to=dtype)

    def reshaped(self, sample: Any) -> Any:
        """Each sample reshaped to ``sample`` (the same number of values)."""
        assert math.prod(sample) == math.prod(self.array.shape[1:]) and not self.channel
        return self._with(sample=tuple(int(s) for s in sample))

    def take(self, index: Any) -> Any:
        """The samples at ``index`` (positions in this one), still mapped: a validation split."""
        import numpy as np

        index = np.asarray(index, dtype=np.int64)
        return self._with(rows=index if self.rows is None else self.rows[index])

    def _tensor(self, rows: Any) -> Any:
        import numpy as np
        import torch

        # a copy of these samples only (fancy indexing copied them already; a chunk's slice is a view)
        t = torch.from_numpy(native(rows) if rows.flags.writeable else native(np.array(rows)))
        if self.scale:
            t = t.to(torch.float32).div_(255.0)
        if self.to is not None:
            t = t.to(self.to)
        if self.sample is not None:
            t = t.reshape(len(t), *self.sample)
        return t.unsqueeze(1) if self.channel else t

    def __getitem__(self, index: Any) -> Any:
        """The samples at ``index`` (a tensor or array of positions, or a slice) as a tensor in memory."""
        import numpy as np

        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            index = np.arange(start, stop, step, dtype=np.int64)
        index = np.asarray(index, dtype=np.int64).reshape(-1)
        rows = index if self.rows is None else self.rows[index]
        return self._tensor(self.array[rows])

    def raw_chunks(self) -> Any:
        """``(first sample, numpy array of the next samples as the file holds them)`` over every sample,
        about ``CHUNK_BYTES`` of the file's bytes (and of converted ones) at a time."""
        per = max(1, math.prod(self.array.shape[1:]) * 8)  # (converted to float64 at most)
        step = max(1, CHUNK_BYTES // per)
        for start in range(0, len(self), step):
            stop = min(start + step, len(self))
            yield start, self.array[start:stop] if self.rows is None else self.array[self.rows[start:stop]]

    def chunks(self) -> Any:
        """``(first sample, tensor of the next samples)``, converted, over every sample (``raw_chunks``)."""
        for start, rows in self.raw_chunks():
            yield start, self._tensor(rows)


def native(array: Any) -> Any:
    """``array`` C-contiguous in this machine's byte order, which torch.from_numpy needs (a copy only where
    it is not: ``numpy.savez`` of a big-endian ``>f4`` array keeps that order)."""
    import numpy as np

    return np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("="))


def _member_offset(fh: Any, info: zipfile.ZipInfo) -> int:
    """Where a stored member's bytes start: after its local header, whose name and extra field
    lengths may differ from the central directory's."""
    fh.seek(info.header_offset)
    local = fh.read(30)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        raise MappedError("its zip entry is damaged")
    name_len, extra_len = struct.unpack("<HH", local[26:30])
    return info.header_offset + 30 + name_len + extra_len


def npz_members(path: str) -> dict[str, tuple[zipfile.ZipInfo, bool]]:
    """``{array name: (its zip entry, whether it is mapped)}``: a stored member over ``MAP_ABOVE`` bytes
    in the file is mapped, the inputs' and the targets' ``y`` alike."""
    out: dict[str, tuple[zipfile.ZipInfo, bool]] = {}
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            if info.filename.endswith(".npy"):
                name = info.filename[:-4]
                out[name] = (info, info.compress_type == zipfile.ZIP_STORED
                             and not info.flag_bits & 0x1 and info.file_size > MAP_ABOVE)
    return out


def map_above(nbytes: int) -> bool:
    """Whether an array of ``nbytes`` is mapped rather than read whole (over ``MAP_ABOVE``)."""
    return nbytes > MAP_ABOVE


def reading_note(names: list[str], path: str | None) -> str:
    """What a run's start says of how its data are read, where it matters: the arrays (``names``, as the
    file calls them) mapped from an uncompressed .npz, ``x, y mapped (read as used)``; ``read whole`` for a
    .npz / .pt over ``MAP_ABOVE`` bytes at ``path`` that is not mapped; else ''. ``revstudio train``'s
    ``data:`` line and the exported script's say it in these words."""
    if names:
        return ", ".join(names) + " mapped (read as used)"
    try:
        big = bool(path) and str(path).lower().endswith((".npz", ".pt", ".pth")) \
            and os.path.getsize(str(path)) > MAP_ABOVE
    except OSError:
        return ""
    return "read whole" if big else ""


def map_member(path: str, info: zipfile.ZipInfo) -> Any:
    """The array of a stored ``.npy`` member, mapped read-only at its offset in the file; raises
    :class:`MappedError` where the header or the bytes behind it are not a whole array."""
    import numpy as np

    fmt = np.lib.format
    with open(path, "rb") as fh:
        start = _member_offset(fh, info)
        fh.seek(start)
        try:
            major, _ = fmt.read_magic(fh)
            read = fmt.read_array_header_1_0 if major == 1 else fmt.read_array_header_2_0
            shape, fortran, dtype = read(fh)
        except ValueError as exc:
            raise MappedError(f"its .npy header is not readable ({exc})") from exc
        offset = fh.tell()
    if dtype.hasobject:
        raise MappedError("it holds Python objects (dtype object)")
    need = math.prod(int(s) for s in shape) * dtype.itemsize
    have = info.file_size - (offset - start)
    if have != need or offset + need > os.path.getsize(path):
        raise MappedError(f"the header gives {need} bytes of data, the member holds {have}")
    if need == 0:
        return np.zeros(shape, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=tuple(shape),
                     order="F" if fortran else "C")
