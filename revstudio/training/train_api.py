"""``rs.train``: ``revstudio train`` run in this process (a notebook's), handing back the run.

Not a second training loop: the refusals are the command's (:func:`revstudio.clicmd.train.refuse`),
the run its session (:func:`revstudio.training.session.run_session`: the same run folder, rows,
checkpoints and clean stop on Ctrl+C); the rows are collected as they happen, a step callback
sees each step row, and a refusal is raised with the words the command prints.
"""
from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from revstudio.core.graph import Graph
from revstudio.core.notebook_repr import NotebookRepr

from .loop import Callback
from .stopping import StopFlag


@dataclass(repr=False)
class Run(NotebookRepr):
    """A run ``rs.train`` made: its folder, how it ended, every row (``metrics.jsonl``'s, as dicts)
    and the trained model (``rs.compile``'s kind of module, on the run's device)."""

    run_dir: str | None
    status: str                      # finished | stopped (a failed run is raised: TrainFailed)
    step: int
    rows: list[dict[str, Any]] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    model: Any = None

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        """The rows of one kind: "step", "val", "gradcheck" or "event"."""
        return [row for row in self.rows if row.get("kind") == kind]

    @property
    def steps(self) -> list[dict[str, Any]]:
        """The step rows (``pandas.DataFrame(run.steps)``: the loss curve)."""
        return self.of_kind("step")

    def __repr__(self) -> str:
        figures = ", ".join(f"{k} {v:.4g}" for k, v in self.metrics.items() if isinstance(v, (int, float)))
        return (f"<Run {self.status} at step {self.step}{': ' + figures if figures else ''}; "
                f"{len(self.rows)} rows in {self.run_dir}>")


class TrainFailed(RuntimeError):
    """A run that started and then failed (a non-finite loss, out of memory, a full disk): the
    message is the one ``revstudio train`` prints, ``run`` what it did until then."""

    def __init__(self, message: str, run: Run) -> None:
        super().__init__(message)
        self.run = run


class _Collect(Callback):
    """Keeps every row; hands each step row to the user's callback, whose error stops the run
    cleanly (a checkpoint, a ``stopped`` row) and is raised again once the run folder is whole."""

    def __init__(self, on_step: Callable[[dict[str, Any]], Any] | None, stop: StopFlag) -> None:
        self.rows: list[dict[str, Any]] = []
        self.on_step = on_step
        self.stop = stop
        self.error: BaseException | None = None

    def on_step_end(self, row: dict[str, Any]) -> None:
        if self.on_step is None or self.error is not None:
            return
        try:
            self.on_step(dict(row))
        except Exception as exc:
            self.error = exc
            self.stop.set = True  # (status.json said "stopped by a signal")
            self.stop.reason = (f"stopped: rs.train's on_step raised {type(exc).__name__}: {exc}; "
                                "rs.train(resume=...) or --resume continues it")

    def on_row(self, row: dict[str, Any]) -> None:
        self.rows.append(dict(row))


