"""Per-position class labels (per step, per pixel) as a run reads them: an ``.npz`` of ``x``, ``y`` and
any ``lengths`` / ``mask``, loaded for a graph with the task ``train`` would take (docs/data.md)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from revstudio.core.graph import Graph
from revstudio.diagnostics.check import full_check
from revstudio.training.data import load_data
from revstudio.training.task import infer_task


def load_labelled(tmp_path: Path, name: str, graph: Graph, x: np.ndarray, y: np.ndarray, requested: str,
                  batch: int, **arrays: np.ndarray) -> Any:
    """``tmp_path/name`` holding ``x``, ``y`` and ``arrays``, loaded for ``graph`` (task ``requested``,
    checked at ``batch``) with no validation split: every sample is a training one."""
    np.savez(tmp_path / name, x=x, y=y, **arrays)
    report = full_check(graph, batch=batch)
    return load_data(name, graph, report, task=infer_task(graph, report, requested), base_dir=str(tmp_path),
                     val_fraction=0.0)
