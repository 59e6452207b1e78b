"""Samples from a trained flow: Gaussian noise run through its inverse (``revstudio sample``, ``rs.sample``).

A flow maps data x to z under a standard normal prior, so a sample is x = f^-1(z) with z drawn from
N(0, T^2 I) in the Output's shape: T, the temperature, below 1 trades variety for typical samples (Glow).
The weights and the project come as ``revstudio evaluate`` finds them (``evaluation.resolve``); the noise
from a ``torch.Generator`` seeded by ``seed`` on the CPU, so a seed gives the same samples on any device.
A ``.npz`` is written whole or not at all, its arrays named as training data are (``x``, or one per Input
node id), so ``revstudio evaluate RUN --data samples.npz`` scores them.
"""
from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass, field
from typing import Any

from .evaluation import EvalError, Source

__all__ = ["Samples", "draw", "write_npz"]


@dataclass
class Samples:
    """What :func:`draw` made: ``inputs`` (Input node id -> CPU tensor, N first) and how."""

    inputs: dict[str, Any]
    count: int
    temperature: float
    seed: int
    output: str                       # the Output node whose z was drawn
    z_shape: tuple[int, ...]          # its shape per sample
    source: Source
    device: str
    written: str | None = None        # the .npz written, where one was
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"checkpoint": self.source.weights, "project": self.source.project, "run_dir": self.source.run_dir,
                "samples": self.count, "temperature": self.temperature, "seed": self.seed, "output": self.output,
                "z_shape": list(self.z_shape), "device": self.device, "written": self.written,
                "arrays": {("x" if len(self.inputs) == 1 else k): list(v.shape) for k, v in self.inputs.items()}}


def check_settings(count: Any, temperature: Any, seed: Any) -> None:
    """EvalError for a count, temperature or seed no sampling can use, naming it and what to give."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise EvalError(f"count {count!r}: give a whole number of samples, 1 or more (e.g. 16)")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) \
            or not math.isfinite(temperature) or temperature <= 0:
        raise EvalError(f"temperature {temperature!r}: give a number above 0 (1 draws z from the prior itself; "
                        "0.7 gives more typical samples)")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 63:
        raise EvalError(f"seed {seed!r}: give a whole number, 0 or more")


def draw(source: Source, *, count: int, temperature: float = 1.0, seed: int = 0, device: str | None = None,
         batch_size: int | None = None) -> Samples:
    """``count`` samples of ``source``'s flow (see the module docstring); EvalError where it is no flow."""
    import torch

    from revstudio.clicmd._runargs import compile_error
    from revstudio.compiler.first_batch import UninitializedActNorm, pending_words
    from revstudio.diagnostics.estimate import input_dtype

    from .evaluation import _device_missing, _weights, project_of, with_weights
    from .parts import TrainError, resolve_device
    from .task import DataError, infer_task, input_nodes

    check_settings(count, temperature, seed)
    weights, _saved = _weights(source)
    graph, report, cfg = project_of(source)
    try:
        task = infer_task(graph, report, "flow")
    except DataError as exc:
        raise EvalError(f"{source.project}: cannot sample: {exc}; sampling runs a flow's inverse on Gaussian "
                        "noise") from None
    notes = []
    wanted = device or cfg.device
    moved = _device_missing(wanted) if device is None else None
    if moved:
        notes.append(f"{moved}; sampled on this machine's device instead (--device picks another)")
        wanted = "auto"
    try:
        where = resolve_device(wanted)
        model = with_weights(graph, report, source, weights, "sample", mode="standard", device=where)
    except (EvalError, TrainError):  # (weights that do not fit: start_from's words)
        raise
    except Exception as exc:
        err = compile_error(exc)
        if err is None:
            raise
        raise EvalError(str(err), err.code) from None
    dtype = torch.float64 if input_dtype(graph) == "float64" else torch.float32
    z_shape = tuple(int(s) for s in task.output_shape)
    generator = torch.Generator().manual_seed(seed)
    z = torch.randn((count, *z_shape), generator=generator, dtype=dtype) * temperature
    names = input_nodes(graph)
    parts: dict[str, list[Any]] = {name: [] for name in names}
    step = batch_size or cfg.batch_size
    unseen = pending_words(model)
    if unseen is not None:  # (said once here, as a note, not as the model's own warning)
        notes.append(f"the ActNorm layer(s) {unseen} of these weights never saw a batch (saved before training's "
                     "first step?), so they act as the identity and the samples are not a trained flow's: sample "
                     "a checkpoint written after training began")
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", UninitializedActNorm)
        for start in range(0, count, step):
            xs = model.inverse(z[start:start + step].to(where))
            for name, x in zip(names, xs if isinstance(xs, tuple) else (xs,)):
                parts[name].append(x.cpu())
    inputs = {name: torch.cat(chunks) for name, chunks in parts.items()}
    bad = [name for name, x in inputs.items() if not bool(torch.isfinite(x).all())]
    if bad:
        notes.append(f"the inverse gave non-finite values for {', '.join(bad)}: weights gone unstable, or a "
                     "temperature too high for them")
    return Samples(inputs, count, float(temperature), seed, task.output_id, z_shape, source, str(where), notes=notes)


def write_npz(samples: Samples, path: str) -> str:
    """Write ``samples`` to ``path`` (a ``.npz``) whole, through a temporary file beside it; EvalError naming a
    path that cannot be written."""
    import numpy as np

    if not path.endswith(".npz"):
        raise EvalError(f"-o {path}: give a file name ending in .npz (numpy.savez), e.g. samples.npz")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise EvalError(f"-o {path}: the folder {folder} does not exist; create it first or write elsewhere")
    arrays = {("x" if len(samples.inputs) == 1 else k): v.numpy() for k, v in samples.inputs.items()}
    temp = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.tmp.npz")
    try:
        with open(temp, "wb") as handle:
            np.savez(handle, **arrays)
        os.replace(temp, path)
    except OSError as exc:
        if os.path.exists(temp):
            os.remove(temp)
        raise EvalError(f"-o {path}: cannot write it ({exc.strerror or exc})") from None
    samples.written = path
    return path
