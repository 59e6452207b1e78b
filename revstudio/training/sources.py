"""Data sources that need only torch (numpy only for .npz): reading, generating, checking.

This file is the data half of training twice over: ``revstudio.training.data``
calls it with facts taken from the graph, and ``revstudio export --with-training``
copies it verbatim into the exported script (``codegen/training.py``), so a run
moved to a user's cluster reads the same files, generates the same synthetic
data for the same seed and refuses the same bad data. Keep it self-contained:
stdlib and torch (imported inside functions, so previews stay torch-free), no
revstudio imports but its copied siblings (``synthetic``; ``data_checks``, which checks the
arrays against the graph; ``arrays``, which reads a .npz / .pt), nothing that reaches outside its arguments.

Formats: ``FILE.npz`` (``allow_pickle=False``) / ``FILE.pt`` (``weights_only=True``)
with arrays ``x`` (or one per Input node id) and ``y``; ``mnist:DIR`` (IDX files,
plain or .gz, any image size); ``cifar10:DIR`` (the binary batches); ``synthetic``.
"""
from __future__ import annotations

import gzip
import math
import os
import struct
import zipfile
from typing import Any

from .arrays import _TOO_BIG, _load_failure, _memory_bytes, check_npz_size, load_arrays  # noqa: F401
from .data_checks import (  # noqa: F401
    DataError,
    _fmt,
    check_inputs,
    check_targets,
    data_digest,
    flow_levels,
    inputs_note,
    label_dtype,
    label_fit,
    layout_hint,
    looks_like_pixels,
    one_pass,
    scale_bytes,
    shape_advice,
    unread_arrays,
)
from .mapped import Mapped, reading_note
from .steps import PADDING_NAMES, per_step_targets
from .synthetic import synthetic

MNIST_NAMES = {
    "train_x": ("train-images-idx3-ubyte", "train-images.idx3-ubyte"),
    "train_y": ("train-labels-idx1-ubyte", "train-labels.idx1-ubyte"),
    "val_x": ("t10k-images-idx3-ubyte", "t10k-images.idx3-ubyte"),
    "val_y": ("t10k-labels-idx1-ubyte", "t10k-labels.idx1-ubyte"),
}
CIFAR_RECORD = 1 + 3 * 32 * 32


def parse_spec(spec: str) -> tuple[str, str]:
    """``(kind, path)`` of a data spec: synthetic, npz, pt, mnist, cifar10."""
    text = str(spec).strip()
    if text == "synthetic":
        return "synthetic", ""
    for kind in ("mnist", "cifar10"):
        if text.startswith(kind + ":"):
            path = text[len(kind) + 1:]
            if not path:
                raise DataError(f"data {text!r} names no folder; write {kind}:DIR")
            return kind, path
    lower = text.lower()
    if lower.endswith(".npz"):
        return "npz", text
    if lower.endswith((".pt", ".pth")):
        return "pt", text
    suffix = os.path.splitext(lower)[1]
    hint = {".npy": "; a .npy holds one array: save inputs and targets together, numpy.savez('d.npz', "
                    "x=numpy.load('x.npy'), y=numpy.load('y.npy'))",
            ".csv": "; read a table with numpy.loadtxt(path, delimiter=...) and save the inputs and targets "
                    "with numpy.savez('d.npz', x=..., y=...)"}.get(".csv" if suffix in (".tsv", ".txt") else suffix)
    if hint is None and not suffix:
        hint = ("; a folder of image files is not read: load them into one N x C x H x W array and save it with "
                "numpy.savez('d.npz', x=..., y=labels) (an MNIST or CIFAR-10 folder: mnist:DIR, cifar10:DIR)")
    raise DataError(f"data {text!r} is not a known source; use synthetic, FILE.npz, FILE.pt, mnist:DIR or "
                    f"cifar10:DIR{hint or ''}")


def resolve(path: str, base_dir: str | None) -> str:
    """A relative path resolves against the project's folder (``base_dir``) when one is given."""
    path = os.path.expanduser(path)
    if base_dir and not os.path.isabs(path):
        path = os.path.join(base_dir, path)
    return path


# ---- IDX (MNIST) ---------------------------------------------------------------------------

