"""The inputs of a run's first step, outside the run: what ``revstudio gradcheck`` checks by default.

A gradient check on a standard-normal batch says nothing about inputs of another scale: images in
[0, 1] or 0..255 after dequantisation, sequences of large values. :func:`first_batch` reads the
project's training data as ``revstudio train`` does and returns the samples its first step
trains on (the same epoch order, from :func:`epoch_order`, and the same dequantisation noise),
the first ``batch`` of them (a ``batch`` above the run's takes the samples of its next steps).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch

from .parts import dequantize, noise_seed


def epoch_order(n: int, seed: int, epoch: int) -> torch.Tensor:
    """The order in which epoch ``epoch`` of a run with ``seed`` visits its ``n`` training samples."""
    gen = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
    return torch.randperm(n, generator=gen)


@dataclass
class FirstBatch:
    inputs: list[torch.Tensor]   # one per Input node, in node order
    describe: str                # one line for the output: which data, how many samples
    data: str                    # the data spec as the project names it (or --data gives it)
    summary: str = ""            # train's one-line ``data:`` (its ``started`` row's ``data``)
    inputs_note: str | None = None  # train's ``note: inputs: ...`` (what became of uint8 inputs), or None


def first_batch(graph: Any, report: Any, path: str, batch: int, training: dict[str, Any] | None = None,
                base_dir: str | None = None, overrides: dict[str, Any] | None = None) -> FirstBatch:
    """The first ``batch`` samples of the first training step of project ``path`` (its
    ``training`` section: data, seed, task), or of the run whose settings are ``training`` (its
    relative data paths read against ``base_dir``), with ``overrides`` of those settings applied as
    ``train``'s flags apply them (``{"data": "d.npz", "scale_uint8": False}``). Raises ConfigError or
    DataError when the data cannot be read."""
    from revstudio.diagnostics.gradcheck import input_nodes

    from .config import TrainConfig
    from .data import load_data
    from .task import infer_task

    cfg = TrainConfig.from_section(graph.training if training is None else training)
    cfg = cfg.replace(**overrides) if overrides else cfg
    task = infer_task(graph, report, cfg.task)
    base = base_dir if base_dir is not None else os.path.dirname(os.path.abspath(path))
    data = load_data(cfg.data, graph, report, task=task, val_spec=cfg.val_data, val_fraction=cfg.val_fraction,
                     seed=cfg.seed, base_dir=base, scale_uint8=cfg.scale_uint8)
    n = len(data.train)
    take = min(batch, n)  # (beyond the run's batch size: the samples of its next steps, in its order)
    idx = epoch_order(n, cfg.seed, 0)[:take]
    inputs, _ = data.train.batch(idx)
    notes = []
    if data.levels is not None:  # a flow's 8-bit images: dequantised as the run's first step does
        # (one draw for the whole batch, as the loop draws it: its first rows are these samples')
        inputs = {k: dequantize(v, data.levels, noise_seed(cfg.seed, 0, 0) + i) for i, (k, v) in enumerate(inputs.items())}
        notes.append(f"dequantised to {data.levels} levels")
    if take < batch:
        notes.append(f"{take} of the {batch} asked for: the training data holds {n}")
    extra = f"; {', '.join(notes)}" if notes else ""
    source = "the synthetic data" if cfg.data == "synthetic" else cfg.data
    if take <= cfg.batch_size:
        describe = f"the first training batch of {source} ({take} sample{'s' * (take != 1)}{extra})"
    else:
        describe = f"the first {take} training samples of {source} in the run's order (its batch size is " \
                   f"{cfg.batch_size}{extra})"
    return FirstBatch([inputs[nid] for nid, _ in input_nodes(graph)], describe, cfg.data, data.describe(),
                      data.inputs_note())
