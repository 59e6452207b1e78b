"""The data of a training run: a spec (``synthetic``, ``FILE.npz``, ``FILE.pt``, ``mnist:DIR``,
``cifar10:DIR``) read, checked against the graph and split into train / validation.

``load_data`` takes the facts it needs from the graph and its check report (the
Input nodes' shapes and dtypes, the Output and head the loss reads) and hands them
to ``sources`` / ``synthetic``, the torch-only code an exported training script
carries too. Everything that does not fit is refused *before* training with a
:class:`DataError` naming the file, array or node. ``peek_data`` is the cheap
preview the run-settings dialog shows; it imports no torch except for ``.pt``.
"""
from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from revstudio.core.data_paths import DATA_KEYS, MAX_UP, absolute_spec, portable_spec

from . import mapped, sources
from .data_hints import found_here, from_here_hint, nowhere_hint
from .sources import DataError, parse_spec, resolve
from .task import TaskInfo, find_type, infer_task, input_nodes

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["DATA_KEYS", "MAX_UP", "DataBundle", "DataError", "Split", "TaskInfo", "absolute_spec", "infer_task",
           "data_problem", "found_here", "from_here_hint", "input_specs", "load_data", "nowhere_hint", "peek_data",
           "portable_spec"]



@dataclass
class Split:
    """Tensors on the CPU, N first: inputs by Input node id, targets (or None for a flow)."""

    inputs: dict[str, Tensor]
    targets: Tensor | None

    def __len__(self) -> int:
        return len(next(iter(self.inputs.values())))

    def batch(self, index: Tensor) -> tuple[dict[str, Tensor], Tensor | None]:
        return ({k: v[index] for k, v in self.inputs.items()},
                None if self.targets is None else self.targets[index])

    def subset(self, index: Tensor) -> Split:
        inputs, targets = self.batch(index)
        return Split(inputs, targets)


@dataclass
class DataBundle:
    """What a run trains and validates on, with the task the data resolved."""

    train: Split
    val: Split | None
    task: TaskInfo
    source: str
    levels: int | None = None  # a flow's 8-bit images: dequantised to this many levels (sources.flow_levels)
    uint8: list[str] = dataclasses.field(default_factory=list)  # Input node ids fed uint8 arrays (.npz / .pt)
    scaled: bool = True  # whether those were scaled to [0, 1] (training.scale_uint8)

    pixels: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # 0..255 whole numbers, not uint8
    reading: str = ""  # how a large file is read: "x mapped (read as used)", "read whole" (else "")
    unread: list[tuple[str, list[str]]] = dataclasses.field(default_factory=list)  # (file, arrays not read)
    digest: str | None = None  # sources.data_digest, where the one pass over mapped arrays made it already
    scored: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # per-step labels (steps.per_step_targets)

    def inputs_note(self) -> str | None:
        """``inputs: uint8 scaled to [0, 1] ...`` where a .npz / .pt fed uint8 inputs (or kept raw), and
        what looks like 8-bit pixels in another number type, left as it is, and the arrays of a .npz / .pt
        no run reads (a sequence's lengths or mask); else None: the run's start says what became of them,
        never silently."""
        return sources.inputs_note(self.uint8, self.scaled, self.pixels, len(self.train.inputs), self.unread,
                                   self.scored)

    def describe(self) -> str:
        """One line: ``digits.npz: 1617 train / 180 val, x 1x8x8, 10 classes``."""
        val = f" / {len(self.val)} val" if self.val is not None else ", no validation"
        shapes = ", ".join(f"{'x' if len(self.train.inputs) == 1 else k} "
                           f"{'x'.join(map(str, v.shape[1:]))}" for k, v in self.train.inputs.items())
        if self.task.per_step:
            what = f"{self.task.num_classes} classes per {self.task.unit}"
        elif self.task.kind == "classification":
            what = f"{self.task.num_classes} classes"
        elif self.task.kind == "flow":
            what = "density (flow" + (f", {self.levels}-level pixels dequantised: bits/dim + "
                                      f"{math.log2(self.levels):g}" if self.levels else "") + ")"
        else:
            what = "regression targets " + "x".join(map(str, self.task.output_shape)) + (
                f" of {self.task.output_id!r} (not a flow: the loss reads one Output)" if self.task.not_flow else "")
        name = self.source if self.source == "synthetic" else os.path.basename(self.source.rstrip("/\\"))
        return f"{name}: {len(self.train)} train{val}, {shapes}, {what}" + (f", {self.reading}" if self.reading else "")