def _read_bytes(path: str) -> bytes:
    try:
        if path.endswith(".gz"):
            with gzip.open(path, "rb") as fh:
                return fh.read()
        with open(path, "rb") as fh:
            return fh.read()
    except (EOFError, gzip.BadGzipFile, zipfile.BadZipFile) as exc:
        raise DataError(f"{path}: not a readable gzip file ({exc}); the download may be truncated") from exc
    except OSError as exc:
        raise DataError(f"{path}: cannot be read ({exc.strerror or exc})") from exc


def read_idx_header(data: bytes, path: str) -> tuple[list[int], int]:
    """The dimensions of an unsigned-byte IDX file and where its data starts."""
    if len(data) < 4:
        raise DataError(f"{path}: {len(data)} bytes is too short for an IDX file (4-byte magic number first)")
    if data[0] != 0 or data[1] != 0 or data[2] != 0x08 or not 1 <= data[3] <= 4:
        raise DataError(f"{path}: bad magic number {data[:4].hex()} (expected 000008 followed by the number "
                        "of dimensions, e.g. 00000803 for images); not an unsigned-byte IDX file")
    ndim = data[3]
    start = 4 + 4 * ndim
    if len(data) < start:
        raise DataError(f"{path}: truncated header ({len(data)} bytes, the {ndim} dimensions need {start})")
    dims = list(struct.unpack(">" + "I" * ndim, data[4:start]))
    return dims, start


def read_idx(path: str) -> Any:
    """An IDX file of unsigned bytes as a uint8 tensor of the header's shape."""
    import torch

    data = _read_bytes(path)
    dims, start = read_idx_header(data, path)
    need = math.prod(dims)
    found = len(data) - start
    if found != need:
        what = "truncated" if found < need else "corrupt"
        raise DataError(f"{path}: {what}: the header gives {_fmt(dims)} = {need} bytes of data, the file has "
                        f"{found}")
    return torch.frombuffer(bytearray(data[start:]), dtype=torch.uint8).reshape(dims)


def find_file(folder: str, names: tuple[str, ...]) -> str | None:
    for name in names:
        for candidate in (name, name + ".gz"):
            path = os.path.join(folder, candidate)
            if os.path.isfile(path):
                return path
    return None


def load_mnist(folder: str) -> tuple[tuple[Any, Any], tuple[Any, Any] | None]:
    """``((x, y), (x_val, y_val) or None)`` of an MNIST-layout folder: images scaled to [0, 1],
    a channel axis added (N x 1 x H x W), labels int64; the t10k files are the validation set."""
    import torch

    if not os.path.isdir(folder):
        raise DataError(f"mnist:{folder}: no such folder")
    parts: list[tuple[Any, Any] | None] = []
    for split in ("train", "val"):
        xs = find_file(folder, MNIST_NAMES[split + "_x"])
        ys = find_file(folder, MNIST_NAMES[split + "_y"])
        if split == "train" and (xs is None or ys is None):
            missing = MNIST_NAMES["train_x"][0] if xs is None else MNIST_NAMES["train_y"][0]
            raise DataError(f"mnist:{folder}: {missing} (or .gz) is missing; the folder needs "
                            "train-images-idx3-ubyte and train-labels-idx1-ubyte, plain or gzipped")
        if xs is None or ys is None:
            parts.append(None)
            continue
        images, labels = read_idx(xs), read_idx(ys)
        if images.dim() != 3:
            raise DataError(f"{xs}: an image file has 3 dimensions (N, H, W); this one has {_fmt(images.shape)}")
        if labels.dim() != 1:
            raise DataError(f"{ys}: a label file has 1 dimension (N); this one has {_fmt(labels.shape)}")
        if len(images) != len(labels):
            raise DataError(f"{xs} holds {len(images)} images but {ys} holds {len(labels)} labels")
        parts.append((images.unsqueeze(1).to(torch.float32).div_(255.0), labels.to(torch.int64)))
    assert parts[0] is not None
    return parts[0], parts[1]


# ---- CIFAR-10 (binary version) ---------------------------------------------------------------

def read_cifar_batch(path: str) -> tuple[Any, Any]:
    import torch

    data = _read_bytes(path)
    if not data or len(data) % CIFAR_RECORD:
        raise DataError(f"{path}: truncated or corrupt: {len(data)} bytes is not a whole number of "
                        f"{CIFAR_RECORD}-byte records (1 label byte + 3072 image bytes)")
    records = torch.frombuffer(bytearray(data), dtype=torch.uint8).reshape(-1, CIFAR_RECORD)
    labels = records[:, 0].to(torch.int64)
    bad = (labels > 9).nonzero()
    if len(bad):
        i = int(bad[0])
        raise DataError(f"{path}: corrupt: record {i} has label byte {int(labels[i])}, a CIFAR-10 class is 0-9")
    images = records[:, 1:].reshape(-1, 3, 32, 32).to(torch.float32).div_(255.0)  # in place: 600 MB for all 5
    return images, labels


