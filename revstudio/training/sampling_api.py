"""``rs.sample``: ``revstudio sample`` in this process, the samples as tensors.

Not a second sampler: the refusals and the draws are :mod:`revstudio.training.sampling`'s; a refusal is
raised in the command's words (``FileNotFoundError`` for a run or file that is not there, ``ValueError``
for the rest), and the same run, count, temperature and seed give the samples the command writes.
"""
from __future__ import annotations

import os
from typing import Any


def sample(run: Any, n: int = 16, *, temperature: float = 1.0, seed: int = 0,
           checkpoint: str | os.PathLike[str] | None = None, project: Any = None, device: str | None = None,
           batch_size: int | None = None, out: str | os.PathLike[str] | None = None) -> Any:
    """``n`` samples of a trained flow: z ~ N(0, temperature^2) of its Output's shape run through the
    inverse, seeded by ``seed``. ``run`` is a run folder, what ``rs.train`` returned, or a checkpoint /
    state_dict file (a state_dict with ``project=``, a file or a Graph). Returns the CPU tensor of the
    Input's shape, N first (a dict by Input node id where there are several); ``out="samples.npz"`` also
    writes them as ``revstudio sample -o`` does."""
    from .evaluation import EvalError, resolve
    from .sampling import check_settings, draw, write_npz

    target = os.fspath(getattr(run, "run_dir", None) or run)
    graph = project if project is not None and not isinstance(project, (str, os.PathLike)) else None
    given = os.fspath(project) if graph is None and project is not None else None
    try:
        check_settings(n, temperature, seed)
        source = resolve(target, None if checkpoint is None else os.fspath(checkpoint), given)
        if graph is not None:
            source.graph, source.project = graph, f"{getattr(graph, 'name', 'graph') or 'graph'}.revs"
        samples = draw(source, count=n, temperature=temperature, seed=seed, device=device, batch_size=batch_size)
        if out is not None:
            write_npz(samples, os.fspath(out))
    except EvalError as exc:
        missing = not os.path.exists(target) or "no such file" in str(exc)
        raise (FileNotFoundError if missing else ValueError)(str(exc)) from None
    for note in samples.notes:
        import warnings

        warnings.warn(note, UserWarning, stacklevel=2)
    inputs = samples.inputs
    return next(iter(inputs.values())) if len(inputs) == 1 else dict(inputs)


__all__ = ["sample"]
