"""Reading a ``.npz`` (``allow_pickle=False``; large stored members mapped, ``mapped``) or a ``.pt``
(``weights_only=True``) into named tensors, and refusing one that does not fit in memory from its headers.

Part of the data code that ``revstudio export --with-training`` copies verbatim into the exported script
(with ``mapped``, ``data_checks`` and ``sources``, which re-exports these names): stdlib, numpy and torch
only, imported inside functions.
"""
from __future__ import annotations

import math
import os
import re
import zipfile
from typing import Any

from .data_checks import DataError, _fmt
from .mapped import Mapped, MappedError, map_above, map_member, native, npz_members

_KINDS = {"b": "bool", "i": "int", "u": "unsigned int", "f": "float"}


def load_arrays(path: str) -> dict[str, Any]:
    """The named tensors of a ``.npz`` (no pickles) or ``.pt`` (``weights_only``) file."""
    import torch

    if not os.path.isfile(path):
        raise DataError(f"{path}: no such file")
    if path.lower().endswith(".npz"):
        try:
            import numpy as np
        except ImportError as exc:
            raise DataError(f"{path}: reading .npz needs numpy (pip install numpy), or save the arrays "
                            "with torch.save as a .pt") from exc
        if not zipfile.is_zipfile(path):  # (numpy would take it for a pickle and suggest allow_pickle)
            raise DataError(f"{path}: not a .npz archive (numpy.savez writes a zip of arrays; this file is not "
                            "one, or is cut short); save the arrays with numpy.savez(path, x=..., y=...)")
        out: dict[str, Any] = {}
        try:
            check_npz_size(path)
            members = npz_members(path)
            with np.load(path, allow_pickle=False) as npz:
                for name in npz.files:
                    if members.get(name, (None, False))[1]:  # (a large stored member: mapped, read as used)
                        out[name] = _mapped(path, name, members[name][0])
                        continue
                    try:
                        arr = npz[name]
                    except MemoryError as exc:
                        raise DataError(f"{path}: array {name!r} does not fit in memory; {_TOO_BIG}") from exc
                    except ValueError as exc:
                        if "allow_pickle" in str(exc):  # object arrays need pickle
                            raise DataError(f"{path}: array {name!r} holds Python objects (dtype object), "
                                            "which are not loaded (that would unpickle); save numbers") from exc
                        raise DataError(f"{path}: array {name!r} is cut short or corrupt ({exc}); save it "
                                        "again with numpy.savez") from exc
                    if arr.dtype.kind not in _KINDS:
                        names = ("; for class names, numpy.unique(y, return_inverse=True)[1] gives class indices "
                                 "0..K-1 to save as 'y'") if name == "y" and arr.dtype.kind in "US" else ""
                        raise DataError(f"{path}: array {name!r} has dtype {arr.dtype} ({arr.dtype.kind!r}); "
                                        f"expected numbers (float, int or bool){names}")
                    out[name] = torch.from_numpy(native(arr))  # (a big-endian array: in this machine's order)
        except DataError:
            raise
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
            raise DataError(f"{path}: not a readable .npz file ({exc})") from exc
        return out
    if os.path.getsize(path) == 0:
        raise DataError(f"{path}: an empty file; save a dict of tensors, e.g. torch.save({{'x': x, 'y': y}}, path)")
    memory = _memory_bytes()
    obj = _load_mapped_pt(path) if map_above(os.path.getsize(path)) else None
    if obj is not None:  # (the tensors' bytes stay in the file; large ones are read as used)
        _check_pt(path, obj)
        return {name: _mapped_pt(value) for name, value in obj.items()}
    if memory and os.path.getsize(path) > memory:
        raise DataError(f"{path}: {os.path.getsize(path) / 2**30:.1f} GiB, more than this machine's "
                        f"{memory / 2**30:.1f} GiB of memory; "
                        f"{_TOO_BIG if zipfile.is_zipfile(path) else _TOO_BIG_PT}")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except MemoryError as exc:
        raise DataError(f"{path}: does not fit in memory; {_TOO_BIG}") from exc
    except Exception as exc:  # weights_only refuses pickled objects; anything else is a broken file
        raise DataError(f"{path}: cannot be read with torch.load(weights_only=True): {_load_failure(exc)}; "
                        "save a dict of tensors, e.g. torch.save({'x': x, 'y': y}, path)") from exc
    _check_pt(path, obj)
    return dict(obj)


def _load_mapped_pt(path: str) -> Any:
    """The objects of a large ``.pt`` loaded with ``torch.load(..., mmap=True)``: each tensor's bytes are
    mapped from the file, read as they are used; None for a file torch cannot map (saved in the legacy
    format, ``torch.save(..., _use_new_zipfile_serialization=False)``, or a torch before 2.1), which is
    read whole."""
    import torch

    if not zipfile.is_zipfile(path):  # (the legacy format: torch.load(mmap=True) refuses it)
        return None
    try:
        return torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except TypeError:  # (a torch before 2.1 has no mmap)
        return None
    except Exception as exc:  # weights_only refuses pickled objects; anything else is a broken file
        raise DataError(f"{path}: cannot be read with torch.load(weights_only=True): {_load_failure(exc)}; "
                        "save a dict of tensors, e.g. torch.save({'x': x, 'y': y}, path)") from exc