def load_cifar10(folder: str) -> tuple[tuple[Any, Any], tuple[Any, Any] | None]:
    """``((x, y), (x_val, y_val) or None)``: data_batch_1..5.bin, test_batch.bin as validation."""
    import torch

    if os.path.isdir(os.path.join(folder, "cifar-10-batches-bin")):
        folder = os.path.join(folder, "cifar-10-batches-bin")
    if not os.path.isdir(folder):
        raise DataError(f"cifar10:{folder}: no such folder")
    paths = [os.path.join(folder, f"data_batch_{i}.bin") for i in range(1, 6)]
    present = [p for p in paths if os.path.isfile(p)]
    if not present:
        raise DataError(f"cifar10:{folder}: no data_batch_1.bin .. data_batch_5.bin (the binary version of "
                        "CIFAR-10, cifar-10-binary.tar.gz, unpacked)")
    batches = [read_cifar_batch(p) for p in present]
    train = (torch.cat([b[0] for b in batches]), torch.cat([b[1] for b in batches]))
    test = os.path.join(folder, "test_batch.bin")
    return train, read_cifar_batch(test) if os.path.isfile(test) else None


def pick_arrays(arrays: dict[str, Any], input_ids: list[str], source: str) -> tuple[dict[str, Any], Any]:
    """The input arrays by Input node id (``x`` for a single Input) and the targets ``y`` (or None)."""
    found = ", ".join(sorted(arrays)) or "nothing"
    inputs: dict[str, Any] = {}
    for node in input_ids:
        if len(input_ids) == 1 and "x" in arrays:
            inputs[node] = arrays["x"]
        elif node in arrays:
            inputs[node] = arrays[node]
        else:
            want = "'x' (the inputs, N first)" if len(input_ids) == 1 else (
                f"{node!r} (the inputs of Input node {node!r}, N first; one array per Input node)")
            name = "x" if len(input_ids) == 1 else node
            raise DataError(f"{source}: missing array {want}; found {found}; save the inputs under that name, "
                            f"e.g. {_save_example(source, {name: 'inputs', 'y': 'targets'})}")
    return inputs, arrays.get("y")


def _save_example(source: str, names: dict[str, str]) -> str:
    """``numpy.savez(path, x=inputs, y=targets)`` (or the ``torch.save`` of a ``.pt``)."""
    if source.lower().endswith(".npz"):
        if all(n.isidentifier() for n in names):
            return "numpy.savez(path, " + ", ".join(f"{n}={v}" for n, v in names.items()) + ")"
        return "numpy.savez(path, **{" + ", ".join(f"{n!r}: {v}" for n, v in names.items()) + "})"
    return "torch.save({" + ", ".join(f"{n!r}: {v}" for n, v in names.items()) + "}, path)"


def split_indices(count: int, fraction: float, seed: int) -> tuple[Any, Any]:
    """``(train, val)`` sample indices, both sorted: ``round(count * fraction)`` samples held out,
    chosen by a permutation fixed by the seed (at least one on each side when both exist)."""
    import torch

    n_val = int(count * fraction + 0.5) if fraction > 0 else 0
    if fraction > 0 and count >= 2:
        n_val = min(max(n_val, 1), count - 1)
    perm = torch.randperm(count, generator=torch.Generator().manual_seed(int(seed)))
    val, _ = perm[:n_val].sort()
    train, _ = perm[n_val:].sort()
    return train, val


def _take(t: Any, index: Any) -> Any:
    """The samples of ``t`` at ``index``: a mapped array stays mapped (only the positions are kept)."""
    return t.take(index.numpy()) if isinstance(t, Mapped) else t[index]


def mapped_names(inputs: dict[str, Any], targets: Any = None) -> list[str]:
    """The arrays that are mapped, read as used (``mapped.Mapped``), as the file names them: ``x`` (or the
    Input node ids of several) and ``y``."""
    names = [("x" if len(inputs) == 1 else n) for n, t in inputs.items() if isinstance(t, Mapped)]
    return names + (["y"] if isinstance(targets, Mapped) else [])


