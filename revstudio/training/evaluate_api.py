"""``rs.evaluate``: ``revstudio evaluate`` in this process, its result as the dict ``evaluate --json`` prints.

Not a second evaluation: the refusals and the figures are :mod:`revstudio.training.evaluation`'s; a
refusal is raised in the command's words (``FileNotFoundError`` for a run or file that is not there,
``ValueError`` for the rest).
"""
from __future__ import annotations

import os
from typing import Any

from revstudio.core.notebook_repr import NotebookRepr


class Evaluation(dict[str, Any], NotebookRepr):
    """The figures, as ``revstudio evaluate --json`` gives them (``ev["accuracy"]``, ``ev["confusion"]``);
    ``to_json()`` is that object, ``repr`` the command's text."""

    def to_json(self) -> dict[str, Any]:
        return dict(self)

    def __repr__(self) -> str:
        from revstudio.clicmd.evaluate import text_lines

        return "\n".join(text_lines(self))


def evaluate(run: Any, data: str | os.PathLike[str] | None = None, *, checkpoint: str | os.PathLike[str] | None = None,
             project: Any = None, batch_size: int | None = None, device: str | None = None,
             mode: str | None = None, worst: int = 5, save: bool = True) -> Evaluation:
    """Score a trained run: ``run`` is a run folder, what ``rs.train`` returned, or a checkpoint /
    state_dict file (a state_dict with ``project=``, a file or a Graph). ``data``: test data (a spec
    as ``revstudio train --data`` takes; default the run's own validation split). ``checkpoint``,
    ``batch_size``, ``device``, ``mode`` and ``worst`` are the command's flags; ``save=False`` is
    ``--no-save``."""
    from .evaluation import EvalError, evaluate_source, resolve

    target = os.fspath(getattr(run, "run_dir", None) or run)
    graph = project if project is not None and not isinstance(project, (str, os.PathLike)) else None
    given = os.fspath(project) if graph is None and project is not None else None
    if worst < 0 or isinstance(worst, bool) or not isinstance(worst, int):
        raise ValueError(f"worst={worst!r}: give a whole number of samples, 0 or more")
    try:
        source = resolve(target, None if checkpoint is None else os.fspath(checkpoint), given)
        if graph is not None:
            source.graph, source.project = graph, f"{getattr(graph, 'name', 'graph') or 'graph'}.revs"
        return Evaluation(evaluate_source(source, data=None if data is None else os.fspath(data),
                                          batch_size=batch_size, device=device, mode=mode, worst=worst, save=save))
    except EvalError as exc:
        missing = not os.path.exists(target) or "no such file" in str(exc)
        raise (FileNotFoundError if missing else ValueError)(str(exc)) from None


__all__ = ["Evaluation", "evaluate"]