def _mapped_pt(t: Any) -> Any:
    """A tensor of a mapped ``.pt`` over ``MAP_ABOVE`` bytes as a :class:`Mapped` of its numpy view (a number
    type numpy has: not bfloat16, which stays a tensor whose checks read it whole), else the tensor."""
    import torch

    if not map_above(t.numel() * t.element_size()) or t.dtype == torch.bfloat16 or t.dim() < 1:
        return t
    return Mapped(t.detach().numpy())


def _check_pt(path: str, obj: Any) -> None:
    """Refuse what a ``.pt`` holds unless it is a dict of dense tensors of real numbers by name."""
    import torch

    if not isinstance(obj, dict) or not all(isinstance(k, str) for k in obj):
        raise DataError(f"{path}: holds a {type(obj).__name__}; expected a dict of tensors such as "
                        "{'x': inputs, 'y': targets}")
    for name, value in obj.items():
        if not isinstance(value, torch.Tensor):
            raise DataError(f"{path}: entry {name!r} is a {type(value).__name__}, expected a tensor")
        if value.layout != torch.strided:
            raise DataError(f"{path}: tensor {name!r} is a {str(value.layout).replace('torch.', '')} tensor; "
                            "save it dense (tensor.to_dense())")
        if value.is_complex() or value.dtype in (torch.quint8, torch.qint8, torch.qint32):
            raise DataError(f"{path}: tensor {name!r} has dtype {value.dtype}; expected float, int or bool")


def _mapped(path: str, name: str, info: Any) -> Mapped:
    """Array ``name`` of a .npz mapped from its stored member (``mapped.map_member``), refused like one
    read whole where it is cut short, holds objects or is no array of numbers."""
    try:
        array = map_member(path, info)
    except MappedError as exc:
        if "objects" in str(exc):
            raise DataError(f"{path}: array {name!r} holds Python objects (dtype object), which are not loaded "
                            "(that would unpickle); save numbers") from exc
        raise DataError(f"{path}: array {name!r} is cut short or corrupt ({exc}); save it again with "
                        "numpy.savez") from exc
    if array.dtype.kind not in _KINDS:
        raise DataError(f"{path}: array {name!r} has dtype {array.dtype} ({array.dtype.kind!r}); expected numbers "
                        "(float, int or bool)")
    return Mapped(array)


_TOO_BIG_PT = ("a .pt saved in the legacy format (torch.save(..., _use_new_zipfile_serialization=False)) is read "
               "whole: save it again with torch.save's default format to train it without reading it whole, or "
               "train on a part of it or on a machine with more memory")
_TOO_BIG = ("a run loads its data whole: train on a part of it (numpy.savez(path, x=x[:n], y=y[:n])) or on a "
            "machine with more memory")


def _memory_bytes() -> int | None:
    """This machine's physical memory, or None where the system does not say."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def check_npz_size(path: str) -> None:
    """Refuse, from the arrays' headers, a ``.npz`` whose arrays read whole (compressed members, small
    ones and the targets ``y``; large stored ones are mapped, ``mapped.npz_members``) hold more bytes
    than the machine has memory, before numpy tries to allocate them (a MemoryError, or the system
    killing the run)."""
    import numpy as np

    memory = _memory_bytes()
    if not memory:
        return
    arrays = []
    with zipfile.ZipFile(path) as zf:
        for name, (info, mapped) in npz_members(path).items():
            if mapped:
                continue
            with zf.open(info) as fh:
                major, _ = np.lib.format.read_magic(fh)
                read = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
                shape, _, dtype = read(fh)
            arrays.append((math.prod(int(s) for s in shape) * dtype.itemsize, name, shape, dtype,
                           info.compress_type != zipfile.ZIP_STORED))
    total = sum(a[0] for a in arrays)
    if total > memory:
        _, name, shape, dtype, deflated = max(arrays, key=lambda a: a[0])
        fix = (f"{path} is compressed (numpy.savez_compressed), which is read whole: save it with numpy.savez "
               "(uncompressed) to train it without reading it whole, or " + _TOO_BIG.split(": ", 1)[1]
               if deflated else _TOO_BIG)
        raise DataError(f"{path}: the arrays hold {total / 2**30:.1f} GiB ({name!r} is {_fmt(shape)} {dtype}), "
                        f"more than this machine's {memory / 2**30:.1f} GiB of memory; {fix}")


def _load_failure(exc: BaseException) -> str:
    """Why torch.load refused a file, in one line: the object it would not unpickle, or torch's
    first sentence. Never torch's advice to load with weights_only=False, which runs the file's code."""
    text = str(exc)
    found = re.search(r"Unsupported global: GLOBAL ([\w.]+)", text)
    if found:
        kind = " (numpy arrays: convert them with torch.from_numpy)" if found.group(1).startswith("numpy") else ""
        return f"it holds objects other than tensors ({found.group(1)}){kind}"
    first = text.splitlines()[0].split(". ")[0].rstrip(".") if text.strip() else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