# ---- a whole source: read, check, split -------------------------------------------------------

def read_source(spec: str, specs: dict[str, tuple[tuple[int, ...], str]], *, kind: str,
                num_classes: int | None, out_shape: tuple[int, ...], seed: int, base_dir: str | None,
                sequence: bool, unread: list[Any],
                padding: dict[str, Any] | None = None) -> tuple[dict[str, Any], Any, tuple[Any, Any] | None, str]:
    """``(inputs, targets, own validation (x, y) or None, source name)``, unchecked (``unread``: load_splits');
    ``padding`` receives a .npz / .pt's ``lengths`` and ``mask`` (read by per-step class labels only)."""
    source_kind, path = parse_spec(spec)
    if source_kind == "synthetic":
        inputs, targets = synthetic(specs, kind=kind, num_classes=num_classes, out_shape=out_shape,
                                    seed=seed, sequence=sequence)
        return inputs, targets, None, "synthetic"
    full = resolve(path, base_dir)
    if source_kind in ("npz", "pt"):
        arrays = load_arrays(full)
        inputs, targets = pick_arrays(arrays, list(specs), full)
        unread.append((os.path.basename(full), unread_arrays(arrays, inputs)))
        if padding is not None:
            padding.update({n: arrays[n] for n in PADDING_NAMES if n in arrays})
        others = sorted(set(arrays) - {"x", *specs})
        if targets is None and kind != "flow" and others:  # (the targets under another name: say which is 'y')
            raise DataError(f"{full}: missing array 'y' (the targets: int64 class indices or float values), which a "
                            f"{kind} task needs; found {', '.join(sorted(arrays))}; save the targets as 'y', e.g. "
                            + _save_example(full, {"x" if len(specs) == 1 else next(iter(specs)): "inputs",
                                                   "y": others[0]}))
        return inputs, targets, None, full
    if len(specs) != 1:
        raise DataError(f"{source_kind}:{path} feeds one Input node, the graph has {len(specs)} "
                        f"({', '.join(specs)}); use a .npz with one array per Input node id")
    loader = load_mnist if source_kind == "mnist" else load_cifar10
    (x, y), val = loader(full)
    return {next(iter(specs)): x}, y, val, f"{source_kind}:{full}"


