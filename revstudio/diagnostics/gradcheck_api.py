"""``rs.gradcheck``: ``revstudio gradcheck`` from Python, returning the report the CLI prints.

The CLI's rules, not a second reading of them: the batch is the first samples of the project's
first training step (:func:`revstudio.training.first_batch.first_batch`), of the run's settings
when the weights are a run's; the weights are read by :func:`revstudio.training.checkpoint.weights_of`
(a run folder, a checkpoint or a state_dict file), and the comparison is
:func:`revstudio.diagnostics.gradcheck.compare_modes`.
"""
from __future__ import annotations

import argparse
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from revstudio.core.graph import Graph
from revstudio.core.project_format import SNAPSHOT

from .grad_report import GradReport
from .gradcheck import StateMismatch, compare_modes, input_nodes


def gradcheck(graph: Graph | str | os.PathLike[str], batch: int = 2, inputs: Any = None,
              checkpoint: str | os.PathLike[str] | Mapping[str, Any] | None = None, *, dtype: str = "float64",
              mode: str = "reversible", seed: int | None = None, tolerance: float | None = None) -> GradReport:
    """Compare the gradients of ``mode`` ("reversible" or "checkpoint") with standard mode's on one
    step, as ``revstudio gradcheck`` does; returns the :class:`GradReport` it prints (``ok``,
    ``max_error``, ``failures()``, ``inversion``, ``to_json()``).

    ``graph``: an ``rs.Graph`` or a project file's path (its folder is where relative data paths
    start; for a Graph, the current folder). ``batch``: samples checked (default 2).
    ``inputs``: None (default) the first ``batch`` samples of the project's training data as
    ``train`` preprocesses them, or a standard-normal batch with a warning where they cannot be
    read; ``"data"`` the same but a ValueError where they cannot; ``"random"`` a standard-normal
    batch; or tensors, one per Input node in node order (a list) or by node id (a dict).
    ``checkpoint``: the weights checked instead of fresh ones (drawn from ``seed``): a run folder
    (its ``checkpoints/last.pt``; the batch then comes from the run's settings), a checkpoint or a
    state_dict file, or a state dict itself (``model.state_dict()`` of ``rs.compile``'s model).
    ``dtype`` "float64" (tolerance 1e-10) or "float32" (1e-4); ``tolerance`` overrides it.
    ``seed`` (default 0): the fresh weights, the loss projection and the random streams; without a
    checkpoint also the data order, as ``train --seed`` (left out: the project's ``training.seed``).

    Raises FileNotFoundError for a path that is not there, ValueError for weights that cannot be
    read or data that cannot (``inputs="data"``), :class:`StateMismatch` naming the keys of weights
    that do not fit the graph, and the compiler's ``CompileError`` naming the node of a graph with errors.
    """
    from revstudio.core.scripting import expect_graph

    from .check import full_check

    path = None
    if isinstance(graph, (str, os.PathLike)):
        from revstudio.core.project import load

        path = os.fspath(graph)
        graph = load(path)
    expect_graph(graph, "rs.gradcheck")
    batch, seed, tolerance = _numbers(batch, seed, tolerance)
    if isinstance(inputs, str) and inputs not in ("data", "random") or \
            not (inputs is None or isinstance(inputs, (str, Sequence, Mapping))):
        raise ValueError(f"rs.gradcheck: inputs={inputs!r}; give None, 'data', 'random' or one tensor per Input node")
    report = full_check(graph, batch=batch)
    state, training, base = _weights(checkpoint)
    overrides = {"seed": seed} if seed is not None and checkpoint is None else None
    tensors = _inputs(graph, report, path, batch, inputs, training, base, overrides)
    try:
        return compare_modes(graph, batch=batch, dtype=dtype, seed=seed or 0, mode=mode, tolerance=tolerance,
                             state=state, inputs=tensors)
    except StateMismatch as exc:
        from revstudio.training.init_words import OWN_WEIGHTS

        where = "the state dict given" if isinstance(checkpoint, Mapping) else os.fspath(checkpoint or "")
        raise StateMismatch(f"checkpoint {where}: {exc}; {OWN_WEIGHTS}") from None