def train(graph: Graph | str | os.PathLike[str] | None = None, data: str | os.PathLike[str] | None = None,
          steps: int | None = None, *,
          out: str | os.PathLike[str] | None = None, resume: str | os.PathLike[str] | None = None,
          init: str | os.PathLike[str] | None = None, on_step: Callable[[dict[str, Any]], Any] | None = None,
          progress: bool = True, **settings: Any) -> Run:
    """Train ``graph`` as ``revstudio train`` does, in this process; returns the :class:`Run`.

    ``graph``: an ``rs.Graph`` (its runs go to ``./runs/<name>-<time>``, relative data paths start
    in the current folder) or a project file's path (its ``runs/``, its folder), or None with
    ``resume``. ``data`` and ``steps`` and every other keyword (``lr=``, ``batch_size=``, ``mode=``,
    ``seed=``, ``epochs=``, ``memory_budget=``...: the project's ``training`` keys, docs/cli.md)
    override the project's settings for this run, as the command's flags do; ``out``, ``resume``
    and ``init`` are ``--out``, ``--resume`` and ``--init``. ``on_step(row)`` is called with each
    step row (``step``, ``loss``, ``lr``, ...: every ``log_every`` steps and at the last); an error
    it raises stops the run cleanly and is raised again. ``progress``: print the command's progress lines.

    Ctrl+C (a notebook's interrupt) stops after the step in progress with a checkpoint: the Run
    comes back with status "stopped"; a second one stops at once (KeyboardInterrupt). Raises
    FileNotFoundError for a project that is not there, ValueError (the command's message: the key
    and the value, the data, the graph's errors) for a run refused before its first step (``nproc=K`` above 1
    too: several processes are ``revstudio train --nproc K``'s, the message gives that command), and
    :class:`TrainFailed` for one that failed after it started.
    """
    from revstudio.cli import CliError
    from revstudio.clicmd.train import refuse
    from revstudio.core.project_write import moved_to
    from revstudio.core.scripting import expect_graph, stand_in_path

    from .session import Outcome, Request, run_session

    _refuse_processes(graph, settings, data, steps)
    in_memory = graph if isinstance(graph, Graph) else None
    file: str | None = None
    if in_memory is not None:
        file = stand_in_path(in_memory)
        in_memory = moved_to(in_memory, file)  # (a loaded graph's relative data paths re-pointed for here)
    elif isinstance(graph, (str, os.PathLike)):
        file = os.fspath(graph)
        if not os.path.exists(file):
            from revstudio.core.project import cannot_read

            raise FileNotFoundError(cannot_read(file))
    elif graph is not None:
        expect_graph(graph, "rs.train")  # (raises: what to pass instead)
    if on_step is not None and not callable(on_step):  # (it failed at the first step row, the run begun)
        raise TypeError(f"rs.train: on_step must be a function of a row, got {type(on_step).__name__}")
    for keyword, value in (("out", out), ("resume", resume), ("init", init)):
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise TypeError(f"rs.train: {keyword}={value!r}: give a path as text or a pathlib.Path")
    overrides = {**settings, **{k: v for k, v in (("data", data), ("steps", steps)) if v is not None}}
    if isinstance(overrides.get("data"), os.PathLike):
        overrides["data"] = os.fspath(overrides["data"])
    paths = {k: None if v is None else os.fspath(v) for k, v in (("out", out), ("resume", resume), ("init", init))}
    args = argparse.Namespace(file=file, data=overrides.get("data"), val_data=overrides.get("val_data"), **paths)
    try:
        refuse(args, in_memory=in_memory is not None)
    except CliError as exc:
        raise ValueError(str(exc)) from None
    stop = StopFlag()
    rows = _Collect(on_step, stop)
    outcome = Outcome()
    code = run_session(Request(file=file, overrides=overrides, out=paths["out"], resume=paths["resume"],
                               init=paths["init"], graph=in_memory, callbacks=[rows],
                               stop=stop, show=progress), outcome)
    result = outcome.result
    run = Run(outcome.run_dir, result.status if result is not None else "stopped",
              result.step if result is not None else 0, rows.rows,
              dict(result.metrics) if result is not None else {}, result.model if result is not None else None)
    if rows.error is not None:
        rows.error.add_note(f"rs.train: on_step raised this; the run stopped cleanly at step {run.step} "
                            f"({run.run_dir}; rs.train(resume=...) continues it)")
        raise rows.error
    if code != 0:
        message = outcome.message or (result.message if result is not None else None) or f"exit code {code}"
        if any(row.get("event") == "started" for row in rows.rows):
            run.status = result.status if result is not None else "failed"
            raise TrainFailed(message, run)
        raise ValueError(message)
    return run


# the command's flags that start processes (``--nproc``, multi-node): rs.train runs in this one
_PROCESSES = ("nproc", "nnodes", "node_rank", "master_addr", "master_port", "rdzv_endpoint", "rdzv_id")


def _refuse_processes(graph: Any, settings: dict[str, Any], data: Any, steps: int | None) -> None:
    """A ValueError for ``nproc=K`` (K > 1) or a multi-node keyword: ``rs.train`` trains in the notebook's own
    process, and torch's launcher starts ``revstudio train --nproc K``'s workers as programs of their own;
    the message gives the command that runs it and how to read the run back. ``nproc=1`` is this process."""
    given = {k: settings.pop(k) for k in _PROCESSES if k in settings}
    names = ", ".join(given)
    nproc = given.pop("nproc", None)
    if nproc is not None and (isinstance(nproc, bool) or not isinstance(nproc, int) or nproc < 1):
        raise ValueError(f"rs.train: nproc={nproc!r} is not a count of processes; leave it out (one process)")
    others = {k: v for k, v in given.items() if v is not None}
    if (nproc or 1) == 1 and not others:
        return
    what = ", ".join([f"nproc={nproc}"] * (nproc not in (None, 1)) + [f"{k}={v!r}" for k, v in others.items()])
    file = os.fspath(graph) if isinstance(graph, (str, os.PathLike)) else "net.revs"
    save = "" if isinstance(graph, (str, os.PathLike)) else f"rs.save(g, {file!r}), then "
    run = ([] if data is None else [f"--data {os.fspath(data)}"]) + ([] if steps is None else [f"--steps {steps}"])
    flags = " ".join(run + [f"--nproc {nproc}"] * (nproc not in (None, 1))
                     + [f"--{k.replace('_', '-')} {v}" for k, v in others.items()])
    raise ValueError(f"rs.train: {what} asks for several processes, and rs.train trains in this one (torch's "
                     f"launcher starts each worker as a program of its own); {save}run `revstudio train {file} "
                     f"{flags}` (in a notebook: `!revstudio train {file} {flags}`, or subprocess.run; every other setting "
                     f"as its flag, docs/cli.md) and read the run back with rs.runs(...) and its metrics.jsonl; or leave {names} "
                     f"out to train in this process")


__all__ = ["Run", "TrainFailed", "train"]