def load_splits(spec: str, specs: dict[str, tuple[tuple[int, ...], str]], *, kind: str,
                num_classes: int | None, output_id: str, head_id: str | None, out_shape: tuple[int, ...],
                auto: bool = False, val_spec: str | None = None, val_fraction: float = 0.1, seed: int = 0,
                base_dir: str | None = None, sequence: bool = False, scale_uint8: bool = True,
                facts: dict[str, Any] | None = None) -> tuple[Any, Any, str]:
    """``((inputs, targets), (val inputs, val targets) or None, kind)``, checked against the graph.

    Validation: ``val_spec`` if given, else the source's own (MNIST t10k, CIFAR test_batch),
    else ``val_fraction`` of the samples held out by a permutation fixed by ``seed``.
    ``kind`` comes back as given unless ``auto`` let float targets turn classification
    into regression. uint8 input arrays are scaled to [0, 1] unless ``scale_uint8`` is False
    (``scale_bytes``). ``facts``, when given, receives ``uint8``: the Input node ids fed uint8
    arrays, ``scaled``: whether they were scaled, ``levels``: a flow's dequantisation levels
    (``flow_levels``), ``pixels``: (node id, dtype) of training inputs in another number type that
    hold 0..255 whole numbers, left as they are (``looks_like_pixels``), ``digest``: the data digest where
    mapped arrays made it in the one pass that checks them (``one_pass``; else None), ``mapped``: the arrays mapped from the
    training file, ``reading``: the start's words on how it is read (``mapped.reading_note``), ``unread``: (file,
    arrays no run reads)."""
    if not 0.0 <= float(val_fraction) < 1.0:
        raise DataError(f"val_fraction {val_fraction} must be at least 0 and below 1")
    uint8: list[str] = []
    eight_bit: list[bool] = []
    pixels: list[tuple[str, str]] = []  # (Input node id, dtype) of 0..255 whole numbers left as they are
    unread: list[tuple[str, list[str]]] = []  # (file name, arrays not read), said at the start
    later: list[tuple[str, str, Any]] = []  # mapped arrays whose NaN check waits for the digest's pass
    targets_later: list[tuple[Any, Any]] = []  # mapped targets whose range or NaN check waits for it too
    pixels_later: dict[str, Any] = {}  # mapped arrays whose pixel-likeness it finds too

    scored: list[dict[str, Any]] = []  # per-step labels: what each file's labels score (steps.per_step_targets)

    def checked(inputs: dict[str, Any], targets: Any, source: str, kind: str, auto: bool,
                padding: dict[str, Any] | None = None) -> tuple[Any, str]:
        if not eight_bit:  # (the training data: whole numbers 0..255 in another type are named at the start)
            for n, t in inputs.items():
                if source.startswith(("mnist:", "cifar10:")):
                    continue
                if isinstance(t, Mapped) and str(t.dtype) not in ("torch.uint8", "torch.bool", "torch.int8"):
                    pixels_later[n] = t
                elif looks_like_pixels(t):
                    pixels.append((n, str(t.dtype).replace("torch.", "")))
        inputs, found = scale_bytes(inputs, scale_uint8)
        uint8.extend(n for n in found if n not in uint8)
        eight_bit.append(source.startswith(("mnist:", "cifar10:"))
                         or (scale_uint8 and len(found) == len(specs)))
        inputs = check_inputs(inputs, specs, source, later)
        count = len(next(iter(inputs.values())))
        fit = None if targets is None else label_fit(kind, out_shape, tuple(targets.shape[1:]), label_dtype(targets),
                                                     auto=auto, output_id=output_id, head=head_id)
        if fit is not None and fit.per_position:
            targets, fact = per_step_targets(targets, count, num_classes=num_classes, out_shape=out_shape,
                                             output_id=output_id, head=head_id or output_id, source=source,
                                             padding=padding)
            scored.append(fact)
            for i, (name, names) in enumerate(unread):  # (lengths and mask are read: no longer "not read")
                if name == os.path.basename(source):
                    unread[i] = (name, [n for n in names if n not in fact["padding"]])
            return (inputs, targets), "classification"
        targets, kind = check_targets(targets, count, kind=kind, num_classes=num_classes, output_id=output_id,
                                      head_id=head_id, out_shape=out_shape, source=source, auto=auto,
                                      later=targets_later)
        return (inputs, targets), kind

    padding: dict[str, Any] = {}
    inputs, targets, own_val, source = read_source(spec, specs, kind=kind, num_classes=num_classes,
                                                   out_shape=out_shape, seed=seed, base_dir=base_dir,
                                                   sequence=sequence, unread=unread, padding=padding)
    train, kind = checked(inputs, targets, source, kind, auto, padding)
    val = None
    if val_spec:
        v_padding: dict[str, Any] = {}
        v_inputs, v_targets, _, v_source = read_source(val_spec, specs, kind=kind, num_classes=num_classes,
                                                       out_shape=out_shape, seed=seed + 1, base_dir=base_dir,
                                                       sequence=sequence, unread=unread, padding=v_padding)
        val, _ = checked(v_inputs, v_targets, v_source, kind, False, v_padding)
    elif own_val is not None:
        val, _ = checked({next(iter(specs)): own_val[0]}, own_val[1], source + " (validation files)", kind, False)
    else:
        count = len(next(iter(train[0].values())))
        if val_fraction > 0 and count >= 2:
            train_idx, val_idx = split_indices(count, float(val_fraction), seed)
            val = ({k: _take(v, val_idx) for k, v in train[0].items()},
                   None if train[1] is None else _take(train[1], val_idx))
            train = ({k: _take(v, train_idx) for k, v in train[0].items()},
                     None if train[1] is None else _take(train[1], train_idx))
    digest = None
    if later or pixels_later or targets_later:  # (mapped arrays: one read serves the checks, the note and the digest)
        digest, looking = one_pass([train, val], later, pixels_later, targets_later)
        pixels.extend((n, str(pixels_later[n].dtype).replace("torch.", "")) for n in looking)
        pixels.sort(key=lambda p: list(specs).index(p[0]))
    if facts is not None:
        facts.update(digest=digest, uint8=uint8, scaled=bool(uint8) and scale_uint8, levels=flow_levels(eight_bit),
                     pixels=pixels, mapped=mapped_names(*train), reading=reading_note(mapped_names(*train), source),
                     unread=unread, scored=scored)
    return train, val, kind