def input_specs(graph: Any, report: Any) -> dict[str, tuple[tuple[int, ...], str]]:
    """``{Input node id: (shape, dtype)}`` in the compiled model's argument order. The dtype is
    the model's (``diagnostics.estimate.input_dtype``): every input is fed in the one number
    type the model computes in."""
    from revstudio.diagnostics.estimate import input_dtype

    dtype = input_dtype(graph)
    out: dict[str, tuple[tuple[int, ...], str]] = {}
    for node_id in input_nodes(graph):
        params = graph.resolved_params(node_id)
        shape = report.shape(f"{node_id}.out") if report is not None else None
        out[node_id] = (tuple(int(s) for s in (shape or params["shape"])), dtype)
    return out


def load_data(spec: str, graph: Any, report: Any, *, task: TaskInfo, val_spec: str | None = None,
              val_fraction: float = 0.1, seed: int = 0, base_dir: str | None = None,
              scale_uint8: bool = True) -> DataBundle:
    """Read ``spec`` (and ``val_spec``), check it against the graph, split off validation.

    Without ``val_spec`` the validation set is the source's own (MNIST t10k, CIFAR
    test_batch) or ``val_fraction`` of the samples held out by a permutation fixed by
    ``seed``. uint8 input arrays are scaled to [0, 1] unless ``scale_uint8`` is False.
    Raises :class:`DataError` before any training on data that does not fit.
    """
    specs = input_specs(graph, report)
    facts: dict[str, Any] = {}
    if not specs:
        raise DataError("the graph has no Input node: training needs one to feed the data into")
    try:
        (inputs, targets), val, kind = sources.load_splits(
            spec, specs, kind=task.kind, num_classes=task.num_classes, output_id=task.output_id,
            head_id=task.head_id, out_shape=task.output_shape, auto=task.requested == "auto", val_spec=val_spec,
            val_fraction=val_fraction, seed=seed, base_dir=base_dir,
            sequence=find_type(graph, ("BiRNN",)) is not None, scale_uint8=scale_uint8, facts=facts)
    except DataError as exc:  # (a multi-scale flow refused for labels it never meant: say why no flow)
        if task.not_flow is None:
            raise
        raise DataError(f"{exc}; {task.not_flow}") from exc
    if kind != task.kind:
        classes = task.output_shape[0] if kind == "classification" else None
        task = dataclasses.replace(task, kind=kind, num_classes=classes)
    return DataBundle(Split(inputs, targets), None if val is None else Split(*val), task,
                      "synthetic" if spec == "synthetic" else str(spec),
                      facts["levels"] if task.kind == "flow" else None, list(facts["uint8"]), bool(scale_uint8),
                      list(facts["pixels"]), facts["reading"], list(facts["unread"]), facts["digest"],
                      list(facts["scored"]))



# ---- the preview of the run-settings dialog (no torch for .npz / mnist / cifar) ------------------

def peek_data(spec: str, base_dir: str | None = None) -> dict[str, Any]:
    """``{"arrays": {name: [shape]}, "classes": int | None, "samples": int}`` read cheaply
    (headers, file sizes, the labels), and for a .npz / .pt ``"uint8"``: the arrays other than
    ``y`` of that type, and ``"y_dtype"``: the labels' number type (what ``task: auto`` makes of them); raises :class:`DataError` like ``load_data``."""
    kind, path = parse_spec(spec)
    if kind == "synthetic":
        return {"arrays": {}, "classes": None, "samples": 0, "kind": "synthetic"}
    full = resolve(path, base_dir)
    if kind == "npz":
        return {**_peek_npz(full), "kind": "npz"}
    if kind == "pt":
        arrays = sources.load_arrays(full)
        shapes = {k: list(v.shape) for k, v in arrays.items()}
        reading = mapped.reading_note([k for k, v in arrays.items() if isinstance(v, mapped.Mapped)], full)
        label_type = {"y_dtype": str(arrays["y"].dtype).replace("torch.", "")} if "y" in arrays else {}
        return {"arrays": shapes, "classes": _classes_torch(arrays.get("y")), "kind": "pt", **label_type,
                **({"reading": reading} if reading else {}),
                "samples": _samples(shapes), "uint8": sorted(k for k, v in arrays.items()
                                                             if k != "y" and str(v.dtype) == "torch.uint8")}
    if kind == "mnist":
        return {**_peek_mnist(full), "kind": "mnist"}
    return {**_peek_cifar(full), "kind": "cifar10"}


def labels_header(spec: Any, base_dir: str | None = None) -> tuple[list[int], str, str] | None:
    """``(shape, dtype, file name)`` of a ``.npz``'s labels ``y``, from its header alone (no torch, nothing
    scanned): what ``task: auto`` will make of them (``task.labels_decide``); None for another source, a
    file without ``y`` or one that cannot be read (the data's own checks say why)."""
    if not isinstance(spec, str):
        return None
    try:
        kind, path = parse_spec(spec)
        if kind != "npz":
            return None
        full = resolve(path, base_dir)
        peeked = _peek_npz(full, labels=False)
    except (DataError, OSError):
        return None
    shape, dtype = peeked["arrays"].get("y"), peeked.get("y_dtype")
    return (shape, dtype, os.path.basename(full)) if shape is not None and dtype else None