def _numbers(batch: Any, seed: Any, tolerance: Any) -> tuple[int, int | None, float | None]:
    """``batch``, ``seed`` and ``tolerance`` read by the command's own parsers of its flags (the same
    limits and words), a ValueError naming the keyword: seed=1.5 was torch's RuntimeError, seed=-1 and
    tolerance='x' or -1 were taken, batch=10**9 tried to allocate its terabytes."""
    from revstudio.clicmd import _runargs as flags

    from .memory_api import _flag_value

    batch = _flag_value("batch", batch, flags.positive_int, "rs.gradcheck")
    if seed is not None:
        seed = _flag_value("seed", seed, flags.seed, "rs.gradcheck")
    if tolerance is not None:
        try:
            if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)):
                raise argparse.ArgumentTypeError(f"{tolerance!r} is not a number of 0 or more, e.g. 1e-8")
            tolerance = flags.tolerance(str(tolerance))
        except argparse.ArgumentTypeError as exc:
            raise ValueError(f"rs.gradcheck: tolerance={tolerance!r}: {exc}") from None
    return batch, seed, tolerance


def _weights(checkpoint: Any) -> tuple[Mapping[str, Any] | None, dict[str, Any] | None, str | None]:
    """(the weights, the run's training section or None, the run's folder or None)."""
    if checkpoint is None:
        return None, None, None
    if isinstance(checkpoint, Mapping):
        return checkpoint, None, None
    from revstudio.training.checkpoint import CheckpointError, run_training, weights_of

    given = os.fspath(checkpoint)
    file = os.path.join(given, "checkpoints", "last.pt") if os.path.isdir(given) else given
    if not os.path.isfile(file):
        what = "has no checkpoints/last.pt (the run saved none yet?)" if os.path.isdir(given) else \
            "no such file or folder"
        raise FileNotFoundError(f"rs.gradcheck: checkpoint {given}: {what}; give a run folder, a checkpoint "
                                "or a state_dict file (torch.save(model.state_dict(), path))")
    try:
        state, data = weights_of(file)
    except CheckpointError as exc:
        raise ValueError(f"rs.gradcheck: checkpoint {exc}") from None
    folder = os.path.dirname(os.path.abspath(file))
    run = os.path.dirname(folder) if os.path.basename(folder) == "checkpoints" else folder
    return state, run_training(data) if data is not None else None, run


def _inputs(graph: Graph, report: Any, path: str | None, batch: int, inputs: Any, training: dict[str, Any] | None,
            base: str | None, overrides: dict[str, Any] | None) -> list[Any] | None:
    """The tensors checked (None: a standard-normal batch)."""
    ids = [nid for nid, _ in input_nodes(graph)]
    if isinstance(inputs, Mapping):
        missing = [nid for nid in ids if nid not in inputs]
        if missing:
            raise ValueError(f"rs.gradcheck: inputs has no tensor for Input node(s) {', '.join(missing)}; "
                             f"give one per Input node: {', '.join(ids)}")
        return [inputs[nid] for nid in ids]
    if inputs is not None and not isinstance(inputs, str):
        if len(inputs) != len(ids):
            raise ValueError(f"rs.gradcheck: {len(inputs)} input tensor(s) for {len(ids)} Input node(s) "
                             f"({', '.join(ids)}); give one per Input node, in this order")
        return list(inputs)
    if inputs == "random":
        return None
    from revstudio.training.config import ConfigError
    from revstudio.training.data import DataError
    from revstudio.training.first_batch import first_batch

    whose = "the project's" if training is None else "the run's"
    try:
        return list(first_batch(graph, report, path or os.path.join(os.getcwd(), SNAPSHOT), batch,
                                training, base if training is not None else None, overrides).inputs)
    except (ConfigError, DataError) as exc:
        if inputs == "data":
            raise ValueError(f"rs.gradcheck: inputs='data': {whose} training data cannot be read: {exc}") from None
        warnings.warn(f"rs.gradcheck: {whose} training data cannot be read ({exc}); checking a standard-normal "
                      "batch instead (inputs='random' asks for one without this warning)", stacklevel=3)
        return None