def data_problem(spec: Any, input_shapes: dict[str, tuple[int, ...]], base_dir: str | None = None, *,
                 read_pt: bool = False, arrays: dict[str, list[int]] | None = None) -> str | None:
    """The refusal ``train`` would give for a ``.npz`` whose input arrays do not have the Input nodes'
    shapes (``{Input node id: shape}``) or do not fit in memory, read from the headers only; None
    when they fit or when the spec is not a ``.npz`` (the other sources are checked when a run
    reads them). With ``read_pt`` a ``.pt`` is loaded and checked too (the preview's child
    process, which has torch and has loaded it already). ``arrays``: the shapes :func:`peek_data`
    found in this spec, which are then not read again (the preview's child asks both)."""
    if not isinstance(spec, str):
        return None
    try:
        kind, path = parse_spec(spec)
        if kind not in ("npz", "pt") or (kind == "pt" and not read_pt):
            return None
        full = resolve(path, base_dir)
        if arrays is not None:
            shapes = arrays
        elif kind == "pt":
            shapes = {k: list(v.shape) for k, v in sources.load_arrays(full).items()}
        else:
            shapes = _peek_npz(full, labels=False)["arrays"]  # (the shapes only: the labels are not scanned)
        if kind == "npz":
            sources.check_npz_size(full)
        for node, want in input_shapes.items():
            name = "x" if len(input_shapes) == 1 and ("x" in shapes or node not in shapes) else node
            if name not in shapes:
                return (f"{full}: missing array {name!r} (the inputs of Input node {node!r}, N first); found "
                        + (", ".join(sorted(shapes)) or "nothing") + "; save the inputs under that name, e.g. "
                        + sources._save_example(full, {name: "inputs", "y": "targets"}))
            got, want = tuple(shapes[name]), tuple(int(s) for s in want)
            if got[1:] == want or (len(got) == len(want) and want[:1] == (1,) and got[1:] == want[1:]):
                continue
            return (f"{full}: array {name!r} has samples of shape {sources._fmt(got[1:])} (array "
                    f"{sources._fmt(got)}), Input node {node!r} expects {sources._fmt(want)} (an N x "
                    f"{sources._fmt(want)} array)" + sources.shape_advice(got, want, name, node))
    except DataError as exc:
        return str(exc)
    return None


def _samples(shapes: dict[str, list[int]]) -> int:
    for name in ("x", *shapes):
        if shapes.get(name):
            return int(shapes[name][0])
    return 0


def _peek_npz(path: str, labels: bool = True) -> dict[str, Any]:
    """What :func:`peek_data` says of a .npz, from its headers; with ``labels`` the classes too, a scan of
    ``y`` (:func:`_label_classes`), else ``"classes"`` is None."""
    import zipfile

    import numpy as np

    if not os.path.isfile(path):
        raise DataError(f"{path}: no such file")
    shapes: dict[str, list[int]] = {}
    uint8: list[str] = []  # (inputs a run scales to [0, 1] unless training.scale_uint8 is false)
    classes = None
    label_type = None  # (y's number type from its header: what task auto will make of it)
    try:
        with zipfile.ZipFile(path) as zf:
            for member in zf.namelist():
                if not member.endswith(".npy"):
                    continue
                with zf.open(member) as fh:
                    fmt = np.lib.format
                    major, _ = fmt.read_magic(fh)
                    read = fmt.read_array_header_1_0 if major == 1 else fmt.read_array_header_2_0
                    shape, _, dtype = read(fh)
                name = member[:-4]
                if dtype.kind not in "biuf":
                    names = ("; for class names, numpy.unique(y, return_inverse=True)[1] gives class indices "
                             "0..K-1 to save as 'y'") if name == "y" and dtype.kind in "US" else ""
                    raise DataError(f"{path}: array {name!r} has dtype {dtype}; expected numbers (float, int "
                                    f"or bool){names}")
                shapes[name] = [int(s) for s in shape]
                if name == "y":
                    label_type = str(dtype)
                if dtype == np.uint8 and name != "y":
                    uint8.append(name)
        members = mapped.npz_members(path)
        if labels and "y" in shapes:
            classes = _label_classes(path, members["y"][0])
    except DataError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise DataError(f"{path}: not a readable .npz file ({exc})") from exc
    held = [n for n, (_, m) in members.items() if m and n in shapes]
    reading = mapped.reading_note(held, path)
    return {"arrays": shapes, "classes": classes, "samples": _samples(shapes), "uint8": uint8,
            **({"reading": reading} if reading else {}), **({"y_dtype": label_type} if label_type else {})}


def _label_classes(path: str, info: Any) -> int | None:
    """How many classes the labels ``y`` of a .npz name: K for one-hot rows (``sources._one_hot``), the
    largest index + 1 for integers, else None; a stored member is mapped and read a chunk at a time."""
    import zipfile

    import numpy as np

    if info.compress_type == zipfile.ZIP_STORED:
        try:
            y = mapped.map_member(path, info)
        except mapped.MappedError as exc:
            raise DataError(f"{path}: array 'y' is cut short or corrupt ({exc}); save it again with "
                            "numpy.savez") from exc
    else:
        with np.load(path, allow_pickle=False) as npz:
            y = npz["y"]
    if not y.size or (y.dtype.kind not in "iu" and not (y.ndim == 2 and y.shape[1] > 1)):
        return None
    step = max(1, mapped.CHUNK_BYTES // max(1, y[:1].nbytes))
    one_hot, high = y.ndim == 2 and y.shape[1] > 1, None
    for start in range(0, len(y), step):
        part = np.asarray(y[start:start + step])
        one_hot = one_hot and bool(np.isin(part, (0, 1)).all()) and bool((part.sum(axis=1) == 1).all())
        if y.dtype.kind in "iu":
            high = max(int(part.max()), -1 if high is None else high)
    if one_hot:
        return int(y.shape[1])
    return None if high is None else high + 1


def _classes_torch(y: Any) -> int | None:
    if isinstance(y, mapped.Mapped):  # (a large .pt's labels, mapped: a chunk at a time)
        if y.array.dtype.kind not in "biu" or not y.array.size:
            return None
        return max(int(part.max()) for _, part in y.chunks()) + 1
    if y is None or y.is_floating_point() or y.numel() == 0:
        return None
    return int(y.max()) + 1


def _peek_idx(path: str, *, labels: bool) -> tuple[list[int], int | None]:
    data = sources._read_bytes(path)
    dims, start = sources.read_idx_header(data, path)
    need = 1
    for d in dims:
        need *= d
    if len(data) - start != need:
        raise DataError(f"{path}: truncated or corrupt: the header gives {need} bytes of data, the file has "
                        f"{len(data) - start}")
    classes = (max(data[start:]) + 1) if labels and need else None
    return dims, classes


def _peek_mnist(folder: str) -> dict[str, Any]:
    if not os.path.isdir(folder):
        raise DataError(f"mnist:{folder}: no such folder")
    arrays: dict[str, list[int]] = {}
    classes = None
    for split, prefix in (("train", ""), ("val", "val ")):
        xs = sources.find_file(folder, sources.MNIST_NAMES[split + "_x"])
        ys = sources.find_file(folder, sources.MNIST_NAMES[split + "_y"])
        if xs is None or ys is None:
            if split == "train":
                raise DataError(f"mnist:{folder}: train-images-idx3-ubyte / train-labels-idx1-ubyte (or .gz) "
                                "missing")
            continue
        dims, _ = _peek_idx(xs, labels=False)
        ldims, found = _peek_idx(ys, labels=True)
        arrays[prefix + "x"] = [dims[0], 1, *dims[1:]]
        arrays[prefix + "y"] = ldims
        classes = max(classes or 0, found or 0) or None
    return {"arrays": arrays, "classes": classes, "samples": arrays["x"][0]}


def _peek_cifar(folder: str) -> dict[str, Any]:
    if os.path.isdir(os.path.join(folder, "cifar-10-batches-bin")):
        folder = os.path.join(folder, "cifar-10-batches-bin")
    if not os.path.isdir(folder):
        raise DataError(f"cifar10:{folder}: no such folder")
    counts: dict[str, int] = {"": 0, "val ": 0}
    for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            continue
        size = os.path.getsize(path)
        if not size or size % sources.CIFAR_RECORD:
            raise DataError(f"{path}: truncated or corrupt: {size} bytes is not a whole number of "
                            f"{sources.CIFAR_RECORD}-byte records")
        counts["val " if name.startswith("test") else ""] += size // sources.CIFAR_RECORD
    if not counts[""]:
        raise DataError(f"cifar10:{folder}: no data_batch_1.bin .. data_batch_5.bin")
    arrays = {f"{p}{a}": ([n, 3, 32, 32] if a == "x" else [n]) for p, n in counts.items() if n for a in "xy"}
    return {"arrays": arrays, "classes": 10, "samples": counts[""]}
